#!/usr/bin/env bash
# Benchmark the C rdma_rxe against ours in one VM boot (TCG, so the numbers
# only compare the two drivers with each other): ib_write_bw -s 65536 and
# ib_send_lat -s 2 between two namespaces joined by a veth pair. Prints a
# table: metric, C, ours, ratio ours/C. Never fails on slowness; exits
# non-zero only if the VM run itself failed.
#
#   scripts/bench.sh [LOGDIR]
#   RXE_BENCH_DRIVERS="c rust"   the drivers to run (default both; "c" alone
#                                checks the benchmark itself)
#   RXE_BENCH_ITERS=1000         iterations per run
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
logdir=${1:-$here/logs/bench-$(date +%Y%m%d-%H%M%S)}
drivers=${RXE_BENCH_DRIVERS:-c rust}
iters=${RXE_BENCH_ITERS:-1000}
mkdir -p "$logdir"
rm -f "$logdir"/bench-*.txt

# shellcheck disable=SC2086
"$here/scripts/vm.sh" "$logdir" "$here/tests/vm/bench_guest.sh" -n "$iters" $drivers
vm_rc=$?

value() { # DRIVER METRIC
    local v
    v=$(awk -v m="$2" '$1 == m { print $2 }' "$logdir/bench-$1.txt" 2>/dev/null)
    echo "${v:-n/a}"
}

echo
echo "iterations: $iters, drivers run: $drivers (numbers under TCG)"
printf '%-28s %12s %12s %10s\n' metric C ours "ours/C"
for m in ib_write_bw_64k_avg_MBps ib_write_bw_64k_peak_MBps ib_write_bw_64k_Mpps \
         ib_send_lat_2_typical_us ib_send_lat_2_avg_us ib_send_lat_2_p99_us; do
    c=$(value c "$m"); r=$(value rust "$m")
    ratio=$(awk -v c="$c" -v r="$r" 'BEGIN {
        if (c ~ /^[0-9.]+$/ && r ~ /^[0-9.]+$/ && c + 0 > 0) printf "%.2f", r / c;
        else print "n/a" }')
    printf '%-28s %12s %12s %10s\n' "$m" "$c" "$r" "$ratio"
done
exit "$vm_rc"
