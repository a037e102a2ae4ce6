# Receive spreading (issue 16): once an RC QP has received 64 packets
# with payload since it last sent a message of its own, its further
# packets arriving on another CPU than the QP's receive CPU are left to
# the QP's receive work there, and the QP's later datagrams queue behind
# them. Between two namespaces (a veth delivers on the sending CPU, the
# QP's transmit CPU, never its receive CPU), ibv_rc_pingpong -c moves
# 1 MiB SENDs (1024 packets at path MTU 1024, data checked), ib_read_bw
# 64 KiB READs (the replies are spread at the requester) and ib_write_bw
# 64 KiB WRITEs with two QPs. Each must pass its buffer check;
# rdma_rxe/rcvd_spread must count at least the SEND packets after the
# 64th of each message and the READ-reply packets after the first 64,
# and rdma_rxe/rcvd_spread_wakeups at most a quarter as many receive work
# wake-ups;
# every packet either side sent is received and counted by the other
# (or, a needless probe's duplicate, dropped for a QP gone by then), with
# no sequence error (what a datagram processed out of its QP's
# order causes) and no backlog overflow. Ping-pongs of 64 KiB and 4 KiB
# messages, and of 4 KiB READs, are not spread at all (their latency
# would pay the hop). Over the loopback path (both ends on rxe0, whose
# packets are received on the sending QP's transmit CPU) a ping-pong of
# 1 MiB SENDs is spread as between namespaces, in order, and 16 QPs
# stream 64 KiB WRITEs with every packet received, none refused.
# The receiving QPs' reply work, woken for their ACKs while their
# receive work holds the QP lock packet after packet, leaves the ACKs
# to that work, which builds them for the reply work to send
# (rdma_rxe/replies_relayed): at least once in the traffic between
# namespaces; with reply_relay=0 never, a 1 MiB SEND ping-pong passing
# its data check all the same.
# Then with rx_spread=0 nothing is spread.
#
# Needs two vCPUs (one CPU is every QP's receive CPU: nothing to spread).
# The C driver processes each QP's packets in one task: not run.
. "$(dirname "$0")/lib.sh"

if [ "$RXE_DRIVER" = c ]; then
    note "C driver: no receive spreading, not run"
    exit 0
fi
[ "$(nproc)" -ge 2 ] || fail "needs two CPUs, the guest has $(nproc)"
command -v ibv_rc_pingpong >/dev/null || fail "ibverbs-utils missing"
command -v ib_read_bw >/dev/null || fail "perftest missing"

debug() { cat "/sys/kernel/debug/rdma_rxe/$1"; }
port=18700

