# The reliability engine under adversity, on both drivers (the C driver is
# the reference; where it fails, that is recorded, not hidden):
#   - data integrity (integrity.py, quick set: every operation, atomics,
#     48 in flight, guard bytes) with netem on both ends of the veth pair:
#     1% loss, 5% loss, 1% duplication, 25% reordering; each run's retry,
#     duplicate and NAK counters printed, so the faults were exercised;
#   - adversity.py: retry exhaustion when the peer goes silent, RNR
#     exhaustion and a late receive, QPs destroyed with their retry timer
#     armed, two processes racing FETCH_AND_ADD on one counter.
# Ours must pass everything. The C driver stalls on multi-packet messages
# under loss (a known failure of it): its lossy runs are bounded at
# RXE_C_LOSSY_BOUND seconds (default 90) and a run that does not finish is
# reported as "C known failure", not failed.
. "$(dirname "$0")/lib.sh"

/usr/bin/python3 -c "import pyverbs" 2>/dev/null || fail "python3-pyverbs missing"
rxe_load || fail "modprobe"
two_namespaces || fail "two-namespace set-up"
here=$(dirname "$0")

netem_both() { # netem arguments, or "off"
    tc qdisc del dev veth-a root 2>/dev/null
    ip netns exec peer tc qdisc del dev veth-b root 2>/dev/null
    [ "$1" = off ] && return 0
    tc qdisc add dev veth-a root netem "$@" &&
        ip netns exec peer tc qdisc add dev veth-b root netem "$@"
}

counters() { # DEV [netns]: the transport counters that show faults
    local cmd=(rdma statistic show link "$1/1")
    [ -z "${2:-}" ] || cmd=(ip netns exec "$2" "${cmd[@]}")
    "${cmd[@]}" | tr ' ' '\n' | paste - - |
        grep -E '^(duplicate_request|out_of_seq_request|rcvd_seq_err|completer_retry_err|retry_exceeded_err|rcvd_rnr_err|send_rnr_err|sent_pkts)\s' |
        tr '\t' '=' | tr '\n' ' '
}

bad=0
for cond in "loss 1%" "loss 5%" "duplicate 1%" "delay 2ms reorder 25% 50%"; do
    netem_both $cond || fail "netem $cond"
    bound=600
    [ "$RXE_DRIVER" = c ] && bound=${RXE_C_LOSSY_BOUND:-90}
    start=$SECONDS
    RXE_INTEGRITY_QUICK=1 timeout -k 5 "$bound" /usr/bin/python3 "$here/integrity.py" rxe0 "$g0" rxe1 "$g1" \
        > /tmp/adv.out 2>&1
    rc=$?
    took=$((SECONDS - start))
    netem_both off
    summary="requester: $(counters rxe0)| responder: $(counters rxe1 peer)"
    if [ $rc = 0 ]; then
        note "ok: integrity under netem $cond ($took s): $(tail -1 /tmp/adv.out)"
    elif [ "$RXE_DRIVER" = c ]; then
        if [ $rc = 124 ]; then
            note "C known failure: integrity under netem $cond did not finish in $took s"
        else
            note "C known failure: integrity under netem $cond failed after $took s: $(tail -1 /tmp/adv.out)"
        fi
    else
        sed 's/^/    /' /tmp/adv.out | tail -20
        note "FAILED: integrity under netem $cond ($took s, exit $rc)"
        bad=1
    fi
    note "  counters so far: $summary"
    # A QP left in ERROR by a stalled run is gone with its process.
done

cases=(retry_exhausted rnr_exhausted rnr_late_recv destroy_armed atomic_race)
if [ "$RXE_DRIVER" = c ] && [ -z "${RXE_ADVERSITY_ALL:-}" ]; then
    # Destroying a QP whose retry timer is armed makes the C driver wait
    # about a minute and then WARN in __rxe_cleanup (rxe_pool.c:212,
    # references not dropped in time), which fails the test by its kernel
    # log: a known failure of the C driver, not run (RXE_ADVERSITY_ALL=1
    # runs it).
    cases=(retry_exhausted rnr_exhausted rnr_late_recv atomic_race)
    note "C known failure: destroy_armed (WARN in __rxe_cleanup), not run"
fi
expect "adversity cases" /usr/bin/python3 "$here/adversity.py" rxe0 "$g0" rxe1 "$g1" "${cases[@]}"
sed 's/^/  /' /tmp/expect.out
two_namespaces_down
[ $bad = 0 ] || fail "integrity under loss"
