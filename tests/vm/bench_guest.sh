#!/bin/bash
# Guest side of scripts/bench.sh: for each driver named, load it and run,
# between two namespaces joined by a veth pair (rxe1 in namespace "peer"
# serves, rxe0 here is the client): ib_write_bw, ib_read_bw and ib_send_bw
# at 64 B, 4 KiB, 64 KiB and 1 MiB (-s), ib_write_bw at 64 KiB with 2, 4
# and 16 QPs, then for a fixed time with 1 and 16 QPs and as two pairs
# at once, and on one device (loopback), and ib_send_lat, ib_write_lat
# and ib_read_lat at 2 B and 4 KiB.
# Writes $RXE_LOGDIR/bench-DRIVER.txt: one "metric value" line per number
# and, with our driver loaded, $RXE_LOGDIR/bench-ceiling.txt (the
# guest's copy and CRC-32 speed, /sys/kernel/debug/rdma_rxe/ceiling,
# read once per round, each reading after a "round N" line)
# ("n/a" if a run failed or timed out). A benchmark, not a test: it does not
# judge the numbers, and ends 0 unless it could not set up at all.
#
#   bench_guest.sh [-n ITERS] [-s "SIZE..."] [-p "PART..."] [-r ROUNDS] DRIVER...
#   ROUNDS (default 1): the drivers run in turn that many times (C, ours,
#   C, ours, ...: a drift during the boot meets both alike), each run's
#   numbers appended to the driver's file.
#   DRIVER: c, rust or rust:P=V,... (ours with those module parameters,
#   as rust:packet_chains=0); PART (default all): write_bw read_bw send_bw
#   scaling latency; not in the default: loopback (write_bw and read_bw
#   64 KiB with both ends on rxe0), placement (the client pinned to
#   each CPU), jumbo (64 KiB bandwidths over a veth at MTU 9000, path
#   MTU 4096)
iters=1000 sizes="64 4096 65536 1048576" rounds=1
parts="write_bw read_bw send_bw scaling latency"
while [ $# -gt 0 ]; do
    case $1 in
        -n) iters=$2; shift 2 ;;
        -s) sizes=$2; shift 2 ;;
        -p) parts=$2; shift 2 ;;
        -r) rounds=$2; shift 2 ;;
        *) break ;;
    esac
done
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

# requester_totals: our driver's module-wide requester totals (which
# timer resent what, summed over destroyed QPs; nothing for the C driver),
# nonzero ones on one line, cumulative.
requester_totals() {
    local f v
    for f in /sys/kernel/debug/rdma_rxe/requester_*; do
        [ -r "$f" ] || continue
        v=$(cat "$f")
        [ "$v" = 0 ] || printf '%s %s ' "${f##*/requester_}" "$v"
    done
}