# traffic LABEL: the three transfers; sets spread (datagrams spread
# meanwhile) and data (the SEND and READ-reply packets that must be);
# checks counts and errors.
traffic() {
    local label=$1 s0 r0 rs0 rr0 d0 w0 f0 e0 e1 books
    s0=$(hw_counter rxe0 sent_pkts); r0=$(hw_counter rxe1 rcvd_pkts)
    rs0=$(hw_counter rxe1 sent_pkts); rr0=$(hw_counter rxe0 rcvd_pkts)
    books=$(rxe_counts)
    d0=$(debug rcvd_spread); w0=$(debug rcvd_spread_wakeups); f0=$(debug rcvd_drop_backlog_full)
    rl0=$(debug replies_relayed)
    e0=$(hw_counter rxe0 rcvd_seq_err); e1=$(hw_counter rxe1 rcvd_seq_err)
    peer_pair "$label-pingpong" ibv_rc_pingpong -d rxe1 -g "$g1" -p "$port" -c -s 1048576 -m 1024 -n 4 -- \
        ibv_rc_pingpong -d rxe0 -g "$g0" -p "$port" -c -s 1048576 -m 1024 -n 4 10.0.0.2
    peer_pair "$label-read" ib_read_bw -d rxe1 -x "$g1" -p "$port" -F -s 65536 -n 32 -m 1024 -- \
        ib_read_bw -d rxe0 -x "$g0" -p "$port" -F -s 65536 -n 32 -m 1024 10.0.0.2
    peer_pair "$label-write" ib_write_bw -d rxe1 -x "$g1" -p "$port" -F -s 65536 -n 32 -m 1024 -q 2 -- \
        ib_write_bw -d rxe0 -x "$g0" -p "$port" -F -s 65536 -n 32 -m 1024 -q 2 10.0.0.2
    # Every packet either side sent is received and counted by the other,
    # or (a needless probe's duplicate, on the emulated clock) dropped
    # because its QP was gone by then; the counts settle within seconds.
    wait_for 10 rxe_books_balance "$books" ||
        fail "$label: packets lost: before $books, after $(rxe_counts) (rxe0 sent, rcvd, rxe1 sent, rcvd, dropped for no QP)"
    local sent rcvd r_sent r_rcvd
    sent=$(( $(hw_counter rxe0 sent_pkts) - s0 )); rcvd=$(( $(hw_counter rxe1 rcvd_pkts) - r0 ))
    r_sent=$(( $(hw_counter rxe1 sent_pkts) - rs0 )); r_rcvd=$(( $(hw_counter rxe0 rcvd_pkts) - rr0 ))
    spread=$(( $(debug rcvd_spread) - d0 )); wakeups=$(( $(debug rcvd_spread_wakeups) - w0 ))
    relayed=$(( $(debug replies_relayed) - rl0 ))
    # pingpong: 4 round trips, a 1024-packet message each way; read: 32
    # messages of 64 packets, all but the first 64 packets.
    data=$(( 4 * 2 * (1024 - 64) + 32 * 64 - 64 ))
    note "$label: rxe0 sent $sent packets, rxe1 received $rcvd; rxe1 sent $r_sent," \
        "rxe0 received $r_rcvd; $spread spread, with $wakeups receive work wake-ups;" \
        "replies relayed $relayed times"
    # Only a datagram with none ahead of it in its backlog queues the
    # receive work, and the work drains every datagram queued meanwhile:
    # a stream of them wakes it far less often than once per datagram
    # (about once per 100 in every run so far; a quarter is the bound,
    # which waking per datagram, or per few, breaks), and some if any was
    # spread.
    [ $(( wakeups * 4 )) -le "$spread" ] && { [ "$spread" = 0 ] || [ "$wakeups" -gt 0 ]; } ||
        fail "$label: $wakeups receive work wake-ups for $spread datagrams spread"
    [ "$(hw_counter rxe0 rcvd_seq_err)" = "$e0" ] && [ "$(hw_counter rxe1 rcvd_seq_err)" = "$e1" ] ||
        fail "$label: sequence errors: datagrams processed out of order"
    [ "$(debug rcvd_drop_backlog_full)" = "$f0" ] || fail "$label: a receive backlog overflowed"
}

rxe_load || fail "modprobe"
two_namespaces || fail "two-namespace set-up"
traffic spread
[ "$spread" -ge "$data" ] || fail "only $spread of at least $data data packets spread"
[ "$relayed" -ge 1 ] || fail "no reply relayed from the receive work"

