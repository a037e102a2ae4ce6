# Data integrity over RC (tests/vm/integrity.py): one device talking to
# itself, then two devices in two namespaces joined by a veth pair.
# Named x_ so the suite does not run it yet: it needs the data path, which
# our driver does not have; run it by hand against the C driver:
#   scripts/vm.sh logs/x tests/vm/x_integrity.sh   (with RXE_DRIVER=c in the guest)
. "$(dirname "$0")/lib.sh"

/usr/bin/python3 -c "import pyverbs" 2>/dev/null || fail "python3-pyverbs missing"
rxe_load || fail "modprobe"
veth_pair
expect "add rxe0" rdma link add rxe0 type rxe netdev veth-a
wait_for 10 link_state_is rxe0 ACTIVE || fail "port not active"
wait_for 20 sh -c "grep -qs ffff:0a00:0001 /sys/class/infiniband/rxe0/ports/1/gids/*" || fail "no IPv4 GID"
g=$(basename "$(grep -ls ffff:0a00:0001 /sys/class/infiniband/rxe0/ports/1/gids/* | head -1)")
expect "loopback: rxe0 to itself" /usr/bin/python3 "$(dirname "$0")/integrity.py" rxe0 "$g" rxe0 "$g"
cat /tmp/expect.out
