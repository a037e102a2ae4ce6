# Both drivers report the same SRQ capacities, ring sizes and limits: the values
# t_srq.py read back in this boot are identical.
c=$RXE_LOGDIR/srq-c.txt r=$RXE_LOGDIR/srq-rust.txt
[ -s "$c" ] && [ -s "$r" ] || { echo "missing query_srq output"; exit 1; }
if diff -u "$c" "$r"; then
    echo "ok: identical SRQ results ($(wc -l < "$r") lines)"
else
    echo "FAIL: SRQ results differ"
    exit 1
fi
