# Both drivers report the same attributes: the ibv_devinfo -v output of
# each, recorded by t_devinfo.sh in this boot, is identical, capability
# flags included (memory windows, MEM_WINDOW and MEM_WINDOW_TYPE_2B, and
# fast registration, MEM_MGT_EXTENSIONS, both advertise).
. "$(dirname "$0")/lib.sh"

c=$RXE_LOGDIR/devinfo-c.txt r=$RXE_LOGDIR/devinfo-rust.txt
[ -s "$c" ] && [ -s "$r" ] || fail "missing devinfo output of a driver"
diff -u "$c" "$r" || fail "ibv_devinfo -v outputs differ"
expect "MEM_WINDOW_TYPE_2B advertised" grep -qx '[[:space:]]*MEM_WINDOW_TYPE_2B' "$r"
note "ok: identical ibv_devinfo -v output ($(wc -l < "$r") lines)"
