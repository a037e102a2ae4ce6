#!/usr/bin/env bash
# Benchmark the C rdma_rxe against ours in one VM boot of the benchmark
# kernel (TCG, so the numbers only compare the two drivers with each other):
# ib_write_bw -s 65536 and ib_send_lat -s 2 between two namespaces joined by
# a veth pair. Prints a table: metric, C, ours, ratio ours/C. Never fails on
# slowness; exits non-zero only if the VM run itself failed.
#
#   scripts/bench.sh [LOGDIR]
#   RXE_BENCH_DRIVERS="c rust"   the drivers to run (default both; "c" alone
#                                checks the benchmark itself)
#   RXE_BENCH_ITERS=1000         iterations per run
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
mkdir -p "$logdir"
rm -f "$logdir"/bench-*.txt

case $kernel in
    test) ;;
    bench)
        # vm.sh boots KDIR; the guest loads RXE_KO as our driver.
        "$here/scripts/build-kernel.sh" bench >&2 || exit 1
        KDIR=$(readlink -f "${RXE_CACHE:-/opt/rxe-rs}/kernel-bench")
        if ! RXE_KO=$("$here/scripts/build-module.sh" bench 2> "$logdir/module-build.log"); then
            tail -20 "$logdir/module-build.log" >&2
            echo "bench: could not build rdma_rxe.ko for the benchmark kernel" >&2
            exit 1
        fi
        export KDIR RXE_KO ;;
    *) echo "RXE_BENCH_KERNEL must be bench or test" >&2; exit 2 ;;
esac

# shellcheck disable=SC2086
"$here/scripts/vm.sh" "$logdir" "$here/tests/vm/bench_guest.sh" -n "$iters" $drivers
vm_rc=$?

value() { # DRIVER METRIC
    local v
    v=$(awk -v m="$2" '$1 == m { print $2 }' "$logdir/bench-$1.txt" 2>/dev/null)
    echo "${v:-n/a}"
}

echo
echo "iterations: $iters, drivers run: $drivers, $kernel kernel (numbers under TCG)"
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
