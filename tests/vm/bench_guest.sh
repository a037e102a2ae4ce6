#!/bin/bash
# Guest side of scripts/bench.sh: for each driver named, load it and run
# ib_write_bw -s 65536 and ib_send_lat -s 2 between two namespaces joined by
# a veth pair (rxe1 in namespace "peer" serves, rxe0 here is the client).
# Writes $RXE_LOGDIR/bench-DRIVER.txt: one "metric value" line per number
# ("n/a" if a run failed or timed out). A benchmark, not a test: it does not
# judge the numbers, and ends 0 unless it could not set up at all.
#
#   bench_guest.sh [-n ITERS] DRIVER...      DRIVER: c or rust
iters=1000
if [ "${1:-}" = -n ]; then iters=$2; shift 2; fi
[ $# -gt 0 ] || set -- c rust
export RXE_DRIVER=$1
. "$(dirname "$0")/lib.sh"
set -u

setup() {
    two_namespaces
}

teardown() {
    two_namespaces_down
    rxe_unload >/dev/null 2>&1
}

# A client may take this long: about 0.25 s per 64 KiB message under TCG
# (the C driver took 213 s for 1000), with room to spare.
client_timeout=$((120 + iters * 2 / 5))

# counters DEV [NS]: the device's nonzero transport counters on one line.
counters() {
    ${2:+ip netns exec $2} rdma statistic show link "$1/1" 2>/dev/null |
        tr ' ' '\n' | awk 'NR > 2 && prev != "" && $1 ~ /^[0-9]+$/ && $1 > 0 { printf "%s %s ", prev, $1 } { prev = $1 }'
}

# perf NAME PROG ARGS...: run PROG as server in "peer" and client here;
# leaves the client's output in $RXE_LOGDIR/bench-$driver-NAME.log, then
# both devices' counters (retransmissions, NAKs, drops tell a slow run's
# cause).
perf() {
    local name=$1 prog=$2; shift 2
    local log=$RXE_LOGDIR/bench-$driver-$name.log port=$((19000 + RANDOM % 1000))
    ip netns exec peer timeout -k 5 $((client_timeout + 100)) "$prog" -d rxe1 -x "$g1" -p $port -F "$@" \
        > "$log.server" 2>&1 &
    local spid=$!
    wait_for 120 sh -c "ip netns exec peer ss -Htln 'sport = :$port' | grep -q :$port"
    local t0=$SECONDS
    timeout -k 5 "$client_timeout" "$prog" -d rxe0 -x "$g0" -p $port -F "$@" 10.0.0.2 > "$log" 2>&1
    local rc=$?
    echo "$name: client exit $rc after $((SECONDS - t0)) s"
    echo "  rxe0 counters: $(counters rxe0)"
    echo "  rxe1 counters: $(counters rxe1 peer)"
    local end=$((SECONDS + 30))
    while kill -0 $spid 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.5; done
    kill $spid 2>/dev/null; wait $spid 2>/dev/null
    return $rc
}

# col LOG SIZE N: column N of the result line that starts with SIZE.
col() {
    awk -v s="$2" -v n="$3" '$1 == s && NF >= n && $2 ~ /^[0-9]+$/ { v = $n } END { print (v == "" ? "n/a" : v) }' "$1"
}

for driver in "$@"; do
    out=$RXE_LOGDIR/bench-$driver.txt
    : > "$out"
    echo "== driver $driver"
    teardown
    if [ "$driver" = rust ] && [ ! -f "$RXE_KO" ]; then
        echo "no $RXE_KO: skipping rust"; continue
    fi
    rxe_use_driver "$driver"
    if ! rxe_driver_is "$driver" || ! rxe_load || ! setup; then
        echo "could not set up driver $driver"; teardown; continue
    fi
    start=$SECONDS
    if perf write_bw ib_write_bw -s 65536 -n "$iters"; then
        log=$RXE_LOGDIR/bench-$driver-write_bw.log
        echo "ib_write_bw_64k_avg_MBps $(col "$log" 65536 4)" >> "$out"
        echo "ib_write_bw_64k_peak_MBps $(col "$log" 65536 3)" >> "$out"
        echo "ib_write_bw_64k_Mpps $(col "$log" 65536 5)" >> "$out"
    else
        echo "ib_write_bw failed (rc $?)"; tail -5 "$RXE_LOGDIR/bench-$driver-write_bw.log"
    fi
    if perf send_lat ib_send_lat -s 2 -n "$iters"; then
        log=$RXE_LOGDIR/bench-$driver-send_lat.log
        echo "ib_send_lat_2_typical_us $(col "$log" 2 5)" >> "$out"
        echo "ib_send_lat_2_avg_us $(col "$log" 2 6)" >> "$out"
        echo "ib_send_lat_2_p99_us $(col "$log" 2 8)" >> "$out"
    else
        echo "ib_send_lat failed (rc $?)"; tail -5 "$RXE_LOGDIR/bench-$driver-send_lat.log"
    fi
    echo "driver $driver: $((SECONDS - start)) s"
    cat "$out"
    teardown
done
exit 0