# perf NAME PROG ARGS...: run PROG as server in "peer" and client here;
# leaves the client's output in $RXE_LOGDIR/bench-$driver-NAME.log, then
# both devices' counters (retransmissions, NAKs, drops tell a slow run's
# cause).
# With LOOPBACK=1 the server runs here on rxe0 too (client and server on
# one device, the driver's loopback path); PORT= picks the port. With
# BARRIER=DIR the client starts only once DIR/go exists (after this run
# created DIR/NAME.ready, its server listening), and the client's start
# and end times (s since the epoch) go to DIR/NAME.span: runs meant to
# overlap start together, and the span tells whether they did.
# Returns 75 when perftest's clock calibration failed in either process
# (its `Correlation coefficient r^2: ... < 0.9` under TCG's uneven
# timing): that run's times and rates are void (inf, 0.00), and the
# callers run it again (see `clock_retries`).
perf() {
    local name=$1 prog=$2; shift 2
    local log=$RXE_LOGDIR/bench-$driver-$name.log port=${PORT:-$((19000 + RANDOM % 1000))}
    local ns=(ip netns exec peer) sdev=rxe1 sgid=$g1 addr=10.0.0.2
    if [ -n "${LOOPBACK:-}" ]; then
        ns=() sdev=rxe0 sgid=$g0 addr=10.0.0.1
    fi
    "${ns[@]}" timeout -k 5 $((client_timeout + 100)) "$prog" -d $sdev -x "$sgid" -p $port -F "$@" \
        > "$log.server" 2>&1 &
    local spid=$!
    wait_for 120 sh -c "${ns[*]} ss -Htln 'sport = :$port' | grep -q :$port"
    if [ -n "${BARRIER:-}" ]; then
        touch "$BARRIER/$name.ready"
        wait_for 300 test -e "$BARRIER/go"
    fi
    local t0=$SECONDS s0=$EPOCHREALTIME
    ${CLIENT_CPU:+taskset -c $CLIENT_CPU} timeout -k 5 "$client_timeout" "$prog" -d rxe0 -x "$g0" -p $port -F "$@" $addr > "$log" 2>&1
    local rc=$?
    [ -z "${BARRIER:-}" ] || echo "$s0 $EPOCHREALTIME" > "$BARRIER/$name.span"
    echo "$name: client exit $rc after $((SECONDS - t0)) s"
    echo "  rxe0 counters: $(counters rxe0)"
    echo "  rxe1 counters: $(counters rxe1 peer)"
    local end=$((SECONDS + 30))
    while kill -0 $spid 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.5; done
    kill $spid 2>/dev/null; wait $spid 2>/dev/null
    echo "  requester totals so far: $(requester_totals)"
    if [ "$rc" = 0 ] && grep -qs 'Correlation coefficient' "$log" "$log.server"; then
        echo "  $name: perftest's clock calibration failed, its numbers are void"
        return 75
    fi
    return $rc
}

# How many times a run whose clock calibration failed is run again.
clock_retries=3

# col LOG SIZE N: column N of the result line that starts with SIZE.
col() {
    awk -v s="$2" -v n="$3" '$1 == s && NF >= n && $2 ~ /^[0-9]+$/ { v = $n } END { print (v == "" ? "n/a" : v) }' "$1"
}

# busy: CPU seconds spent outside idle and iowait so far, all CPUs (the
# first line of /proc/stat, in USER_HZ ticks).
busy() {
    awk '$1 == "cpu" { printf "%d", ($2 + $3 + $4 + $7 + $8 + $9) }' /proc/stat
}

# bw NAME SIZE ITERS [ARGS...]: one bandwidth run (ib_NAME, e.g.
# write_bw); records average and peak MB/s, Mpps and the CPU seconds per
# GB moved (both ends run in this guest, so that is the whole cost).
bw() {
    local name=$1 size=$2 n=$3; shift 3
    local tag=${name}_${size}${BW_TAG:-} b0 b1 log rc try
    for try in $(seq 0 $clock_retries); do
        b0=$(busy)
        perf "$tag" "ib_$name" -s "$size" -n "$n" "$@"
        rc=$?
        [ "$rc" = 75 ] || break
    done
    if [ "$rc" = 0 ]; then
        b1=$(busy)
        log=$RXE_LOGDIR/bench-$driver-$tag.log
        echo "${tag}_avg_MBps $(col "$log" "$size" 4)" >> "$out"
        echo "${tag}_peak_MBps $(col "$log" "$size" 3)" >> "$out"
        echo "${tag}_Mpps $(col "$log" "$size" 5)" >> "$out"
        awk -v t=$((b1 - b0)) -v hz="$(getconf CLK_TCK)" -v bytes="$((size * n * ${BW_QPS:-1}))" \
            -v m="${tag}_cpu_s_per_GB" 'BEGIN { if (bytes > 0) printf "%s %.2f\n", m, t / hz / (bytes / 1e9) }' >> "$out"
    else
        echo "ib_$name -s $size failed"; tail -5 "$RXE_LOGDIR/bench-$driver-$tag.log"
    fi
}

