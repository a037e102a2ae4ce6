#!/bin/bash
# Guest side of scripts/capture-vectors.sh: capture RoCEv2 packets sent by
# the in-tree C rdma_rxe (SEND, WRITE, READ, ATOMIC; IPv4 and IPv6;
# single- and multi-packet) between two namespaces joined by a veth pair,
# into $RXE_LOGDIR/c_rxe_capture.pcap.
set -eu
export RXE_DRIVER=c
. "$(dirname "$0")/lib.sh"
rxe_unload || true
rxe_use_driver c
modprobe rdma_rxe
rxe_driver_is c

ip netns add peer
ip link add veth-a address 02:00:00:00:00:0a type veth peer name veth-b address 02:00:00:00:00:0b
ip link set veth-b netns peer
ip addr add 10.0.0.1/24 dev veth-a
ip addr add 2001:db8::1/64 dev veth-a nodad
ip -n peer addr add 10.0.0.2/24 dev veth-b
ip -n peer addr add 2001:db8::2/64 dev veth-b nodad
ip link set veth-a up; ip -n peer link set veth-b up; ip -n peer link set lo up
rdma link add rxe0 type rxe netdev veth-a
ip netns exec peer rdma link add rxe1 type rxe netdev veth-b
sleep 2

# gid_index DEV PATTERN: index of the GID matching PATTERN.
gid_index() {
    local g
    for g in /sys/class/infiniband/$1/ports/1/gids/*; do
        if grep -q "$2" "$g" 2>/dev/null; then basename "$g"; return; fi
    done
    return 1
}
g4a=$(gid_index rxe0 ffff:0a00:0001); g4b=$(gid_index rxe1 ffff:0a00:0002)
g6a=$(gid_index rxe0 '^2001:0db8'); g6b=$(gid_index rxe1 '^2001:0db8')
echo "gids: v4 $g4a/$g4b v6 $g6a/$g6b"

out=$RXE_LOGDIR/c_rxe_capture.pcap
tcpdump -i veth-a -U -s 0 -w "$out" udp port 4791 2>/dev/null &
tcpdump_pid=$!
sleep 2

# SEND, single packet and multi-packet (MTU 1024), IPv4 and IPv6.
ip netns exec peer ibv_rc_pingpong -d rxe1 -g "$g4b" -s 64 -n 2 > /tmp/s.log 2>&1 &
sleep 2; ibv_rc_pingpong -d rxe0 -g "$g4a" -s 64 -n 2 10.0.0.2; wait
ip netns exec peer ibv_rc_pingpong -d rxe1 -g "$g4b" -s 3000 -m 1024 -n 1 > /tmp/s.log 2>&1 &
sleep 2; ibv_rc_pingpong -d rxe0 -g "$g4a" -s 3000 -m 1024 -n 1 10.0.0.2; wait
ip netns exec peer ibv_rc_pingpong -d rxe1 -g "$g6b" -s 100 -n 1 > /tmp/s.log 2>&1 &
sleep 2; ibv_rc_pingpong -d rxe0 -g "$g6a" -s 100 -n 1 2001:db8::2; wait
# WRITE, READ and ATOMIC through perftest, few iterations.
ip netns exec peer ib_write_bw -d rxe1 -x "$g4b" -s 2100 -n 3 -m 1024 > /tmp/s.log 2>&1 &
sleep 2; ib_write_bw -d rxe0 -x "$g4a" -s 2100 -n 3 -m 1024 10.0.0.2 > /tmp/c.log; wait
ip netns exec peer ib_read_bw -d rxe1 -x "$g4b" -s 1500 -n 3 -m 1024 > /tmp/s.log 2>&1 &
sleep 2; ib_read_bw -d rxe0 -x "$g4a" -s 1500 -n 3 -m 1024 10.0.0.2 > /tmp/c.log; wait
ip netns exec peer ib_atomic_bw -d rxe1 -x "$g4b" -n 3 > /tmp/s.log 2>&1 &
sleep 2; ib_atomic_bw -d rxe0 -x "$g4a" -n 3 10.0.0.2 > /tmp/c.log; wait
sleep 1
kill "$tcpdump_pid"; wait "$tcpdump_pid" 2>/dev/null || true
tcpdump -r "$out" -nn 2>/dev/null | awk '{print $3, $5}' | sort | uniq -c | head
echo "captured $(tcpdump -r "$out" -nn 2>/dev/null | wc -l) packets"
