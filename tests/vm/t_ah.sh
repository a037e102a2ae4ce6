# Address handles through stock librxe (pyverbs): creation for each RoCE
# v2 GID of the port, many at once, a bad source GID, and a process that
# exits with AHs open.
. "$(dirname "$0")/lib.sh"

/usr/bin/python3 -c "import pyverbs" 2>/dev/null || fail "python3-pyverbs missing"
rxe_load || fail "modprobe"
veth_pair
expect "add rxe0" rdma link add rxe0 type rxe netdev veth-a
wait_for 10 link_state_is rxe0 ACTIVE || fail "port not active"
wait_for 20 sh -c "grep -qs ffff:0a00:0001 /sys/class/infiniband/rxe0/ports/1/gids/*" \
    || fail "no IPv4 GID"
expect "address handles" /usr/bin/python3 "$(dirname "$0")/t_ah.py"
cat /tmp/expect.out
expect "process exiting with AHs open" /usr/bin/python3 "$(dirname "$0")/t_ah.py" --exit-with-open-ahs
expect "device can be removed after contexts close" rdma link del rxe0
