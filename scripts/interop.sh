#!/usr/bin/env bash
# Wire interop (issue 13): two guests of the test kernel, one vCPU each,
# joined by a virtual wire (QEMU "dgram" netdevs sending each other UDP
# datagrams on 127.0.0.1), each with its own rdma_rxe: for every pair SERVER:CLIENT of
# drivers, the server guest runs each case's server side and the client
# guest its client side (tests/interop/guest.sh); the two meet through
# files in the pair's log directory, which both guests mount read-write.
# Prints one line per case and pair and the summary "N passed, N failed";
# exits non-zero on any failure.
#
#   scripts/interop.sh [LOGDIR]
#   RXE_INTEROP_PAIRS="c:rust rust:c"  server:client driver pairs, one
#                                      after the other ("c:c" and
#                                      "rust:rust" are the controls)
#   RXE_INTEROP_CASES="..."            the cases (default: every one;
#                                      tests/interop/guest.sh names them)
#   RXE_INTEROP_LOSS=0                 netem loss (%) on both guests' NICs
#   RXE_INTEROP_BOUND=240              seconds one case may take
#   RXE_INTEROP_CAPTURE=1              capture each case (both sides)
#   RXE_INTEGRITY_QUICK=1              integrity2.py's quick set (the
#                                      default here; empty for the full one)
#
# Needs the test kernel and our module (scripts/setup.sh, make modules).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/lib.sh"
logdir=${1:-$here/logs/interop-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$logdir"
logdir=$(cd "$logdir" && pwd)
pairs=${RXE_INTEROP_PAIRS:-c:rust rust:c}
all_cases="rc_pingpong_4k_mtu1024 rc_pingpong_4k_mtu4096 rc_pingpong_64k_mtu1024
    rc_pingpong_64k_mtu4096 rc_pingpong_1m_mtu1024 rc_pingpong_1m_mtu4096 srq_pingpong
    ud_pingpong rping ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw_cas ib_atomic_bw_faa
    ib_send_lat integrity"
read -r -a cases <<< "$(echo ${RXE_INTEROP_CASES:-$all_cases})"
[ -f "$here/rdma_rxe.ko" ] || { echo "interop: no rdma_rxe.ko: run make modules" >&2; exit 1; }

# A free UDP port on 127.0.0.1 for one end of the wire.
free_port() {
    python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# wire_opts SIDE MINE THEIRS: vng options for a guest's end of the wire:
# a QEMU "dgram" netdev that sends each frame as one UDP datagram from
# 127.0.0.1:MINE to 127.0.0.1:THEIRS, and a virtio NIC on it whose MAC
# names the side (1 the server, 2 the client). Datagrams, not a "stream"
# netdev's TCP connection: over TCP the frames met Nagle's algorithm and
# delayed ACKs, about 40 ms per packet, which set off the C driver's
# retry timer (67 ms) on every message.
wire_opts() {
    echo "--qemu-opts=-netdev" \
        "--qemu-opts=dgram,id=wire,local.type=inet,local.host=127.0.0.1,local.port=$2,remote.type=inet,remote.host=127.0.0.1,remote.port=$3" \
        "--qemu-opts=-device --qemu-opts=virtio-net-pci,netdev=wire,mac=52:54:00:7e:00:0$1"
}

# A frame QEMU cannot hand to a guest yet (its receive ring full: a
# guest under TCG drains it slowly) waits in the host's UDP socket; with
# the default 208 KiB receive buffer a 64 KiB message's burst overflowed
# it and the wire lost packets that no test asked to lose. 16 MiB for the
# sockets the QEMUs open (restored at exit).
rmem=$(sysctl -n net.core.rmem_default)
if [ "$rmem" -lt $((16 << 20)) ]; then
    sysctl -q -w net.core.rmem_max=$(( $(sysctl -n net.core.rmem_max) > (16 << 20) ?
        $(sysctl -n net.core.rmem_max) : (16 << 20) ))
    sysctl -q -w net.core.rmem_default=$((16 << 20))
    trap 'sysctl -q -w net.core.rmem_default='"$rmem" EXIT
fi

: > "$logdir/results.txt"
for pair in $pairs; do
    s=${pair%%:*} c=${pair#*:}
    dir=$logdir/$s-$c
    rm -rf "$dir"; mkdir -p "$dir"
    # The guests see only the log directory: the settings go there.
    {
        echo "RXE_INTEROP_LOSS=${RXE_INTEROP_LOSS:-0}"
        echo "RXE_INTEROP_BOUND=${RXE_INTEROP_BOUND:-240}"
        echo "RXE_INTEROP_CAPTURE=${RXE_INTEROP_CAPTURE:-}"
        echo "RXE_INTEGRITY_QUICK=${RXE_INTEGRITY_QUICK-1}"
    } > "$dir/interop.env"
    p1=$(free_port) p2=$(free_port)
    while [ "$p2" = "$p1" ]; do p2=$(free_port); done
    echo "interop: $s server, $c client (wire: UDP 127.0.0.1:$p1 <-> :$p2): ${cases[*]}"
    RXE_VM_TAG=server RXE_VM_CPUS=1 RXE_VM_MEMORY=2G RXE_VM_QUIET=1 \
        RXE_VNG_OPTS="$(wire_opts 1 "$p1" "$p2")" RXE_VM_TIMEOUT=${RXE_VM_TIMEOUT:-5200} \
        "$here/scripts/vm.sh" "$dir" "$here/tests/interop/guest.sh" server "$s" "${cases[@]}" \
        > "$dir/vm-server.out" 2>&1 &
    spid=$!
    RXE_VM_TAG=client RXE_VM_CPUS=1 RXE_VM_MEMORY=2G RXE_VM_QUIET=1 \
        RXE_VNG_OPTS="$(wire_opts 2 "$p2" "$p1")" RXE_VM_TIMEOUT=${RXE_VM_TIMEOUT:-5200} \
        "$here/scripts/vm.sh" "$dir" "$here/tests/interop/guest.sh" client "$c" "${cases[@]}" \
        > "$dir/vm-client.out" 2>&1 &
    cpid=$!
    wait "$spid"; src=$?
    wait "$cpid"; crc=$?
    for side in server client; do
        cat "$dir/guest-$side.log" 2> /dev/null | sed "s/^/  [$s-$c $side] /" | grep -E 'PASS|FAIL|set-up|driver' || true
    done
    # A case passes when both sides passed it.
    for k in "${cases[@]}"; do
        sv=$(awk -F'\t' -v k="$k" '$2 == k { print $1 }' "$dir/interop-server.txt" 2> /dev/null)
        cv=$(awk -F'\t' -v k="$k" '$2 == k { print $1 }' "$dir/interop-client.txt" 2> /dev/null)
        t=$(awk -F'\t' -v k="$k" '$2 == k { print $3 }' "$dir/interop-client.txt" 2> /dev/null)
        if [ "$sv" = PASS ] && [ "$cv" = PASS ]; then v=PASS; else v=FAIL; fi
        printf '%s\t%s-server/%s-client\t%s\t%s\t(server %s, client %s)\n' \
            "$v" "$s" "$c" "$k" "${t:-?}" "${sv:-none}" "${cv:-none}" >> "$logdir/results.txt"
    done
    for side in server client; do
        tail -3 "$dir/vm-$side.out" | grep -E '^vm-' | sed "s/^/  [$s-$c] /"
    done
    [ "$src" = 0 ] && [ "$crc" = 0 ] || echo "  [$s-$c] guest exit: server $src, client $crc"
done

echo
column -t -s $'\t' "$logdir/results.txt" 2> /dev/null || cat "$logdir/results.txt"
passed=$(grep -c '^PASS' "$logdir/results.txt")
failed=$(grep -c '^FAIL' "$logdir/results.txt")
echo "interop: $passed passed, $failed failed (logs: $logdir)"
[ "$failed" = 0 ]
