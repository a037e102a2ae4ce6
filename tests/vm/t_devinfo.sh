# ibv_devinfo through Debian's stock librxe: the device opens and reports
# the driver's attributes. The output is kept for cmp_devinfo.sh.
. "$(dirname "$0")/lib.sh"

rxe_load || fail "modprobe"
veth_pair
ip link set veth-a mtu 1500
expect "add rxe0" rdma link add rxe0 type rxe netdev veth-a
wait_for 10 link_state_is rxe0 ACTIVE || fail "port not active"
wait_for 10 sh -c "ibv_devinfo -v -d rxe0 | grep -q 'RoCE v2'"
out=$RXE_LOGDIR/devinfo-$RXE_DRIVER.txt
expect "ibv_devinfo -v -d rxe0" sh -c "ibv_devinfo -v -d rxe0 > $out"
cat "$out"
# "key|value" pairs as ibv_devinfo prints them (whitespace between varies).
while IFS='|' read -r key value; do
    expect "reports $key $value" grep -qE "^[[:space:]]*$key:[[:space:]]+$value\$" "$out"
done <<'PAIRS'
transport|InfiniBand \(0\)
vendor_id|0xffffff
phys_port_cnt|1
state|PORT_ACTIVE \(4\)
link_layer|Ethernet
active_mtu|1024 \(3\)
max_mtu|4096 \(5\)
max_qp_wr|1048576
max_sge|32
max_cqe|32767
atomic_cap|ATOMIC_HCA \(1\)
max_pkeys|64
local_ca_ack_delay|15
PAIRS
# node_desc: "rxe", and writable through sysfs (modify_device), as rxe's.
nd=/sys/class/infiniband/rxe0/node_desc
expect "node_desc is rxe" grep -qx rxe $nd
expect "node_desc written through sysfs" sh -c "echo -n 'rxe-rs node 7' > $nd"
expect "node_desc reads back" grep -qx 'rxe-rs node 7' $nd
expect "GID table lists the link-local RoCE v2 GID" grep -qE "GID\[ *0\]:[[:space:]]+fe80::ff:fe00:a, RoCE v2" "$out"
ip link set veth-a mtu 9000
expect "active_mtu follows the netdev MTU (9000 -> 4096)" wait_for 5 sh -c \
    "ibv_devinfo -d rxe0 | grep -q 'active_mtu:.*4096'"
ip link set veth-a mtu 600
expect "active_mtu follows the netdev MTU (600 -> 512)" wait_for 5 sh -c \
    "ibv_devinfo -d rxe0 | grep -q 'active_mtu:.*512 '"
