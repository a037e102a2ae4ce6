# Zero-copy transmit (issue 16): a payload of 256 bytes or more that lies
# in one page of a pinned user region (a SEND's or WRITE's, a READ's
# replies) is sent from that page, as the skb's first page fragment, with
# a reference of its own on it, the pad and ICRC in a second fragment;
# the receiver reads the payload where it lies (the skb is not
# linearized). Between two namespaces, over IPv4:
# - ib_write_bw, ib_read_bw and ibv_rc_pingpong 64 KiB (page-aligned
#   buffers, path MTU 1024): every payload packet is lent
#   (rdma_rxe/sent_zero_copy) and received split (rcvd_split), none
#   copied into one piece (rcvd_split_linearized), no ICRC error, and
#   every packet sent is received (the books balance); the examples'
#   buffer checks pass. (Data integrity at every size, offset and SGE
#   layout, where lent and copied payloads mix: t_integrity.)
# - a process exits while its lent pages are on the way (a netem delay
#   holds its WRITE and READ replies, tests/vm/zero_copy_exit.py): the
#   packets keep their pages (KASAN in the test kernel, checked by the
#   suite, reports a receiver reading a freed one), the packets arrive
#   for QPs gone, and the devices still carry traffic after.
# - tx_zero_copy=0: nothing is lent.
#
# The C driver copies every payload: not run.
. "$(dirname "$0")/lib.sh"

if [ "$RXE_DRIVER" = c ]; then
    note "C driver: copies every payload (no zero-copy transmit), not run"
    exit 0
fi
command -v ibv_rc_pingpong >/dev/null || fail "ibverbs-utils missing"
command -v ib_write_bw >/dev/null || fail "perftest missing"
need_pyverbs

dbg() { cat "/sys/kernel/debug/rdma_rxe/$1"; }
port=18700
host=10.0.0.2

# traffic LABEL: the three transfers; sets lent, split, linearized, bad
# (debugfs deltas) and payload (payload packets the transfers carry at
# least: 16 WRITEs and 16 READs of 64 KiB, 8 x 2 SENDs of 64 KiB).
traffic() {
    local label=$1 z0 s0 l0 b0 books
    books=$(rxe_counts)
    z0=$(dbg sent_zero_copy); s0=$(dbg rcvd_split); l0=$(dbg rcvd_split_linearized)
    b0=$(dbg rcvd_drop_bad_icrc)
    peer_pair "$label-write" ib_write_bw -d rxe1 -x "$g1" -p "$port" -F -s 65536 -n 16 -m 1024 -- \
        ib_write_bw -d rxe0 -x "$g0" -p "$port" -F -s 65536 -n 16 -m 1024 "$host"
    peer_pair "$label-read" ib_read_bw -d rxe1 -x "$g1" -p "$port" -F -s 65536 -n 16 -m 1024 -- \
        ib_read_bw -d rxe0 -x "$g0" -p "$port" -F -s 65536 -n 16 -m 1024 "$host"
    peer_pair "$label-pingpong" ibv_rc_pingpong -d rxe1 -g "$g1" -p "$port" -c -s 65536 -m 1024 -n 8 -- \
        ibv_rc_pingpong -d rxe0 -g "$g0" -p "$port" -c -s 65536 -m 1024 -n 8 "$host"
    wait_for 10 rxe_books_balance "$books" ||
        fail "$label: packets lost: before $books, after $(rxe_counts) (rxe0 sent, rcvd, rxe1 sent, rcvd, dropped for no QP)"
    lent=$(( $(dbg sent_zero_copy) - z0 ))
    split=$(( $(dbg rcvd_split) - s0 ))
    linearized=$(( $(dbg rcvd_split_linearized) - l0 ))
    bad=$(( $(dbg rcvd_drop_bad_icrc) - b0 ))
    payload=$(( (16 + 16 + 16) * 64 ))
    note "$label: $lent payload packets lent, $split received split, $linearized linearized, $bad ICRC errors (at least $payload payload packets)"
}

rxe_load || fail "modprobe"
two_namespaces || fail "two-namespace set-up"
traffic lent
[ "$lent" -ge "$payload" ] || fail "only $lent of $payload payload packets lent"
[ "$split" -ge "$payload" ] || fail "only $split of $payload payload packets received split"
[ "$linearized" = 0 ] || fail "$linearized split packets copied into one piece"
[ "$bad" = 0 ] || fail "$bad ICRC errors"

# A process exits with its lent pages queued behind a 1 s delay.
z0=$(dbg sent_zero_copy)
tc qdisc add dev veth-a root netem delay 1000ms || fail "netem"
expect "exit with lent pages on the way" "$PY" "$(dirname "$0")/zero_copy_exit.py" rxe0 "$g0" rxe1 "$g1"
grep -q posted /tmp/expect.out || fail "zero_copy_exit.py did not post"
queued=$(( $(dbg sent_zero_copy) - z0 ))
note "$queued packets lent before the process exited"
[ "$queued" -ge 64 ] || fail "only $queued packets lent before the exit"
sleep 3
tc qdisc del dev veth-a root || fail "netem off"
traffic after-exit
[ "$lent" -ge "$payload" ] && [ "$bad" = 0 ] || fail "after the exit: $lent lent, $bad ICRC errors"

two_namespaces_down
rxe_unload || fail "unload"
modprobe rdma_rxe tx_zero_copy=0 || fail "modprobe tx_zero_copy=0"
two_namespaces || fail "two-namespace set-up"
traffic copied
[ "$lent" = 0 ] && [ "$split" = 0 ] || fail "tx_zero_copy=0: $lent packets lent, $split received split"
two_namespaces_down
rxe_unload || fail "unload"
echo "PASS"
