# A flood of packets with a bad ICRC from the network (issue 10, item 12):
# each is dropped, the kernel log gains a bounded number of lines (the
# warning is rate-limited: a remote host decides how many arrive), and ours
# counts every drop in debugfs (rdma_rxe/rcvd_drop_bad_icrc; the device's
# 17 counters stay the C driver's). rxe0 is on veth-a (10.0.0.1); the
# sender is a plain UDP socket in namespace "peer" behind veth-b
# (10.0.0.2). The C driver logs bad ICRCs only at debug level and counts
# them nowhere: for it the log bound is checked, the counter is not.
. "$(dirname "$0")/lib.sh"

N=300
rxe_load || fail "modprobe rdma_rxe"
ip netns add peer || fail "netns"
ip link add veth-a address 02:00:00:00:00:0a type veth peer name veth-b address 02:00:00:00:00:0b
ip link set veth-b netns peer
ip addr add 10.0.0.1/24 dev veth-a
ip -n peer addr add 10.0.0.2/24 dev veth-b
ip link set veth-a up
ip -n peer link set veth-b up
expect "add rxe0" rdma link add rxe0 type rxe netdev veth-a
wait_for 20 link_state_is rxe0 ACTIVE || fail "port not active"

counter=/sys/kernel/debug/rdma_rxe/rcvd_drop_bad_icrc
before=$(cat "$counter" 2>/dev/null || echo none)
lines_before=$(dmesg | grep -c 'bad ICRC')

expect "send $N packets with a bad ICRC from the peer namespace" \
    ip netns exec peer "$PY" -c "
import socket, struct
bth = struct.pack('>BBHII', 0x04, 0, 0xffff, 0x11, 0)  # RC SEND ONLY to QP 0x11
pkt = bth + b'\x5a' * 32 + b'\xde\xad\xbe\xef'          # ICRC: wrong
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range($N):
    s.sendto(pkt, ('10.0.0.1', 4791))
"
sleep 2
lines=$(( $(dmesg | grep -c 'bad ICRC') - lines_before ))
[ "$lines" -le 30 ] || fail "$N bad packets logged $lines lines (not rate-limited)"
note "ok: $N bad packets, $lines log lines"

if [ "$RXE_DRIVER" = rust ]; then
    [ "$before" != none ] || fail "no debugfs counter $counter"
    after=$(cat "$counter")
    [ $((after - before)) -ge $((N / 3)) ] || fail "drops not counted: $counter $before -> $after"
    note "ok: drops counted ($counter $before -> $after)"
else
    note "C driver: bad ICRCs are counted nowhere; the log bound was checked"
fi
expect "device can be removed" rdma link del rxe0
