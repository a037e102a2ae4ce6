# Completion queues through stock librxe (pyverbs): create (several sizes,
# with and without a completion channel, create_cq_ex), the mapped ring,
# req_notify, resize, limits, many CQs, and a process that exits with CQs
# still open.
. "$(dirname "$0")/lib.sh"

/usr/bin/python3 -c "import pyverbs" 2>/dev/null || fail "python3-pyverbs missing"
rxe_load || fail "modprobe"
veth_pair
expect "add rxe0" rdma link add rxe0 type rxe netdev veth-a
expect "completion queues" /usr/bin/python3 "$(dirname "$0")/t_cq.py"
cat /tmp/expect.out
expect "process exiting with CQs open" /usr/bin/python3 "$(dirname "$0")/t_cq.py" --exit-with-open-cqs
expect "device can be removed after contexts close" rdma link del rxe0
