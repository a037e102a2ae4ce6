#!/bin/bash
# A 256 MiB RDMA READ (path MTU 256: a million response packets), and
# while its reply is under way a forged WRITE the responder refuses
# (tests/vm/t_read_error.py): the responder's QP enters ERROR at once and
# abandons the READ reply; no soft lockup, RCU stall or allocation failure
# in the kernel log. Between two devices in two namespaces (rxe0 asks,
# rxe1 answers).
#   t_read_error.sh [MIB]   the READ's size (default 256; 4 on the C
#                           driver, which serves the whole reply first)
. "$(dirname "$0")/lib.sh"

need_pyverbs
rxe_load || fail "modprobe"
two_namespaces || fail "two-namespace set-up"
log_from=$(dmesg | wc -l)
start=$SECONDS
mib=${1:-256}
[ "$RXE_DRIVER" = c ] && [ -z "${1:-}" ] && mib=4
timeout -k 10 600 "$PY" "$(dirname "$0")/t_read_error.py" rxe0 "$g0" rxe1 "$g1" \
    10.0.0.1 10.0.0.2 "$mib" \
    > /tmp/read_error.out 2>&1
status=$?
note "$(cat /tmp/read_error.out) ($((SECONDS - start)) s)"
# The kernel log of this test only: a reply built in one softirq shows up
# as a soft lockup or an RCU stall (and as atomic allocation failures).
bad=$(dmesg | tail -n +$((log_from + 1)) |
      grep -E 'soft lockup|rcu.*(stall|detected)|blocked for more than|page allocation failure|BUG|WARNING' | head -5)
[ -z "$bad" ] || { echo "$bad" >&2; fail "kernel log: stall or allocation failure"; }
note "ok: kernel log clean"
case $status in
    0) note "ok: responder in ERROR at once, READ reply abandoned" ;;
    2|3) if [ "$RXE_DRIVER" = c ]; then
             # rxe's responder sends a READ reply to its end (in budgeted
             # task runs, so the log stays clean) before it looks at the
             # next request: ERROR comes only after the whole reply.
             note "C driver known failure: the READ reply is served to its end before the refused WRITE is seen"
         else
             fail "responder not in ERROR at once, or only after sending the READ reply"
         fi ;;
    *) fail "READ then refused WRITE (status $status)" ;;
esac
two_namespaces_down
