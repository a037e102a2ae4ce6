# Deleting the netdev removes the device and, with the last one, the socket.
. "$(dirname "$0")/lib.sh"

rxe_load || fail "modprobe"
veth_pair
expect "add rxe0" rdma link add rxe0 type rxe netdev veth-a
expect "socket listening" roce_port_listening
expect "delete the netdev" ip link del veth-a
expect "device removed" wait_for 20 sh -c "! rdma link show rxe0/1"
expect_not "socket closed" roce_port_listening
expect "module unloads" wait_for 20 modprobe -r rdma_rxe
