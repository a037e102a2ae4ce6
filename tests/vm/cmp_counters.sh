# Both drivers show the same counters: the `rdma statistic` output and the
# link_downed count after one netdev down, recorded by t_counters.sh in this
# boot, are identical.
c=$RXE_LOGDIR/counters-c.txt r=$RXE_LOGDIR/counters-rust.txt
[ -s "$c" ] && [ -s "$r" ] || { echo "missing counters output"; exit 1; }
if diff -u "$c" "$r"; then
    echo "ok: identical counters ($(head -c 80 "$r")...)"
else
    echo "FAIL: counters differ"
    exit 1
fi
