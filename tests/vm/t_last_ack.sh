#!/bin/bash
# The last ACK of a connection reaches the peer even when the receiver
# destroys its QP at once (a two-CPU test: the suite runs it in its 2-vCPU
# guest). rxe0 talks to itself (client and server on rxe0, through the
# stack's loopback): ibv_rc_pingpong's client returns from its last
# receive completion and destroys its QP; the server still waits for the
# ACK of its last SEND. When that receive arrived on the other CPU than
# the client QP's transmit CPU, the ACK waits for the QP's transmit work,
# which destroy_qp stops: before the fix the ACK was dropped with the work,
# the server resent its SEND to a QP that no longer existed (counted in
# debugfs as rcvd_drop_no_qp) and never completed (one round in eight, in
# one run on a busy machine). Now destroy_qp sends the ACKs the QP owes.
# Only the end of a round matters: each is short (4 round trips of 4 KiB),
# and ROUNDS of them (RXE_LAST_ACK_ROUNDS, default 16) must all complete.
. "$(dirname "$0")/lib.sh"

[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs (the suite's 2-vCPU guest), has $(nproc)"
command -v ibv_rc_pingpong >/dev/null || fail "ibverbs-utils missing"
one_device
rounds=${RXE_LAST_ACK_ROUNDS:-16}
logs=$RXE_LOGDIR/last_ack-$RXE_DRIVER
mkdir -p "$logs"
tcp_listening() { ss -Htln "sport = :$1" | grep -q ":$1"; }
drops() { cat /sys/kernel/debug/rdma_rxe/rcvd_drop_no_qp 2>/dev/null || echo -; }
failed=0
for r in $(seq 1 "$rounds"); do
    port=$((18900 + r))
    timeout -k 5 120 ibv_rc_pingpong -d rxe0 -g "$g0" -p $port -c -s 4096 -n 4 \
        > "$logs/server-$r.log" 2>&1 &
    spid=$!
    wait_for 60 tcp_listening $port || fail "round $r: server did not listen"
    timeout -k 5 60 ibv_rc_pingpong -d rxe0 -g "$g0" -p $port -c -s 4096 -n 4 10.0.0.1 \
        > "$logs/client-$r.log" 2>&1
    crc=$?
    # The client is done; the server must finish too, soon.
    end=$((SECONDS + 60))
    while kill -0 $spid 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.5; done
    kill $spid 2>/dev/null
    wait $spid; src=$?
    if [ $crc = 0 ] && [ $src = 0 ]; then
        note "round $r: both sides completed (no_qp drops so far: $(drops))"
    else
        failed=$((failed + 1))
        echo "round $r: client exit $crc, server exit $src (no_qp drops so far: $(drops))"
        tail -3 "$logs/server-$r.log" | sed 's/^/    server: /'
        rdma statistic show link rxe0/1 | sed 's/^/    /'
    fi
done
[ $failed = 0 ] || fail "$failed of $rounds rounds: the server never completed (its last SEND's ACK was lost)"
note "$rounds rounds, every server completed"
