# Data integrity over RC (tests/vm/integrity.py: random patterns through
# SEND, SEND with immediate, WRITE, WRITE with immediate and READ, 1 byte to
# 200 KB, 1 to 16 SGEs at odd offsets, inline when small, guard bytes
# around every target, every byte and completion checked; then atomic
# compare-and-swap and fetch-and-add, 48 requests in flight, zero-length
# READs)
# between two devices in two namespaces joined by a veth pair (one process
# opens both: rdma devices are shared across namespaces by default).
#   t_integrity.sh [loop] [ns] [ns-mtu256]   the topologies to run (default: ns; the
#                                suite's time budget; x_integrity.sh runs both)
. "$(dirname "$0")/lib.sh"
topologies=("${@:-ns}")

need_pyverbs
rxe_load || fail "modprobe"
two_namespaces || fail "two-namespace set-up"
py=("$PY" "$(dirname "$0")/integrity.py")
for t in "${topologies[@]}"; do
    start=$SECONDS
    case $t in
        loop) expect "loopback: rxe0 to itself" "${py[@]}" rxe0 "$g0" rxe0 "$g0" ;;
        ns) expect "two namespaces: rxe0 to rxe1" "${py[@]}" rxe0 "$g0" rxe1 "$g1" ;;
        ns-mtu256) expect "two namespaces, path MTU 256" env RXE_MTU=256 "${py[@]}" rxe0 "$g0" rxe1 "$g1" ;;
        *) fail "unknown topology $t" ;;
    esac
    note "$(cat /tmp/expect.out) ($((SECONDS - start)) s)"
done
two_namespaces_down