# A READ stream's replies are spread wherever its client runs: four runs
# of 64 READs of 64 KiB, the client pinned to CPU 0 twice, then to CPU 1
# twice. Each run's QPs are new, with the next QP numbers, so the CPU
# the connection transmits on (its smaller QP number modulo the CPUs, on
# two its parity) alternates: in one run on each CPU the client runs on
# the transmit CPU, in the other on the receive CPU. In each run, all
# but the first READ's replies, and those of a READ posted once every
# completion before it was polled, are placed on another CPU than the
# one they arrived on: at least 3072 of 4096. What failed before: with
# the client on the transmit CPU each READ is answered and completed
# before the system call that posted it returns, so each was taken with
# none outstanding, counted as a ping-pong, and its replies placed on
# the CPU that built them. ib_read_bw posts READs without polling
# between them (a ping-pong polls each completion first).
# Replies spread wake the requester's transmit work
# (rdma_rxe/response_wakeups) only when one lets it send (a READ credit
# or window room back, about once a READ), not once per reply packet
# (which took the QP lock on the transmit CPU while the receive CPU
# placed the next): at most one wake-up per 8 spread. The QP numbers
# perftest prints show which runs had the client on the transmit CPU: at
# least one must have, and one not, or the runs covered less than they
# claim (QP numbering changed).
on_tx=0; off_tx=0
for run in 1 2 3 4; do
    cpu=$(( (run - 1) / 2 ))
    d0=$(debug rcvd_spread); rw0=$(debug response_wakeups)
    peer_pair "read-stream-$run" ib_read_bw -d rxe1 -x "$g1" -p "$port" -F -s 65536 -n 64 -m 1024 -- \
        taskset -c "$cpu" ib_read_bw -d rxe0 -x "$g0" -p "$port" -F -s 65536 -n 64 -m 1024 10.0.0.2
    spread=$(( $(debug rcvd_spread) - d0 )); rwakeups=$(( $(debug response_wakeups) - rw0 ))
    mapfile -t qpns < <(grep -o 'QPN 0x[0-9a-fA-F]*' "/tmp/pair-read-stream-$run.client" | cut -d' ' -f2)
    [ "${#qpns[@]}" = 2 ] || fail "READ run $run: no local and remote QPN in perftest's output"
    tx=$(( (qpns[0] < qpns[1] ? qpns[0] : qpns[1]) % $(nproc) ))
    if [ "$tx" = "$cpu" ]; then on_tx=$((on_tx + 1)); else off_tx=$((off_tx + 1)); fi
    note "READ run $run (client on CPU $cpu, QPs ${qpns[*]}, transmit CPU $tx):" \
        "$spread reply packets spread, $rwakeups transmit work wake-ups"
    [ "$spread" -ge 3072 ] ||
        fail "READ run $run (client on CPU $cpu): only $spread of 4096 reply packets spread"
    [ $(( rwakeups * 8 )) -le "$spread" ] ||
        fail "READ run $run: $rwakeups transmit work wake-ups for $spread reply packets spread"
done
[ "$on_tx" -ge 1 ] && [ "$off_tx" -ge 1 ] ||
    fail "READ runs: $on_tx with the client on the transmit CPU, $off_tx not; both cases needed"
# Ping-pongs of 64 KiB (64 packets) and 4 KiB messages: never spread.
for size in 65536 4096; do
    d0=$(debug rcvd_spread)
    peer_pair "pingpong-$size" ibv_rc_pingpong -d rxe1 -g "$g1" -p "$port" -c -s $size -m 1024 -n 16 -- \
        ibv_rc_pingpong -d rxe0 -g "$g0" -p "$port" -c -s $size -m 1024 -n 16 10.0.0.2
    [ "$(debug rcvd_spread)" = "$d0" ] ||
        fail "$size-byte ping-pong: $(( $(debug rcvd_spread) - d0 )) packets spread"
done
# A READ ping-pong (one 4 KiB READ at a time, 400 reply packets in all):
# the requester takes a READ, not a SEND or WRITE, each round; never
# spread either.
d0=$(debug rcvd_spread)
peer_pair read-pingpong ib_read_lat -d rxe1 -x "$g1" -p "$port" -F -s 4096 -n 100 -m 1024 -- \
    ib_read_lat -d rxe0 -x "$g0" -p "$port" -F -s 4096 -n 100 -m 1024 10.0.0.2
[ "$(debug rcvd_spread)" = "$d0" ] ||
    fail "READ ping-pong: $(( $(debug rcvd_spread) - d0 )) packets spread"
# Loopback: 4 round trips of a 1024-packet message each way, all on rxe0.
d0=$(debug rcvd_spread); s0=$(hw_counter rxe0 sent_pkts); r0=$(hw_counter rxe0 rcvd_pkts)
e0=$(hw_counter rxe0 rcvd_seq_err); f0=$(debug rcvd_drop_backlog_full)
PAIR_LOCAL=1 peer_pair loopback ibv_rc_pingpong -d rxe0 -g "$g0" -p "$port" -c -s 1048576 -m 1024 -n 4 -- \
    ibv_rc_pingpong -d rxe0 -g "$g0" -p "$port" -c -s 1048576 -m 1024 -n 4 10.0.0.1
