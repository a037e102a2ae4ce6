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

# gid_index DEV PATTERN: index of the first GID matching PATTERN. One grep
# over the whole table: a process per GID takes minutes under TCG.
gid_index() {
    local g
    g=$(grep -ls "$2" /sys/class/infiniband/$1/ports/1/gids/* | sort -t/ -k9 -n | head -1)
    [ -n "$g" ] && basename "$g"
}
g4a=$(gid_index rxe0 ffff:0a00:0001); g4b=$(gid_index rxe1 ffff:0a00:0002)
g6a=$(gid_index rxe0 '^2001:0db8'); g6b=$(gid_index rxe1 '^2001:0db8')
echo "gids: v4 $g4a/$g4b v6 $g6a/$g6b"

out=$RXE_LOGDIR/c_rxe_capture.pcap
tcpdump -i veth-a -U -s 0 -w "$out" udp port 4791 2>/dev/null &
tcpdump_pid=$!
sleep 2

# pair SERVER_ARGS -- CLIENT_ARGS: run a server in "peer" and its client
# here; a failing pair is reported, the capture goes on.
pair() {
    local server=() client=()
    while [ "$1" != -- ]; do server+=("$1"); shift; done; shift
    client=("$@")
    ip netns exec peer timeout 300 "${server[@]}" > /tmp/server.log 2>&1 &
    local server_pid=$!
    # The server may take seconds to listen under TCG: retry the connect.
    local try ok=false
    for try in 1 2 3 4 5 6; do
        sleep 3
        if timeout 300 "${client[@]}" > /tmp/client.log 2>&1; then ok=true; break; fi
        grep -q "Couldn't connect\|Unable to connect\|Connection refused" /tmp/client.log || break
    done
    if $ok && wait "$server_pid"; then
        echo "ok: ${client[*]}"
    else
        echo "FAILED: ${client[*]}"; cat /tmp/client.log /tmp/server.log
        kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true
    fi
}

# SEND, single packet and multi-packet (MTU 1024), IPv4 and IPv6.
pair ibv_rc_pingpong -d rxe1 -g "$g4b" -s 64 -n 2 -- ibv_rc_pingpong -d rxe0 -g "$g4a" -s 64 -n 2 10.0.0.2
pair ibv_rc_pingpong -d rxe1 -g "$g4b" -s 3000 -m 1024 -n 1 -- ibv_rc_pingpong -d rxe0 -g "$g4a" -s 3000 -m 1024 -n 1 10.0.0.2
pair ibv_rc_pingpong -d rxe1 -g "$g6b" -s 100 -n 1 -- ibv_rc_pingpong -d rxe0 -g "$g6a" -s 100 -n 1 10.0.0.2
# WRITE, READ and ATOMIC through perftest, few iterations.
pair ib_write_bw -d rxe1 -x "$g4b" -s 2100 -n 5 -m 1024 -- ib_write_bw -d rxe0 -x "$g4a" -s 2100 -n 5 -m 1024 10.0.0.2
pair ib_read_bw -d rxe1 -x "$g4b" -s 1500 -n 5 -m 1024 -- ib_read_bw -d rxe0 -x "$g4a" -s 1500 -n 5 -m 1024 10.0.0.2
pair ib_atomic_bw -d rxe1 -x "$g4b" -n 5 -- ib_atomic_bw -d rxe0 -x "$g4a" -n 5 10.0.0.2
sleep 1
kill "$tcpdump_pid"; wait "$tcpdump_pid" 2>/dev/null || true
tcpdump -r "$out" -nn 2>/dev/null | awk '{print $3, $5}' | sort | uniq -c | head
echo "captured $(tcpdump -r "$out" -nn 2>/dev/null | wc -l) packets"

# Tear down in order: the devices first, then the namespace and the veth.
rdma link del rxe0
ip netns exec peer rdma link del rxe1
ip netns delete peer
ip link del veth-a 2>/dev/null || true
