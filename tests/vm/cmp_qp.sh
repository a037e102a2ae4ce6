# Both drivers report the same QP capacities and attributes: the values
# t_qp.py read back with query_qp in this boot are identical.
c=$RXE_LOGDIR/qp-c.txt r=$RXE_LOGDIR/qp-rust.txt
[ -s "$c" ] && [ -s "$r" ] || { echo "missing query_qp output"; exit 1; }
if diff -u "$c" "$r"; then
    echo "ok: identical query_qp results ($(wc -l < "$r") lines)"
else
    echo "FAIL: QP attributes differ"
    exit 1
fi
