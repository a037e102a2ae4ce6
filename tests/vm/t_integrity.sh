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
# Our driver lends payloads of 256 bytes and more that lie in one page
# (zero-copy transmit, t_zero_copy): the runs mix lent and copied
# payloads, and must have lent some.
dbg() { cat "/sys/kernel/debug/rdma_rxe/$1" 2>/dev/null || echo 0; }
for t in "${topologies[@]}"; do
    start=$SECONDS
    z0=$(dbg sent_zero_copy) s0=$(dbg rcvd_split) l0=$(dbg rcvd_split_linearized)
    case $t in
        loop) expect "loopback: rxe0 to itself" "${py[@]}" rxe0 "$g0" rxe0 "$g0" ;;
        ns) expect "two namespaces: rxe0 to rxe1" "${py[@]}" rxe0 "$g0" rxe1 "$g1" ;;
        ns-mtu256) expect "two namespaces, path MTU 256" env RXE_MTU=256 "${py[@]}" rxe0 "$g0" rxe1 "$g1" ;;
        *) fail "unknown topology $t" ;;
    esac
    note "$(cat /tmp/expect.out) ($((SECONDS - start)) s)"
    lent=$(( $(dbg sent_zero_copy) - z0 )) split=$(( $(dbg rcvd_split) - s0 ))
    linearized=$(( $(dbg rcvd_split_linearized) - l0 ))
    if [ "$RXE_DRIVER" != c ]; then
        note "$t: $lent payload packets lent, $split received split, $linearized linearized"
        [ "$lent" -gt 0 ] && [ "$split" -gt 0 ] || fail "$t: no payload lent ($lent) or received split ($split)"
        [ "$linearized" = 0 ] || fail "$t: $linearized split packets copied into one piece"
    fi
done
two_namespaces_down
