#!/usr/bin/env bash
# Benchmark the C rdma_rxe against ours in one VM boot of the benchmark
# kernel (TCG, so the numbers only compare the two drivers with each other):
# bandwidth (write, read, send at 64 B to 1 MiB, write with 16 QPs, with
# the CPU seconds per GB moved) and latency (send, write, read at 2 B and
# 4 KiB) between two namespaces joined by a veth pair
# (tests/vm/bench_guest.sh). Prints a table: metric, C, ours, ratio ours/C;
# then the guest's copy and CRC ceiling and the 64 KiB bandwidths as a
# fraction of it.
# Never fails on slowness; exits non-zero only if the VM run itself failed.
#
#   scripts/bench.sh [LOGDIR]
#   RXE_BENCH_DRIVERS="c rust"   the drivers to run (default both; "c" alone
#                                checks the benchmark itself); a driver
#                                rust:P=V,... is ours loaded with those
#                                module parameters (rust:packet_chains=0:
#                                no packet chains), printed in two more
#                                columns
#   RXE_BENCH_ITERS=1000         iterations per run (at 64 KiB; the
#                                same bytes at the other sizes)
#   RXE_BENCH_SIZES="64 4096 65536 1048576"  bandwidth message sizes
#   RXE_BENCH_ROUNDS=1           run the drivers in turn this many times
#                                in the boot; the table shows each
#                                number's median (one boot's runs of one
#                                build differ by up to 1.5x)
#   RXE_BENCH_PARTS="write_bw read_bw send_bw scaling latency"  what to run
#                                (also "placement": write_bw and read_bw
#                                64 KiB with the client pinned to each
#                                CPU in turn, and "jumbo": the 64 KiB
#                                bandwidths over a veth at MTU 9000, path
#                                MTU 4096; neither run by default)
#   RXE_BENCH_KERNEL=bench       the kernel to boot: "bench" (default), the
#                                benchmark kernel without debug options
#                                (scripts/build-kernel.sh bench, built
#                                first if not cached, about 12 minutes),
#                                with our module built for it by
#                                scripts/build-module.sh bench; or "test",
#                                the cached test kernel with the
#                                repository's rdma_rxe.ko (make modules)
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
logdir=${1:-$here/logs/bench-$(date +%Y%m%d-%H%M%S)}
drivers=${RXE_BENCH_DRIVERS:-c rust}
iters=${RXE_BENCH_ITERS:-1000}
kernel=${RXE_BENCH_KERNEL:-bench}
rounds=${RXE_BENCH_ROUNDS:-1}
mkdir -p "$logdir"
rm -f "$logdir"/bench-*.txt

. "$here/scripts/lib.sh"
bench_kernel "$kernel" "$logdir" || exit

# shellcheck disable=SC2086
"$here/scripts/vm.sh" "$logdir" "$here/tests/vm/bench_guest.sh" -n "$iters" -r "$rounds" \
    -s "${RXE_BENCH_SIZES:-64 4096 65536 1048576}" \
    -p "${RXE_BENCH_PARTS:-write_bw read_bw send_bw scaling latency}" $drivers
vm_rc=$?

value() { # DRIVER METRIC: the median of the driver's runs (one per round)
    local v
    v=$(awk -v m="$2" '$1 == m && $2 ~ /^[0-9.]+$/ { print $2 }' "$logdir/bench-$1.txt" 2>/dev/null |
        sort -g | awk '{ a[NR] = $1 } END {
            if (NR % 2) print a[(NR + 1) / 2]
            else if (NR) printf "%.6g\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
    echo "${v:-n/a}"
}

readings() { # DRIVER METRIC: how many rounds recorded the metric
    awk -v m="$2" '$1 == m && $2 ~ /^[0-9.]+$/ { k++ } END { print k + 0 }' "$logdir/bench-$1.txt" 2>/dev/null
}

echo
echo "iterations: $iters, drivers run: $drivers, $kernel kernel (numbers under TCG)"
[ "$rounds" -le 1 ] || echo "each number: the median of $rounds rounds, the drivers taking turns"
ratio() { # A B: A / B, or n/a
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b + 0 > 0) printf "%.2f", a / b;
        else print "n/a" }'
}
# Variants of ours (rust:PARAMS, module parameters) get two more columns
# each: the variant's number and ours over it.
variants=()
for d in $drivers; do case $d in rust:*) variants+=("$d") ;; esac; done
header=$(printf '%-34s %12s %12s %10s' metric C ours "ours/C")
for v in "${variants[@]}"; do header+=$(printf ' %22s %8s' "${v#rust:}" "ours/it"); done
echo "$header"
# Every metric any driver reported, in the order the guest ran them.
metrics=$(for d in c rust "${variants[@]}"; do cat "$logdir/bench-$d.txt" 2>/dev/null; done |
    awk '!seen[$1]++ { print $1 }')
for m in $metrics; do
    c=$(value c "$m"); r=$(value rust "$m")
    line=$(printf '%-34s %12s %12s %10s' "$m" "$c" "$r" "$(ratio "$r" "$c")")
    for v in "${variants[@]}"; do
        u=$(value "$v" "$m")
        line+=$(printf ' %22s %8s' "$u" "$(ratio "$r" "$u")")
    done
    # A run that failed (or whose perftest clock calibration kept
    # failing) records nothing: say where a median has fewer readings.
    short=
    for d in $drivers; do
        k=$(readings "$d" "$m")
        [ "$k" -ge "$rounds" ] || short+=" ${d}:$k/$rounds"
    done
    [ -z "$short" ] || line+="  (readings${short})"
    echo "$line"
done

# The guest's ceiling: each payload byte is copied twice and run through
# the ICRC twice (src/ceiling.rs); the 64 KiB bandwidths as a fraction
# of it. It is read once per round, and the same guest has read its
# memcpy at 254 MB/s in one boot and 486 in another: the highest
# reading of the boot is what the machine can do, so a slow reading
# cannot flatter the fractions.
ceiling=$logdir/bench-ceiling.txt
if [ -s "$ceiling" ]; then
    echo
    echo "guest ceiling, 64 KiB messages (src/ceiling.rs), each reading:"
    awk '$1 == "round" { if (line != "") print line; line = "  round " $2; next }
         $1 ~ /_MBps$/ { line = line ", " $1 " " $2 }
         END { if (line != "") print line }' "$ceiling"
    c2=$(awk '$1 == "ceiling_2copy_MBps" && $2 + 0 > max { max = $2 + 0 } END { if (max > 0) print max }' "$ceiling")
    echo "  highest two-copies-two-CRCs ceiling: ${c2:-n/a} MB/s"
    for m in write_bw_65536_avg_MBps read_bw_65536_avg_MBps; do
        for d in c rust; do
            awk -v c2="$c2" -v v="$(value $d $m)" -v m="$m" -v d="$d" 'BEGIN {
                if (c2 + 0 > 0 && v ~ /^[0-9.]+$/)
                    printf "  %s %s: %.0f%% of the two-copies-two-CRCs ceiling\n", d, m, 100 * v / c2 }'
        done
    done
fi
exit "$vm_rc"