spread=$(( $(debug rcvd_spread) - d0 ))
note "loopback: rxe0 sent $(( $(hw_counter rxe0 sent_pkts) - s0 )) packets," \
    "received $(( $(hw_counter rxe0 rcvd_pkts) - r0 )); $spread spread"
[ "$spread" -ge $(( 4 * 2 * (1024 - 64) )) ] ||
    fail "loopback: only $spread of at least $(( 4 * 2 * (1024 - 64) )) data packets spread"
[ "$(hw_counter rxe0 rcvd_seq_err)" = "$e0" ] ||
    fail "loopback: sequence errors: datagrams processed out of order"
[ "$(debug rcvd_drop_backlog_full)" = "$f0" ] || fail "loopback: a receive backlog overflowed"
# Loopback, 16 QPs streaming 64 KiB WRITEs at once: each may have 128
# packets queued to this host (twice a network QP's bound, the loopback
# path sending no chains), 2048 in all, which the driver's own queues
# (8192 a CPU, 1024 a QP's backlog) hold: no packet refused, every one
# received, none out of order, no backlog overflow.
s0=$(hw_counter rxe0 sent_pkts); r0=$(hw_counter rxe0 rcvd_pkts); g0n=$(debug rcvd_drop_no_qp)
e0=$(hw_counter rxe0 rcvd_seq_err); f0=$(debug rcvd_drop_backlog_full); x0=$(hw_counter rxe0 send_err)
PAIR_LOCAL=1 peer_pair loopback-q16 ib_write_bw -d rxe0 -x "$g0" -p "$port" -F -s 65536 -n 64 -q 16 -- \
    ib_write_bw -d rxe0 -x "$g0" -p "$port" -F -s 65536 -n 64 -q 16 10.0.0.1
lo_balance() {
    [ $(( $(hw_counter rxe0 sent_pkts) - s0 )) -eq \
        $(( $(hw_counter rxe0 rcvd_pkts) - r0 + $(debug rcvd_drop_no_qp) - g0n )) ]
}
wait_for 10 lo_balance ||
    fail "loopback, 16 QPs: sent $(( $(hw_counter rxe0 sent_pkts) - s0 )), received $(( $(hw_counter rxe0 rcvd_pkts) - r0 ))"
note "loopback, 16 QPs: rxe0 sent and received $(( $(hw_counter rxe0 sent_pkts) - s0 )) packets"
[ "$(hw_counter rxe0 send_err)" = "$x0" ] || fail "loopback, 16 QPs: $(( $(hw_counter rxe0 send_err) - x0 )) send errors"
[ "$(hw_counter rxe0 rcvd_seq_err)" = "$e0" ] || fail "loopback, 16 QPs: sequence errors"
[ "$(debug rcvd_drop_backlog_full)" = "$f0" ] || fail "loopback, 16 QPs: a receive backlog overflowed"
two_namespaces_down
rxe_unload || fail "unload"

modprobe rdma_rxe reply_relay=0 || fail "modprobe reply_relay=0"
two_namespaces || fail "two-namespace set-up"
rl0=$(debug replies_relayed); d0=$(debug rcvd_spread)
peer_pair no-relay ibv_rc_pingpong -d rxe1 -g "$g1" -p "$port" -c -s 1048576 -m 1024 -n 4 -- \
    ibv_rc_pingpong -d rxe0 -g "$g0" -p "$port" -c -s 1048576 -m 1024 -n 4 10.0.0.2
[ $(( $(debug rcvd_spread) - d0 )) -gt 0 ] || fail "reply_relay=0: nothing spread"
[ "$(debug replies_relayed)" = "$rl0" ] ||
    fail "reply_relay=0: replies relayed $(( $(debug replies_relayed) - rl0 )) times"
two_namespaces_down
rxe_unload || fail "unload"

modprobe rdma_rxe rx_spread=0 || fail "modprobe rx_spread=0"
two_namespaces || fail "two-namespace set-up"
traffic unspread
[ "$spread" = 0 ] || fail "rx_spread=0: $spread datagrams spread"
two_namespaces_down
rxe_unload || fail "unload"
echo "PASS"
