# Packet chains (issue 16): a run of an RC QP's packets to one destination
# crosses the IP stack as one UDP GSO skb holding the whole packets, which
# the stack cuts back into them before the receiving UDP socket (here, at
# the peer's UDP input: a veth carries the chain whole). Between two
# namespaces, ibv_rc_pingpong -c moves 64 KiB SENDs (64 packets each at
# path MTU 1024) and ib_read_bw 64 KiB READs (the responder's replies
# chained), over IPv4 and over IPv6 (no IP ID there; the headers differ).
# Each must pass its buffer check, every packet either side counts as
# sent must be counted as received by the other (a receiver counts a
# packet only once its ICRC checked) or, a needless probe's duplicate,
# dropped for a QP gone by then, no sequence error (a chain keeps its
# packets in order; a needless resend of the requester's probe, seen on
# the emulated clock, is a duplicate, not an error), and
# veth-a must carry far fewer skbs than packets (its tx_packets counts
# skbs: at most one per four packets). Then with packet_chains=0 the same
# transfer takes about one skb per packet: the parameter switches it off.
#
# The C driver sends one skb per packet: not run.
. "$(dirname "$0")/lib.sh"

if [ "$RXE_DRIVER" = c ]; then
    note "C driver: sends every packet alone (no packet chains), not run"
    exit 0
fi
command -v ibv_rc_pingpong >/dev/null || fail "ibverbs-utils missing"
command -v ib_read_bw >/dev/null || fail "perftest missing"

veth_tx() { cat /sys/class/net/veth-a/statistics/tx_packets; }
peer_veth_tx() { ip netns exec peer cat /sys/class/net/veth-b/statistics/tx_packets; }
port=18600

# traffic LABEL GID0 GID1: the two transfers; sets sent (rxe0's packets),
# rcvd (rxe1's) and skbs (veth-a's) for them; checks no ICRC or sequence
# error.
traffic() {
    local label=$1 ga=$2 gb=$3
    local s0 r0 v0 e0 q0 books
    books=$(rxe_counts)
    s0=$(hw_counter rxe0 sent_pkts); r0=$(hw_counter rxe1 rcvd_pkts); v0=$(veth_tx)
    rs0=$(hw_counter rxe1 sent_pkts); rr0=$(hw_counter rxe0 rcvd_pkts); rv0=$(peer_veth_tx)
    e0=$(hw_counter rxe1 rcvd_seq_err)
    peer_pair "$label-pingpong" ibv_rc_pingpong -d rxe1 -g "$gb" -p "$port" -c -s 65536 -m 1024 -n 8 -- \
        ibv_rc_pingpong -d rxe0 -g "$ga" -p "$port" -c -s 65536 -m 1024 -n 8 "$host"
    # READ replies: chained by rxe1's responder.
    peer_pair "$label-read" ib_read_bw -d rxe1 -x "$gb" -p "$port" -F -s 65536 -n 16 -m 1024 -- \
        ib_read_bw -d rxe0 -x "$ga" -p "$port" -F -s 65536 -n 16 -m 1024 "$host"
    # Every packet either side sent arrived, cut apart, and was counted,
    # or (a needless probe's duplicate, on the emulated clock) was
    # dropped because its QP was gone by then; the counts settle within
    # seconds.
    wait_for 10 rxe_books_balance "$books" ||
        fail "$label: packets lost: before $books, after $(rxe_counts) (rxe0 sent, rcvd, rxe1 sent, rcvd, dropped for no QP)"
    sent=$(( $(hw_counter rxe0 sent_pkts) - s0 ))
    rcvd=$(( $(hw_counter rxe1 rcvd_pkts) - r0 ))
    skbs=$(( $(veth_tx) - v0 ))
    r_sent=$(( $(hw_counter rxe1 sent_pkts) - rs0 ))
    r_rcvd=$(( $(hw_counter rxe0 rcvd_pkts) - rr0 ))
    r_skbs=$(( $(peer_veth_tx) - rv0 ))
    note "$label: rxe0 sent $sent packets in $skbs skbs, rxe1 received $rcvd;" \
        "rxe1 sent $r_sent in $r_skbs skbs, rxe0 received $r_rcvd"
    [ "$(hw_counter rxe1 rcvd_seq_err)" = "$e0" ] || fail "$label: sequence errors at the receiver"
    [ "$sent" -ge 512 ] && [ "$r_sent" -ge 1536 ] ||
        fail "$label: only $sent and $r_sent packets sent"
}

rxe_load || fail "modprobe"
two_namespaces || fail "two-namespace set-up"
ip addr add 2001:db8::1/64 dev veth-a nodad
ip -n peer addr add 2001:db8::2/64 dev veth-b nodad
wait_for 30 gid_index rxe0 2001:0db8:0000:0000:0000:0000:0000:0001 || fail "no IPv6 GID on rxe0"
wait_for 30 gid_index rxe1 2001:0db8:0000:0000:0000:0000:0000:0002 || fail "no IPv6 GID on rxe1"
g0v6=$(gid_index rxe0 2001:0db8:0000:0000:0000:0000:0000:0001)
g1v6=$(gid_index rxe1 2001:0db8:0000:0000:0000:0000:0000:0002)

# The examples meet over TCP on IPv4 (their servers listen there); the
# GIDs chosen decide the RoCE packets' family.
host=10.0.0.2
for family in ipv4 ipv6; do
    if [ $family = ipv4 ]; then ga=$g0 gb=$g1; else ga=$g0v6 gb=$g1v6; fi
    traffic "$family" "$ga" "$gb"
    [ $((skbs * 4)) -le "$sent" ] || fail "$family: $sent packets took $skbs skbs: not chained"
    [ $((r_skbs * 4)) -le "$r_sent" ] || fail "$family: $r_sent packets took $r_skbs skbs: not chained"
done

# The parameter: one skb per packet (ARP and the TCP exchange of the
# examples add a few).
two_namespaces_down
rxe_unload || fail "unload"
modprobe rdma_rxe packet_chains=0 || fail "modprobe packet_chains=0"
two_namespaces || fail "two-namespace set-up"
traffic unchained "$g0" "$g1"
[ "$skbs" -ge "$sent" ] && [ "$r_skbs" -ge "$r_sent" ] ||
    fail "packet_chains=0: $sent and $r_sent packets took only $skbs and $r_skbs skbs"
two_namespaces_down
rxe_unload || fail "unload"
echo "PASS"
