# The seed chapter's walkthroughs replayed live (tests/vm/walkthrough.py):
# packets dropped by the fault rules in debugfs (Documentation/faults.md),
# every protocol decision read back from the rdma_rxe trace events, data
# checked byte by byte: one lost WRITE packet (go-back-N), one lost ACK
# (retry timer, duplicate re-ACKed), one lost READ response, one lost
# atomic ACK (replayed, executed once). Two devices in two namespaces.
# Ours only: the C driver has no fault rules (netem cannot pick one PSN).
. "$(dirname "$0")/lib.sh"

[ "$RXE_DRIVER" = rust ] || skip "the C driver has no fault injection"
/usr/bin/python3 -c "import pyverbs" 2>/dev/null || fail "python3-pyverbs missing"
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
rxe_load || fail "modprobe"
two_namespaces || fail "two-namespace set-up"
[ -w /sys/kernel/debug/rdma_rxe/rxe0/faults ] || fail "no faults file for rxe0"
[ -d /sys/kernel/tracing/events/rdma_rxe ] || fail "no rdma_rxe trace events"
expect "walkthroughs" /usr/bin/python3 "$(dirname "$0")/walkthrough.py" rxe0 "$g0" rxe1 "$g1"
sed 's/^/  /' /tmp/expect.out
echo 0 > /sys/kernel/tracing/events/rdma_rxe/enable
two_namespaces_down
