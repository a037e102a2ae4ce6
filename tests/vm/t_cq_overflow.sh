#!/bin/bash
# A receive CQ of 16 entries never polled, 64 SENDs received
# (tests/vm/t_cq_overflow.py): the receiving QP enters ERROR and the CQ
# raises one IB_EVENT_CQ_ERR, not one per lost completion. Between two
# devices in two namespaces (rxe1 sends, rxe0 receives).
. "$(dirname "$0")/lib.sh"

need_pyverbs
rxe_load || fail "modprobe"
two_namespaces || fail "two-namespace set-up"
timeout 300 "$PY" "$(dirname "$0")/t_cq_overflow.py" rxe1 "$g1" rxe0 "$g0" \
    > /tmp/cq_overflow.out 2>&1
status=$?
note "$(cat /tmp/cq_overflow.out)"
case $status in
    0) note "ok: QP in ERROR, one CQ error event" ;;
    2) if [ "$RXE_DRIVER" = c ]; then
           # rxe_cq_post raises IB_EVENT_CQ_ERR at every post to a full CQ:
           # the lost completion, then the first flush of the RQ (after
           # which flush_recv_queue stops posting).
           note "C driver known failure: two CQ error events (the overflow and the first flush)"
       else
           fail "two CQ error events"
       fi ;;
    *) fail "CQ overflow (status $status)" ;;
esac
two_namespaces_down