# lat NAME SIZE: one latency run; records typical, average and p99.
lat() {
    local name=$1 size=$2 tag=${1}_${2} log rc try
    for try in $(seq 0 $clock_retries); do
        perf "$tag" "ib_$name" -s "$size" -n "$lat_iters"
        rc=$?
        [ "$rc" = 75 ] || break
    done
    if [ "$rc" = 0 ]; then
        log=$RXE_LOGDIR/bench-$driver-$tag.log
        echo "${tag}_typical_us $(col "$log" "$size" 5)" >> "$out"
        echo "${tag}_avg_us $(col "$log" "$size" 6)" >> "$out"
        echo "${tag}_p99_us $(col "$log" "$size" 8)" >> "$out"
    else
        echo "ib_$name -s $size failed"; tail -5 "$RXE_LOGDIR/bench-$driver-$tag.log"
    fi
}

# pairs TAG N [ARGS...]: N ib_write_bw 64 KiB pairs (perftest ARGS
# added, as -q 16) at once, each its own processes, each for
# PAIRS_SECONDS (8) of transfer (perftest's duration mode: a pair's
# number is its rate while the others run too). Every server listens
# before any client starts, and the clients start together: a pair that
# runs alone for most of its time (as when the second was started a
# second after the first, and a 1000-message run lasts about that long)
# reports its solo bandwidth, and the sum of two doubled one pair's.
# Records the sum of perftest's averages and, for more than one pair, the
# overlap: the share of the time from the first client's start to the
# last one's end during which all of them ran. One pair measured so is
# what the others compare with. Metrics: write_bw_65536_D_TAG_...
pairs() {
    local tag=$1 n=$2 secs=${PAIRS_SECONDS:-8} barrier i pids logs try void
    shift 2
    for try in $(seq 0 $clock_retries); do
        pids=() logs=() void=
        barrier=$(mktemp -d)
        for i in $(seq 1 "$n"); do
            logs+=("$RXE_LOGDIR/bench-$driver-write_bw_65536_D_${tag}_$i.log")
            BARRIER=$barrier PORT=$((19900 + i)) perf "write_bw_65536_D_${tag}_$i" ib_write_bw \
                -s 65536 -D "$secs" "$@" > "$barrier/out$i" &
            pids+=($!)
        done
        wait_for 300 sh -c "cd $barrier && [ \$(ls ./*.ready 2>/dev/null | wc -l) -eq $n ]"
        touch "$barrier/go"
        for i in "${pids[@]}"; do wait "$i" || [ $? != 75 ] || void=1; done
        cat "$barrier"/out*
        [ -n "$void" ] || break
        rm -rf "$barrier"
    done
    if [ -n "$void" ]; then
        echo "pairs $tag: perftest's clock calibration failed $((clock_retries + 1)) times"
        return
    fi
    awk '$1 == 65536 && $2 ~ /^[0-9]+$/ { s += $4; k++ } END { if (k == n) printf "%s %.2f\n", m, s }' \
        n="$n" m="write_bw_65536_D_${tag}_sum_avg_MBps" "${logs[@]}" >> "$out"
    [ "$n" -lt 2 ] || cat "$barrier"/*.span 2>/dev/null |
        awk -v n="$n" -v m="write_bw_65536_D_${tag}_overlap" '
            NR == 1 || $1 < lo { lo = $1 } NR == 1 || $2 > hi { hi = $2 }
            NR == 1 || $1 > ms { ms = $1 } NR == 1 || $2 < me { me = $2 }
            END { if (NR == n && hi > lo) printf "%s %.2f\n", m, (me > ms ? me - ms : 0) / (hi - lo) }' >> "$out"
    rm -rf "$barrier"
}

# Iterations per size: ITERS at 64 KiB, as many bytes (within 100..5000
# messages) at the others; latency runs take ITERS round trips.
iters_for() {
    awk -v n="$iters" -v s="$1" 'BEGIN { v = int(n * 65536 / s); if (v > 5000) v = 5000; if (v < 100) v = 100; print v }'
}
lat_iters=$iters

# wanted PART: whether PART is among the parts asked for.
wanted() {
    case " $parts " in *" $1 "*) return 0 ;; esac
    return 1
}

# Each driver's numbers, every round's appended (scripts/bench.sh takes
# the median); a driver named twice adds to the same file.
for driver in "$@"; do : > "$RXE_LOGDIR/bench-$driver.txt"; done
: > "$RXE_LOGDIR/bench-ceiling.txt"
for round in $(seq 1 "$rounds"); do
for driver in "$@"; do
    out=$RXE_LOGDIR/bench-$driver.txt
    echo "== driver $driver (round $round of $rounds)"
    teardown
    # rust:P=V,...: ours loaded with those module parameters.
    module=${driver%%:*} args=
    [ "$module" = "$driver" ] || args=${driver#*:}
    if [ "$module" = rust ] && [ ! -f "$RXE_KO" ]; then
        echo "no $RXE_KO: skipping $driver"; continue
    fi
    rxe_use_driver "$module"
    # shellcheck disable=SC2086
    if ! rxe_driver_is "$module" || ! modprobe rdma_rxe ${args//,/ } || ! setup; then
        echo "could not set up driver $driver"; teardown; continue
    fi
    if [ "$driver" = rust ]; then
        # The guest's copy and CRC ceiling (src/ceiling.rs), while our
        # module is loaded, once per round: scripts/bench.sh takes the
        # highest reading of the boot.
        { echo "round $round"; cat /sys/kernel/debug/rdma_rxe/ceiling; } >> "$RXE_LOGDIR/bench-ceiling.txt" 2>&1
    fi
    # A short unrecorded run first: the first run after a boot or a load
    # was seen slower than the same run later in the boot.
    perf warmup ib_write_bw -s 65536 -n 100 > /dev/null
    start=$SECONDS
    for op in write_bw read_bw send_bw; do
        wanted "$op" || continue
        for size in $sizes; do
            bw "$op" "$size" "$(iters_for "$size")"
        done
    done
    # Scaling: more QPs in one pair.
    if wanted scaling; then
        for q in 2 4 16; do
            BW_TAG=_q$q BW_QPS=$q bw write_bw 65536 "$(( $(iters_for 65536) / q + 1 ))" -q $q
        done
        # The same in perftest's duration mode, each for the same time:
        # one QP, 16 QPs in one pair, and two pairs at once.
        pairs 1qp 1
        pairs 16qp 1 -q 16
        pairs 2pairs 2
        # Loopback: both ends on rxe0.
        LOOPBACK=1 BW_TAG=_loopback bw write_bw 65536 "$(iters_for 65536)"
    fi
    # Loopback alone (not in the default; `scaling` has its write_bw):
    # both ends on rxe0, write and read.
    if wanted loopback; then
        LOOPBACK=1 BW_TAG=_loopback bw write_bw 65536 "$(iters_for 65536)"
        LOOPBACK=1 BW_TAG=_loopback bw read_bw 65536 "$(iters_for 65536)"
    fi
    # Placement: the client (the polling application) pinned to each CPU
    # in turn; an unpinned run lands on either, whence boot-to-boot spread.
    if wanted placement; then
        for cpu in $(seq 0 $(($(nproc) - 1))); do
            CLIENT_CPU=$cpu BW_TAG=_cpu$cpu bw write_bw 65536 "$(iters_for 65536)"
            CLIENT_CPU=$cpu BW_TAG=_cpu$cpu bw read_bw 65536 "$(iters_for 65536)"
        done
    fi
    # Jumbo frames: the veth pair at MTU 9000, so path MTU 4096 (what
    # perftest takes from the port), a quarter of the packets per byte.
    if wanted jumbo; then
        two_namespaces_down
        if two_namespaces 9000 && wait_for 10 sh -c "ibv_devinfo -d rxe0 | grep -q 'active_mtu:.*4096'"; then
            for op in write_bw read_bw send_bw; do
                BW_TAG=_mtu4096 bw "$op" 65536 "$(iters_for 65536)"
            done
        else
            echo "jumbo: could not set up the veth pair at MTU 9000"
        fi
        two_namespaces_down
        setup || { echo "could not set up driver $driver again"; teardown; continue; }
    fi
    wanted latency &&
    for op in send_lat write_lat read_lat; do
        for size in 2 4096; do
            lat "$op" "$size"
        done
    done
    echo "driver $driver: $((SECONDS - start)) s"
    cat "$out"
    teardown
done
done
exit 0
