# The seed chapter's walkthroughs replayed live (tests/vm/walkthrough.py):
# packets dropped by the fault rules in debugfs (Documentation/faults.md),
# every protocol decision read back from the rdma_rxe trace events, data
# checked byte by byte: one lost WRITE packet (go-back-N), one lost ACK
# (retry timer, duplicate re-ACKed), one lost READ response, one lost
# atomic ACK (replayed, executed once), two packets that cannot be built
# (nothing sent past them, resent by timer). Two devices in two namespaces.
# Ours only: the C driver has no fault rules (netem cannot pick one PSN).
. "$(dirname "$0")/lib.sh"

[ "$RXE_DRIVER" = rust ] || skip "the C driver has no fault injection"
need_pyverbs
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
# Every packet of a QP leaves from its transmit CPU (post_cpu_send=0), so
# the packets and the replies they cause queue in one CPU's backlog, in
# the order the chapter tells. With the default, a WRITE posted after
# everything was acknowledged leaves from the posting CPU, and the
# resends its NAK causes leave from the transmit CPU: under a busy host
# (CI runs three guests at once) they once overtook the WRITE's last
# original packet, which opened a second gap and drew a second NAK
# (1000, 1002 NAK, 1001, 1003 NAK, 1002, 1003), correct go-back-N but
# not the walkthrough's script.
modprobe rdma_rxe post_cpu_send=0 || fail "modprobe post_cpu_send=0"
two_namespaces || fail "two-namespace set-up"
[ -w /sys/kernel/debug/rdma_rxe/rxe0/faults ] || fail "no faults file for rxe0"
[ -d /sys/kernel/tracing/events/rdma_rxe ] || fail "no rdma_rxe trace events"
# The file itself: root only, refuses a bad rule set whole with a reason,
# reads back what it holds, clears on an empty write.
f=/sys/kernel/debug/rdma_rxe/rxe0/faults
[ "$(stat -c %a "$f")" = 600 ] || fail "faults is mode $(stat -c %a "$f"), not 600"
expect_not "a user that is not root cannot write it" \
    setpriv --reuid nobody --regid nogroup --clear-groups sh -c "echo drop > $f"
expect "a valid rule" sh -c "echo 'drop dir=tx class=ack prob=0.5 seed=3' > $f"
expect_not "an invalid rule set (second line)" sh -c "printf 'dup\ndrop dir=up\n' > $f"
dmesg | tail -5 | grep -q "faults: rule on line 2: dir must be tx or rx; rules unchanged" ||
    fail "no reason in the kernel log"
grep -qx "drop dir=tx class=ack prob=0.500000 seed=3 # matched=0 acted=0" "$f" ||
    fail "rules read back: $(cat "$f")"
expect "clear" sh -c "echo > $f"
[ -z "$(cat "$f")" ] || fail "not cleared: $(cat "$f")"
note "ok: faults file: mode 600, EINVAL with a reason, read back, cleared"
expect "walkthroughs" "$PY" "$(dirname "$0")/walkthrough.py" rxe0 "$g0" rxe1 "$g1"
sed 's/^/  /' /tmp/expect.out
echo 0 > /sys/kernel/tracing/events/rdma_rxe/enable
two_namespaces_down
