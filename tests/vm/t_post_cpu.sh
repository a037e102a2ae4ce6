# Sending from the posting CPU (issue 16): an RC QP's packets leave from
# its transmit CPU, except that a doorbell rung while every request
# packet the QP sent is acknowledged sends the new ones at once, from the
# CPU that posted them (nothing of the QP's can be overtaken then). A
# ping-pong (ibv_rc_pingpong, 300 round trips of 4 KiB, data checked)
# with client and server pinned to different CPUs, run twice with the
# CPUs swapped: in one run the client, in the other the server, posts on
# a CPU that is not the QP's transmit CPU, and some of its SENDs must
# leave from there (rdma_rxe/sent_from_posting_cpu; at least 3 of the
# 600: more often the transmit CPU, finishing the message the poster
# saw complete, has taken the new SEND from the ring first, which is as
# quick; 17 and 116 in the debug and production passes of one run). A
# stream of 64 KiB WRITEs (ib_write_bw, 200 posts, each with packets of
# the earlier ones unacknowledged, and more than 16 packets each) keeps
# to its transmit CPU: at most a quarter of its posts may send from the
# posting CPU (none did in that run). Nor do streams of 4 KiB WRITEs
# (ib_write_bw, 4 runs of 500 posts, the client pinned to each CPU in
# turn), whose every message could be sent, acknowledged and completed
# within the system call that posted it, so that each post found all
# acknowledged and was sent from the posting CPU (8845 of 10000 in a
# profile; the other CPU idle): a post that neither answers a message
# of the peer's nor follows a wait for the last completion is a
# stream's. At most a quarter of the posts are sent from the posting
# CPU, and a poster on the transmit CPU leaves its posts to the
# transmit work (rdma_rxe/stream_posts_deferred, at least 100 of 2000),
# never with stream_defer=0. No sequence error
# either side (a packet overtaking an earlier one of its QP). Then with
# post_cpu_send=0 nothing is sent from the posting CPU.
#
#
# Replies likewise (recv_cpu_reply): an ACK the receive path owes while
# none of the QP's packets is in flight leaves from the CPU that received
# the request, not after a hop to the transmit CPU; in the pinned
# ping-pongs some must (rdma_rxe/replies_from_receive_cpu), again with no
# sequence error. READ ping-pongs (ib_read_lat 2 B, 4 runs of 200):
# with recv_cpu_reply on a READ too leaves from the posting CPU, and its
# one-packet response from the CPU it reached the responder on; some of
# each must, with no sequence error. With recv_cpu_reply=0 no reply
# does, and no READ leaves from the posting CPU (its response would
# then leave from the CPU the READ reached the responder on, and the
# requester keeps READs on the transmit CPU).
#
# Needs two vCPUs. The C driver sends from its QP's task: not run.
. "$(dirname "$0")/lib.sh"

if [ "$RXE_DRIVER" = c ]; then
    note "C driver: sends from its QP's task, not run"
    exit 0
fi
[ "$(nproc)" -ge 2 ] || fail "needs two CPUs, the guest has $(nproc)"
command -v ibv_rc_pingpong >/dev/null || fail "ibverbs-utils missing"
command -v ib_write_bw >/dev/null || fail "perftest missing"

here() { cat /sys/kernel/debug/rdma_rxe/sent_from_posting_cpu; }
replies() { cat /sys/kernel/debug/rdma_rxe/replies_from_receive_cpu; }
deferrals() { cat /sys/kernel/debug/rdma_rxe/stream_posts_deferred; }
port=18800

# pingpongs: the two pinned ping-pongs; sets moved (doorbells that sent
# from the posting CPU meanwhile) and replied (replies sent from the
# receiving CPU).
pingpongs() {
    local h0 r0 e0 e1 cpu
    h0=$(here); r0=$(replies)
    e0=$(hw_counter rxe0 rcvd_seq_err); e1=$(hw_counter rxe1 rcvd_seq_err)
    for cpu in 0 1; do
        peer_pair "pingpong-cpu$cpu" taskset -c $((1 - cpu)) \
            ibv_rc_pingpong -d rxe1 -g "$g1" -p "$port" -c -s 4096 -m 1024 -n 300 -- \
            taskset -c "$cpu" \
            ibv_rc_pingpong -d rxe0 -g "$g0" -p "$port" -c -s 4096 -m 1024 -n 300 10.0.0.2
    done
    moved=$(( $(here) - h0 )); replied=$(( $(replies) - r0 ))
    [ "$(hw_counter rxe0 rcvd_seq_err)" = "$e0" ] && [ "$(hw_counter rxe1 rcvd_seq_err)" = "$e1" ] ||
        fail "ping-pong: sequence errors: a packet overtook an earlier one of its QP"
}

# read_pingpongs: four pinned READ ping-pongs (ib_read_lat 2 B, 200
# each); sets reads (READs sent from the posting CPU meanwhile) and
# replied (replies sent from the receiving CPU). Only the client posts
# here, and a QP pair's transmit CPU follows its QP numbers, which each
# run moves on (on both devices): with the client on CPU 0, 0, 1, 1,
# whether a run's numbers keep the transmit CPU or alternate it, some
# run has the client off it.
read_pingpongs() {
    local h0 r0 e0 e1 cpu i=0
    h0=$(here); r0=$(replies)
    e0=$(hw_counter rxe0 rcvd_seq_err); e1=$(hw_counter rxe1 rcvd_seq_err)
    for cpu in 0 0 1 1; do
        i=$((i + 1))
        peer_pair "read-$i-cpu$cpu" taskset -c $((1 - cpu)) \
            ib_read_lat -d rxe1 -x "$g1" -p "$port" -F -s 2 -n 200 -- \
            taskset -c "$cpu" ib_read_lat -d rxe0 -x "$g0" -p "$port" -F -s 2 -n 200 10.0.0.2
    done
    reads=$(( $(here) - h0 )); replied=$(( $(replies) - r0 ))
    [ "$(hw_counter rxe0 rcvd_seq_err)" = "$e0" ] && [ "$(hw_counter rxe1 rcvd_seq_err)" = "$e1" ] ||
        fail "READ ping-pong: sequence errors"
}

