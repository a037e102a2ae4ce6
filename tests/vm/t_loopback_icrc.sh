# Packets on the driver's loopback path carry no ICRC (issue 16): a
# packet to an address of this host never leaves memory and is received
# by this driver, which is told not to check it, as the stack skips
# checksums on lo. In two namespaces joined by a veth pair (a wire as far
# as the driver knows) every packet carries its ICRC and is checked:
# 64 KiB SENDs (data checked) and READs move with no packet received
# unchecked (rdma_rxe/rcvd_icrc_omitted) and none dropped for a bad ICRC.
# Both ends on rxe0 (the loopback path): RC SENDs of 64 KiB (data
# checked), READs, WRITEs and UD datagrams are received unchecked, every
# one of them (rcvd_icrc_omitted grows by at least rxe0's rcvd_pkts),
# none dropped for a bad ICRC; again, without the UD ping-pong, with a
# fault rule that holds back one packet in 20 (a held packet keeps its
# mark: had it lost it, its zero ICRC would be a bad one). With
# loopback_icrc=1 the same loopback traffic is checked: nothing received
# unchecked, no bad ICRC.
# The C driver computes and checks every ICRC: not run.
. "$(dirname "$0")/lib.sh"

if [ "$RXE_DRIVER" = c ]; then
    note "C driver: computes every ICRC, not run"
    exit 0
fi
command -v ibv_rc_pingpong >/dev/null || fail "ibverbs-utils missing"
command -v ib_read_bw >/dev/null || fail "perftest missing"

debug() { cat "/sys/kernel/debug/rdma_rxe/$1"; }
port=18900

# loopback LABEL: the loopback transfers on rxe0; sets omitted (packets
# received unchecked) and rcvd (rxe0's packets received) meanwhile, and
# fails on a bad ICRC.
loopback() {
    local label=$1 o0 r0 b0
    o0=$(debug rcvd_icrc_omitted); r0=$(hw_counter rxe0 rcvd_pkts); b0=$(debug rcvd_drop_bad_icrc)
    PAIR_LOCAL=1 peer_pair "$label-send" ibv_rc_pingpong -d rxe0 -g "$g0" -p "$port" -c -s 65536 -m 1024 -n 8 -- \
        ibv_rc_pingpong -d rxe0 -g "$g0" -p "$port" -c -s 65536 -m 1024 -n 8 10.0.0.1
    PAIR_LOCAL=1 peer_pair "$label-read" ib_read_bw -d rxe0 -x "$g0" -p "$port" -F -s 65536 -n 16 -m 1024 -- \
        ib_read_bw -d rxe0 -x "$g0" -p "$port" -F -s 65536 -n 16 -m 1024 10.0.0.1
    PAIR_LOCAL=1 peer_pair "$label-write" ib_write_bw -d rxe0 -x "$g0" -p "$port" -F -s 65536 -n 16 -m 1024 -- \
        ib_write_bw -d rxe0 -x "$g0" -p "$port" -F -s 65536 -n 16 -m 1024 10.0.0.1
    # UD has no retransmission: a held datagram a ping-pong waits for
    # would never be released.
    [ "$label" = delayed ] ||
        PAIR_LOCAL=1 peer_pair "$label-ud" ibv_ud_pingpong -d rxe0 -g "$g0" -p "$port" -s 512 -n 16 -- \
            ibv_ud_pingpong -d rxe0 -g "$g0" -p "$port" -s 512 -n 16 10.0.0.1
    omitted=$(( $(debug rcvd_icrc_omitted) - o0 )); rcvd=$(( $(hw_counter rxe0 rcvd_pkts) - r0 ))
    note "$label: rxe0 received $rcvd packets, $omitted of them without an ICRC to check"
    [ "$(debug rcvd_drop_bad_icrc)" = "$b0" ] ||
        fail "$label: $(( $(debug rcvd_drop_bad_icrc) - b0 )) packets dropped for a bad ICRC"
}

rxe_load || fail "modprobe"
two_namespaces || fail "two-namespace set-up"
o0=$(debug rcvd_icrc_omitted); b0=$(debug rcvd_drop_bad_icrc)
peer_pair wire-send ibv_rc_pingpong -d rxe1 -g "$g1" -p "$port" -c -s 65536 -m 1024 -n 8 -- \
    ibv_rc_pingpong -d rxe0 -g "$g0" -p "$port" -c -s 65536 -m 1024 -n 8 10.0.0.2
peer_pair wire-read ib_read_bw -d rxe1 -x "$g1" -p "$port" -F -s 65536 -n 16 -m 1024 -- \
    ib_read_bw -d rxe0 -x "$g0" -p "$port" -F -s 65536 -n 16 -m 1024 10.0.0.2
[ "$(debug rcvd_icrc_omitted)" = "$o0" ] ||
    fail "veth: $(( $(debug rcvd_icrc_omitted) - o0 )) packets received without an ICRC"
[ "$(debug rcvd_drop_bad_icrc)" = "$b0" ] ||
    fail "veth: $(( $(debug rcvd_drop_bad_icrc) - b0 )) packets dropped for a bad ICRC"

# The loopback path: rxe0 at 10.0.0.1 talking to itself.
loopback plain
[ "$rcvd" -gt 0 ] && [ "$omitted" -ge "$rcvd" ] ||
    fail "loopback: $omitted of $rcvd packets received without an ICRC to check"
echo "delay=2 dir=rx prob=0.05 seed=11" > /sys/kernel/debug/rdma_rxe/rxe0/faults ||
    fail "fault rule"
loopback delayed
echo > /sys/kernel/debug/rdma_rxe/rxe0/faults
[ "$rcvd" -gt 0 ] && [ "$omitted" -gt 0 ] ||
    fail "loopback with held packets: $omitted of $rcvd packets received without an ICRC to check"
two_namespaces_down
rxe_unload || fail "unload"

modprobe rdma_rxe loopback_icrc=1 || fail "modprobe loopback_icrc=1"
two_namespaces || fail "two-namespace set-up"
loopback checked
[ "$rcvd" -gt 0 ] && [ "$omitted" = 0 ] ||
    fail "loopback_icrc=1: $omitted of $rcvd packets received without an ICRC to check"
two_namespaces_down
rxe_unload || fail "unload"
echo "PASS"
