# Both drivers report the same attributes: the ibv_devinfo -v output of
# each, recorded by t_devinfo.sh, is identical, capability
# flags included (memory windows, MEM_WINDOW and MEM_WINDOW_TYPE_2B, and
# fast registration, MEM_MGT_EXTENSIONS, both advertise).
. "$(dirname "$0")/lib.sh"

# num_comp_vectors is the guest's CPU count (both drivers report one
# vector per possible CPU), and the C output may come from the cache of a
# run in a guest of another size: that line is left out of the comparison.
c=$RXE_LOGDIR/devinfo-c.txt r=$RXE_LOGDIR/devinfo-rust.txt
[ -s "$c" ] && [ -s "$r" ] || fail "missing devinfo output of a driver"
grep -q 'num_comp_vectors:' "$r" || fail "ours reports no num_comp_vectors"
diff -u <(grep -v 'num_comp_vectors:' "$c") <(grep -v 'num_comp_vectors:' "$r") ||
    fail "ibv_devinfo -v outputs differ"
expect "MEM_WINDOW_TYPE_2B advertised" grep -qx '[[:space:]]*MEM_WINDOW_TYPE_2B' "$r"
note "ok: identical ibv_devinfo -v output ($(wc -l < "$r") lines)"
