# rdma link add creates an ib_device bound to the netdev: RoCE v2 port,
# GID table filled by ib_core, port state following the netdev.
. "$(dirname "$0")/lib.sh"

rxe_load || fail "modprobe"
veth_pair
expect "rdma link add rxe0 type rxe netdev veth-a" rdma link add rxe0 type rxe netdev veth-a
expect "link shows ACTIVE/LINK_UP on veth-a" wait_for 10 sh -c \
    "rdma link show rxe0/1 | grep -q 'state ACTIVE physical_state LINK_UP netdev veth-a'"
expect "second link on the same netdev is refused" sh -c \
    "! rdma link add rxe1 type rxe netdev veth-a 2>/dev/null"
expect "ibv_devices lists rxe0" sh -c "ibv_devices | grep -q 'rxe0'"
expect "node GUID from the MAC (EUI-64)" sh -c \
    "ibv_devices | grep rxe0 | grep -q '000000fffe00000a'"
sysdev=/sys/class/infiniband/rxe0
expect "node_type is CA" sh -c "grep -q '^1: CA' $sysdev/node_type"
expect "uverbs ABI version 2" sh -c '
    for u in /sys/class/infiniband_verbs/uverbs*; do
        [ "$(cat $u/ibdev)" = rxe0 ] && exit $([ "$(cat $u/abi_version)" = 2 ] && echo 0 || echo 1)
    done; exit 1' 
expect "one port" test -d $sysdev/ports/1 -a ! -d $sysdev/ports/2
expect "link layer Ethernet" grep -qx Ethernet $sysdev/ports/1/link_layer
expect "GID 0 is the link-local GID" wait_for 10 sh -c \
    "grep -qx 'fe80:0000:0000:0000:0000:00ff:fe00:000a' $sysdev/ports/1/gids/0"
expect "GID 0 type is RoCE v2" sh -c "grep -qx 'RoCE v2' $sysdev/ports/1/gid_attrs/types/0"
expect "an IPv4-mapped GID for 10.0.0.1" wait_for 10 sh -c \
    "grep -qx '0000:0000:0000:0000:0000:ffff:0a00:0001' $sysdev/ports/1/gids/*"
expect "its GID type is RoCE v2" sh -c '
    for g in '"$sysdev"'/ports/1/gids/*; do
        if grep -qx 0000:0000:0000:0000:0000:ffff:0a00:0001 "$g"; then
            grep -qx "RoCE v2" '"$sysdev"'/ports/1/gid_attrs/types/$(basename "$g") && exit 0
        fi
    done; exit 1'
ip link set veth-a down
expect "port DOWN when the netdev is down" wait_for 10 link_state_is rxe0 DOWN
expect "physical state DISABLED when admin down" sh -c \
    "rdma link show rxe0/1 | grep -q 'physical_state DISABLED'"
ip link set veth-a up
expect "port ACTIVE again when it comes back" wait_for 10 link_state_is rxe0 ACTIVE
ip link set veth-b down
expect "port DOWN without carrier" wait_for 10 link_state_is rxe0 DOWN
expect "physical state POLLING when up without carrier" sh -c \
    "rdma link show rxe0/1 | grep -q 'physical_state POLLING'"
ip link set veth-b up
expect "rdma link del rxe0" rdma link del rxe0
expect_not "device is gone" test -e $sysdev
