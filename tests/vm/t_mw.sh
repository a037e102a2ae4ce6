# Memory windows of type 1 and 2 over RC through stock librxe, between two
# devices in two namespaces (tests/vm/t_mw.py: binds, accesses through a
# window, its access bits and range, invalidation by SEND_WITH_INV and
# LOCAL_INV, the bind errors, deregistration refused while bound).
. "$(dirname "$0")/lib.sh"

need_pyverbs
rxe_load || fail "modprobe"
two_namespaces || fail "two-namespace set-up"
start=$SECONDS
expect "memory windows rxe0 to rxe1" timeout -k 5 600 "$PY" "$(dirname "$0")/t_mw.py" "$RXE_DRIVER" rxe0 "$g0" rxe1 "$g1"
sed 's/^/  /' /tmp/expect.out
note "($((SECONDS - start)) s)"
two_namespaces_down
