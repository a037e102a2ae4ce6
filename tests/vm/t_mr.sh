# Memory regions through stock librxe (pyverbs): registration of user memory
# (sizes, unaligned starts, access flags, read-only and unmapped memory),
# the keys handed out, many regions, and a process that exits with regions
# still registered.
. "$(dirname "$0")/lib.sh"

/usr/bin/python3 -c "import pyverbs" 2>/dev/null || fail "python3-pyverbs missing"
rxe_load || fail "modprobe"
veth_pair
expect "add rxe0" rdma link add rxe0 type rxe netdev veth-a
expect "memory regions" /usr/bin/python3 "$(dirname "$0")/t_mr.py"
cat /tmp/expect.out
expect "process exiting with MRs registered" /usr/bin/python3 "$(dirname "$0")/t_mr.py" --exit-with-open-mrs
expect "device can be removed after contexts close" rdma link del rxe0