# streams_4k: four streams of 500 4 KiB WRITEs (ib_write_bw), the client
# pinned to CPU 0, 0, 1, 1 (as read_pingpongs: some run has it on the
# QP pair's transmit CPU, some not); sets moved (posts sent from the
# posting CPU) and deferred (posts on the transmit CPU left to its
# transmit work, rdma_rxe/stream_posts_deferred).
streams_4k() {
    local h0 d0 e0 cpu i=0
    h0=$(here); d0=$(deferrals); e0=$(hw_counter rxe1 rcvd_seq_err)
    for cpu in 0 0 1 1; do
        i=$((i + 1))
        peer_pair "stream4k-$i-cpu$cpu" taskset -c $((1 - cpu)) \
            ib_write_bw -d rxe1 -x "$g1" -p "$port" -F -s 4096 -n 500 -m 1024 -- \
            taskset -c "$cpu" ib_write_bw -d rxe0 -x "$g0" -p "$port" -F -s 4096 -n 500 -m 1024 10.0.0.2
    done
    moved=$(( $(here) - h0 )); deferred=$(( $(deferrals) - d0 ))
    [ "$(hw_counter rxe1 rcvd_seq_err)" = "$e0" ] || fail "4 KiB streams: sequence errors"
}

rxe_load || fail "modprobe"
two_namespaces || fail "two-namespace set-up"
pingpongs
note "ping-pongs: $moved of 1200 SENDs sent from the posting CPU"
[ "$moved" -ge 3 ] || fail "ping-pong: only $moved SENDs sent from the posting CPU, want at least 3"
note "ping-pongs: $replied replies sent from the receiving CPU"
[ "$replied" -ge 3 ] || fail "ping-pong: only $replied replies sent from the receiving CPU, want at least 3"
read_pingpongs
note "READ ping-pongs: $reads of 800 READs sent from the posting CPU, $replied replies from the receiving CPU"
[ "$reads" -ge 3 ] || fail "READ ping-pong: only $reads READs sent from the posting CPU, want at least 3"
[ "$replied" -ge 3 ] || fail "READ ping-pong: only $replied READ responses sent from the receiving CPU, want at least 3"
h0=$(here); e0=$(hw_counter rxe1 rcvd_seq_err)
peer_pair stream ib_write_bw -d rxe1 -x "$g1" -p "$port" -F -s 65536 -n 200 -m 1024 -- \
    ib_write_bw -d rxe0 -x "$g0" -p "$port" -F -s 65536 -n 200 -m 1024 10.0.0.2
moved=$(( $(here) - h0 ))
note "stream: $moved of 200 posts sent from the posting CPU"
[ "$moved" -le 50 ] || fail "stream: $moved of 200 posts sent from the posting CPU, want at most 50"
[ "$(hw_counter rxe1 rcvd_seq_err)" = "$e0" ] || fail "stream: sequence errors"
streams_4k
note "4 KiB streams: $moved of 2000 posts sent from the posting CPU, $deferred left to the transmit work from it"
[ "$moved" -le 500 ] || fail "4 KiB streams: $moved of 2000 posts sent from the posting CPU, want at most 500"
[ "$deferred" -ge 100 ] || fail "4 KiB streams: only $deferred posts on the transmit CPU left to its work, want at least 100"
two_namespaces_down
rxe_unload || fail "unload"

modprobe rdma_rxe stream_defer=0 || fail "modprobe stream_defer=0"
two_namespaces || fail "two-namespace set-up"
streams_4k
note "stream_defer=0, 4 KiB streams: $moved of 2000 posts sent from the posting CPU"
[ "$deferred" = 0 ] || fail "stream_defer=0: $deferred posts left to the transmit work"
two_namespaces_down
rxe_unload || fail "unload"

modprobe rdma_rxe post_cpu_send=0 || fail "modprobe post_cpu_send=0"
two_namespaces || fail "two-namespace set-up"
pingpongs
[ "$moved" = 0 ] || fail "post_cpu_send=0: $moved SENDs sent from the posting CPU"
two_namespaces_down
rxe_unload || fail "unload"

modprobe rdma_rxe recv_cpu_reply=0 || fail "modprobe recv_cpu_reply=0"
two_namespaces || fail "two-namespace set-up"
pingpongs
[ "$replied" = 0 ] || fail "recv_cpu_reply=0: $replied replies sent from the receiving CPU"
read_pingpongs
note "recv_cpu_reply=0, READ ping-pongs: $reads READs sent from the posting CPU, $replied replies from the receiving CPU"
[ "$reads" = 0 ] || fail "recv_cpu_reply=0: $reads READs sent from the posting CPU, want none"
[ "$replied" = 0 ] || fail "recv_cpu_reply=0: $replied READ responses sent from the receiving CPU"
two_namespaces_down
rxe_unload || fail "unload"
echo "PASS"
