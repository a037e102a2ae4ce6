# Both drivers report the same attributes: ibv_devinfo -v output of the C
# driver and ours, recorded by t_devinfo.sh in this boot, are identical.
c=$RXE_LOGDIR/devinfo-c.txt r=$RXE_LOGDIR/devinfo-rust.txt
[ -s "$c" ] && [ -s "$r" ] || { echo "missing devinfo output"; exit 1; }
if diff -u "$c" "$r"; then
    echo "ok: identical ibv_devinfo -v ($(wc -l < "$r") lines)"
else
    echo "FAIL: attributes differ"
    exit 1
fi
