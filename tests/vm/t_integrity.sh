# Data integrity over RC (tests/vm/integrity.py: random patterns through
# SEND, SEND with immediate, WRITE, WRITE with immediate and READ, 1 byte to
# 200 KB, 1 to 16 SGEs at odd offsets, every byte and completion checked)
# between two devices in two namespaces joined by a veth pair (one process
# opens both: rdma devices are shared across namespaces by default).
#   t_integrity.sh [loop] [ns]   the topologies to run (default: ns; the
#                                suite's time budget; x_integrity.sh runs both)
. "$(dirname "$0")/lib.sh"
topologies=("${@:-ns}")

/usr/bin/python3 -c "import pyverbs" 2>/dev/null || fail "python3-pyverbs missing"
rxe_load || fail "modprobe"
ip netns add peer
ip link add veth-a address 02:00:00:00:00:0a type veth peer name veth-b address 02:00:00:00:00:0b
ip link set veth-b netns peer
ip addr add 10.0.0.1/24 dev veth-a
ip -n peer addr add 10.0.0.2/24 dev veth-b
ip link set veth-a up; ip -n peer link set lo up; ip -n peer link set veth-b up
expect "add rxe0" rdma link add rxe0 type rxe netdev veth-a
expect "add rxe1 in peer" ip netns exec peer rdma link add rxe1 type rxe netdev veth-b
wait_for 20 link_state_is rxe0 ACTIVE || fail "rxe0 not active"
gid() { # DEV ADDR-SUFFIX: index of the device's IPv4 GID
    grep -ls "$2" /sys/class/infiniband/"$1"/ports/1/gids/* 2>/dev/null | sort -t/ -k9 -n | head -1
}
wait_for 30 gid rxe0 ffff:0a00:0001 || fail "rxe0: no IPv4 GID"
wait_for 30 gid rxe1 ffff:0a00:0002 || fail "rxe1: no IPv4 GID"
g0=$(basename "$(gid rxe0 ffff:0a00:0001)")
g1=$(basename "$(gid rxe1 ffff:0a00:0002)")
py=(/usr/bin/python3 "$(dirname "$0")/integrity.py")
for t in "${topologies[@]}"; do
    start=$SECONDS
    case $t in
        loop) expect "loopback: rxe0 to itself" "${py[@]}" rxe0 "$g0" rxe0 "$g0" ;;
        ns) expect "two namespaces: rxe0 to rxe1" "${py[@]}" rxe0 "$g0" rxe1 "$g1" ;;
        *) fail "unknown topology $t" ;;
    esac
    note "$(cat /tmp/expect.out) ($((SECONDS - start)) s)"
done
rdma link del rxe0
ip netns exec peer rdma link del rxe1
ip netns delete peer
ip link del veth-a 2>/dev/null
true
