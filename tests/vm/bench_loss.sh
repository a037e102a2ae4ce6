#!/bin/bash
# Guest side of scripts/bench-loss.sh: each driver named, under netem loss
# on both ends of the veth pair (rxe1 in namespace "peer" serves, rxe0 here
# is the client):
#   ibv_rc_pingpong -c, 4 KiB and 64 KiB, ITERS round trips, at each loss
#   rate of LOSSES; ib_write_bw and ib_read_bw 64 KiB at 0 and 1% loss.
# Writes $RXE_LOGDIR/bench-loss-DRIVER.txt, one line per run:
#   CASE SECONDS|dnf COUNTERS...
# where dnf means the client did not finish within its bound (that bound is
# printed, never a made-up number), and COUNTERS are the client device's
# transport counters that moved during the run (retries, NAKs, duplicates).
# A benchmark, not a test: it judges nothing and ends 0 unless it could not
# set up at all.
#
#   bench_loss.sh [-n ITERS] [-b BOUND_S] [-l "LOSS%..."] DRIVER...
#                                                      DRIVER: c or rust
iters=100 bound=120 losses="0 0.1 1 5"
while [ $# -gt 0 ]; do
    case $1 in
        -n) iters=$2; shift 2 ;;
        -b) bound=$2; shift 2 ;;
        -l) losses=$2; shift 2 ;;
        *) break ;;
    esac
done
[ $# -gt 0 ] || set -- c rust
export RXE_DRIVER=$1
. "$(dirname "$0")/lib.sh"
set -u

netem_both() { # LOSS%: netem loss on both veth ends; 0 removes it
    tc qdisc del dev veth-a root 2>/dev/null
    ip netns exec peer tc qdisc del dev veth-b root 2>/dev/null
    [ "$1" = 0 ] && return 0
    tc qdisc add dev veth-a root netem loss "$1%" &&
        ip netns exec peer tc qdisc add dev veth-b root netem loss "$1%"
}

# snapshot DEV [NS]: "name value" lines of the device's transport counters.
snapshot() {
    ${2:+ip netns exec $2} rdma statistic show link "$1/1" 2>/dev/null |
        tr ' ' '\n' | awk 'prev ~ /^[a-z_]+$/ && $1 ~ /^[0-9]+$/ { print prev, $1 } { prev = $1 }'
}

# moved BEFORE AFTER: the counters that changed, as name=delta.
moved() {
    awk 'NR == FNR { b[$1] = $2; next }
         $1 ~ /retry|seq_err|duplicate|out_of_seq|rnr|sent_pkts|rcvd_pkts/ && $2 != b[$1] { printf "%s=%d ", $1, $2 - b[$1] }' "$1" "$2"
}

# run CASE PROG ARGS...: server in "peer", client here, bounded by $bound.
run() {
    local name=$1 prog=$2; shift 2
    local log=$RXE_LOGDIR/bench-loss-$driver-$name.log port=$((19000 + RANDOM % 1000))
    local peer_args=(-d rxe1 -g "$g1") client_args=(-d rxe0 -g "$g0")
    if [ "$prog" != ibv_rc_pingpong ]; then
        peer_args=(-d rxe1 -x "$g1" -F) client_args=(-d rxe0 -x "$g0" -F)
    fi
    ip netns exec peer timeout -k 5 $((bound + 60)) "$prog" "${peer_args[@]}" -p $port "$@" \
        > "$log.server" 2>&1 &
    local spid=$!
    if ! wait_for 120 sh -c "ip netns exec peer ss -Htln 'sport = :$port' | grep -q :$port"; then
        echo "$name setup-failed" >> "$out"; kill $spid 2>/dev/null; return
    fi
    snapshot rxe0 > /tmp/bl.before
    local t0 ns
    t0=$(date +%s%N)
    timeout -k 5 "$bound" "$prog" "${client_args[@]}" -p $port "$@" 10.0.0.2 > "$log" 2>&1
    local rc=$?
    ns=$(( $(date +%s%N) - t0 ))
    snapshot rxe0 > /tmp/bl.after
    local took
    took=$(awk -v n="$ns" 'BEGIN { printf "%.1f", n / 1e9 }')
    local what=$took
    if [ $rc = 124 ] || [ $rc = 137 ]; then what="dnf(${bound}s)"
    elif [ $rc != 0 ]; then what="failed(exit-$rc)"; fi
    local extra=
    if [ "$prog" != ibv_rc_pingpong ] && [ $rc = 0 ]; then
        extra="MBps=$(awk '$1 == 65536 && $2 ~ /^[0-9]+$/ { v = $4 } END { print (v == "" ? "n/a" : v) }' "$log")"
    fi
    echo "$name $what $extra $(moved /tmp/bl.before /tmp/bl.after)" | tee -a "$out"
    local end=$((SECONDS + 30))
    while kill -0 $spid 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.5; done
    kill $spid 2>/dev/null; wait $spid 2>/dev/null
}

for driver in "$@"; do
    out=$RXE_LOGDIR/bench-loss-$driver.txt
    : > "$out"
    echo "== driver $driver"
    two_namespaces_down; rxe_unload >/dev/null 2>&1
    # rust:P=V,...: ours loaded with those module parameters.
    module=${driver%%:*} args=
    [ "$module" = "$driver" ] || args=${driver#*:}
    if [ "$module" = rust ] && [ ! -f "$RXE_KO" ]; then
        echo "no $RXE_KO: skipping $driver"; continue
    fi
    rxe_use_driver "$module"
    if ! rxe_driver_is "$module" || ! modprobe rdma_rxe ${args//,/ } || ! two_namespaces 9000; then
        echo "could not set up driver $driver"; two_namespaces_down; continue
    fi
    for loss in $losses; do
        netem_both "$loss" || { echo "netem loss $loss% failed"; continue; }
        run "pingpong_4k_loss$loss" ibv_rc_pingpong -c -s 4096 -n "$iters"
        run "pingpong_64k_loss$loss" ibv_rc_pingpong -c -s 65536 -n "$iters"
    done
    for loss in 0 1; do
        netem_both "$loss"
        run "write_bw_64k_loss$loss" ib_write_bw -s 65536 -n "$iters"
        run "read_bw_64k_loss$loss" ib_read_bw -s 65536 -n "$iters"
    done
    netem_both 0
    two_namespaces_down
    rxe_unload >/dev/null 2>&1
done
exit 0
