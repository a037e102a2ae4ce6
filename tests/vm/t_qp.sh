# Queue pairs through stock librxe (pyverbs): creation and reported
# capacities, QP numbers, the RC state machine with attributes read back,
# attribute checks, and a process that exits with QPs open.
. "$(dirname "$0")/lib.sh"

/usr/bin/python3 -c "import pyverbs" 2>/dev/null || fail "python3-pyverbs missing"
rxe_load || fail "modprobe"
veth_pair
expect "add rxe0" rdma link add rxe0 type rxe netdev veth-a
wait_for 10 link_state_is rxe0 ACTIVE || fail "port not active"
expect "queue pairs" /usr/bin/python3 "$(dirname "$0")/t_qp.py"
cat /tmp/expect.out
expect "process exiting with QPs open" /usr/bin/python3 "$(dirname "$0")/t_qp.py" --exit-with-open-qps
expect "device can be removed after contexts close" rdma link del rxe0
