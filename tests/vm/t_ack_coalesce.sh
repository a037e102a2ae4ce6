# AckReq coalescing (issue 16): our requester asks for an ACK on the last
# packet of a SEND or WRITE only when no packet follows it in the same
# transmit step (and every 32 packets), so a stream of small messages
# posted together draws an ACK per burst, not per message. Between two
# namespaces, ib_write_bw and ib_send_bw move 4000 messages of 64 bytes
# posted 16 to a call (--post_list 16: one doorbell takes the 16 and
# sends them in one step): every message must complete (the server's
# receive completions, the client's send completions; perftest exits 0
# only then) and the server, which sends nothing but ACKs, must send at
# most 2000 for the 8000 (one per four messages; before this, one per
# message), with no sequence error, no QP out of retries and the packet
# books balanced. With
# ack_req_coalesce=0 every message's end asks, as rxe's: the same runs
# draw more than twice as many ACKs.
#
# The C driver asks on every message's end: not run.
. "$(dirname "$0")/lib.sh"

if [ "$RXE_DRIVER" = c ]; then
    note "C driver: AckReq on every message's last packet, not run"
    exit 0
fi
command -v ib_write_bw >/dev/null || fail "perftest missing"
port=18900

# bursts LABEL: the two runs; sets acks (packets the server sent) and
# msgs (request packets the client sent).
bursts() {
    local label=$1 s0 a0 e0 t0 books prog
    s0=$(hw_counter rxe0 sent_pkts); a0=$(hw_counter rxe1 sent_pkts)
    e0=$(hw_counter rxe1 rcvd_seq_err); t0=$(hw_counter rxe0 retry_exceeded_err)
    books=$(rxe_counts)
    for prog in ib_write_bw ib_send_bw; do
        peer_pair "$label-$prog" $prog -d rxe1 -x "$g1" -p "$port" -F -s 64 -n 4000 --post_list 16 -- \
            $prog -d rxe0 -x "$g0" -p "$port" -F -s 64 -n 4000 --post_list 16 10.0.0.2
    done
    wait_for 10 rxe_books_balance "$books" ||
        fail "$label: packets lost: before $books, after $(rxe_counts)"
    msgs=$(( $(hw_counter rxe0 sent_pkts) - s0 )); acks=$(( $(hw_counter rxe1 sent_pkts) - a0 ))
    note "$label: the client sent $msgs packets, the server $acks ACKs"
    [ "$msgs" -ge 8000 ] || fail "$label: only $msgs request packets for 8000 messages"
    [ "$(hw_counter rxe1 rcvd_seq_err)" = "$e0" ] || fail "$label: sequence errors"
    [ "$(hw_counter rxe0 retry_exceeded_err)" = "$t0" ] || fail "$label: retries exceeded"
}

rxe_load || fail "modprobe"
two_namespaces || fail "two-namespace set-up"
bursts coalesced
coalesced=$acks
[ "$acks" -le 2000 ] || fail "coalesced: $acks ACKs for 8000 messages posted 16 at a time, want at most 2000"
two_namespaces_down
rxe_unload || fail "unload"

modprobe rdma_rxe ack_req_coalesce=0 || fail "modprobe ack_req_coalesce=0"
two_namespaces || fail "two-namespace set-up"
bursts every-end
[ "$acks" -gt $(( 2 * coalesced )) ] ||
    fail "ack_req_coalesce=0: $acks ACKs, not more than twice the $coalesced coalesced"
two_namespaces_down
rxe_unload || fail "unload"
echo "PASS"
