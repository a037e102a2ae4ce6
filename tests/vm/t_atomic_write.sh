# ATOMIC_WRITE over RC through stock librxe, between two devices in two
# namespaces (tests/vm/t_atomic_write.py: every word written and nothing
# around it, more in flight than max_rd_atomic, the responder's errors for
# a misaligned target and a region without remote write, the FLUSH access
# flags of a registration).
. "$(dirname "$0")/lib.sh"

need_pyverbs
rxe_load || fail "modprobe"
two_namespaces || fail "two-namespace set-up"
start=$SECONDS
expect "ATOMIC_WRITE rxe0 to rxe1" timeout -k 5 600 "$PY" "$(dirname "$0")/t_atomic_write.py" rxe0 "$g0" rxe1 "$g1"
sed 's/^/  /' /tmp/expect.out
note "($((SECONDS - start)) s)"
two_namespaces_down
