#!/bin/bash
# Two RC QPs on one SRQ, fed at the same time by two senders on two CPUs
# (tests/vm/t_srq_race.py): every receive WQE is taken by exactly one
# message, every wr_id completes once with its own data. Between two
# devices in two namespaces (rxe1 sends, rxe0 receives).
#   t_srq_race.sh [MESSAGES]   per sender (default 2000)
. "$(dirname "$0")/lib.sh"

need_pyverbs
[ "$(nproc)" -ge 2 ] || note "only one CPU: the two senders cannot run at once"
rxe_load || fail "modprobe"
two_namespaces || fail "two-namespace set-up"
start=$SECONDS
expect "two senders into one SRQ" timeout 600 "$PY" "$(dirname "$0")/t_srq_race.py" \
    rxe0 "$g0" rxe1 "$g1" "${1:-2000}"
note "$(cat /tmp/expect.out) ($((SECONDS - start)) s)"
two_namespaces_down
