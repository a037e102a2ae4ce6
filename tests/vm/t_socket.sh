# The RoCEv2 UDP sockets: one IPv4 and one IPv6 on port 4791 per namespace
# that has a device, shared by the devices there, gone with the last one.
. "$(dirname "$0")/lib.sh"

rxe_load || fail "modprobe"
expect_not "no socket before any device" roce_port_listening
veth_pair
expect "add rxe0" rdma link add rxe0 type rxe netdev veth-a
expect "IPv4 socket on 4791" roce_port_listening -4
expect "IPv6 socket on 4791" roce_port_listening -6
expect "add rxe1" rdma link add rxe1 type rxe netdev veth-b
expect "one IPv4 socket for both devices" sh -c "[ \$(ss -Huln4 sport = :4791 | wc -l) = 1 ]"
expect "del rxe1" rdma link del rxe1
expect "socket stays while rxe0 exists" roce_port_listening -4
expect "del rxe0" rdma link del rxe0
expect_not "socket gone with the last device" roce_port_listening

# A device in another namespace gets sockets there, not here.
ip netns add rxens1
ip link set veth-b netns rxens1
ip -n rxens1 link set veth-b up
expect "add a device inside rxens1" ip netns exec rxens1 rdma link add rxe2 type rxe netdev veth-b
expect "socket in rxens1" ip netns exec rxens1 sh -c "ss -Huln4 sport = :4791 | grep -q :4791"
expect_not "no socket in the initial namespace" roce_port_listening
expect "delete the namespace with the device in it" ip netns delete rxens1
expect "device goes with its netdev" wait_for 20 sh -c "! rdma link show rxe2/1"
expect "module unloads afterwards" wait_for 20 modprobe -r rdma_rxe
