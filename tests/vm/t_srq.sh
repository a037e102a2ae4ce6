# Shared receive queues through stock librxe (pyverbs): creation, the
# mapped ring, resize with posted WQEs, the limit, checks, QPs on an SRQ,
# and a process that exits with SRQs open.
. "$(dirname "$0")/lib.sh"

/usr/bin/python3 -c "import pyverbs" 2>/dev/null || fail "python3-pyverbs missing"
rxe_load || fail "modprobe"
veth_pair
expect "add rxe0" rdma link add rxe0 type rxe netdev veth-a
wait_for 10 link_state_is rxe0 ACTIVE || fail "port not active"
expect "shared receive queues" /usr/bin/python3 "$(dirname "$0")/t_srq.py"
cat /tmp/expect.out
expect "process exiting with SRQs open" /usr/bin/python3 "$(dirname "$0")/t_srq.py" --exit-with-open-srqs
expect "device can be removed after contexts close" rdma link del rxe0
