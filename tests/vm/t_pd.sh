# A user context and protection domains through stock librxe (pyverbs).
. "$(dirname "$0")/lib.sh"

/usr/bin/python3 -c "import pyverbs" 2>/dev/null || fail "python3-pyverbs missing"
rxe_load || fail "modprobe"
veth_pair
expect "add rxe0" rdma link add rxe0 type rxe netdev veth-a
expect "context and PDs" /usr/bin/python3 "$(dirname "$0")/t_pd.py"
expect "device can be removed after contexts close" rdma link del rxe0
