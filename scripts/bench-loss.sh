#!/usr/bin/env bash
# Loss benchmark (issue 12): the C rdma_rxe and ours in one VM boot, netem
# loss on both ends of a veth pair between two namespaces
# (tests/vm/bench_loss.sh): ibv_rc_pingpong 4 KiB and 64 KiB at 0, 0.1, 1
# and 5% loss, ib_write_bw and ib_read_bw 64 KiB at 0 and 1%. Prints, per
# case, each driver's time (or "dnf(Ns)": did not finish in its bound, the
# C driver's usual result at 1%), ours/C, and each driver's time relative
# to its own lossless run; then the counters each run moved. A benchmark:
# never fails on slowness; exits non-zero only if the VM run itself failed.
#
#   scripts/bench-loss.sh [LOGDIR]
#   RXE_BENCH_DRIVERS="c rust"   drivers (default both; rust:P=V,... is
#                                ours with those module parameters, listed
#                                after the table)
#   RXE_BENCH_ITERS=100          round trips / iterations per run
#   RXE_BENCH_BOUND=120          seconds a client may take
#   RXE_BENCH_LOSSES="0 0.1 1 5" pingpong loss rates (%)
#   RXE_BENCH_KERNEL=bench       the kernel to boot: "bench" (default), the
#                                benchmark kernel without debug options,
#                                with our module built for it (as
#                                scripts/bench.sh); or "test", the test
#                                kernel with the repository's rdma_rxe.ko
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
logdir=${1:-$here/logs/bench-loss-$(date +%Y%m%d-%H%M%S)}
drivers=${RXE_BENCH_DRIVERS:-c rust}
mkdir -p "$logdir"
rm -f "$logdir"/bench-loss-*.txt

. "$here/scripts/lib.sh"
bench_kernel "${RXE_BENCH_KERNEL:-bench}" "$logdir" || exit

# shellcheck disable=SC2086
# (The guest sees only the environment vm.sh passes: settings go as
# arguments.)
"$here/scripts/vm.sh" "$logdir" "$here/tests/vm/bench_loss.sh" -n "${RXE_BENCH_ITERS:-100}" \
    -b "${RXE_BENCH_BOUND:-120}" -l "${RXE_BENCH_LOSSES:-0 0.1 1 5}" $drivers
vm_rc=$?

# field DRIVER CASE N: field N of the case's line (2: seconds or dnf).
field() {
    awk -v c="$2" -v n="$3" '$1 == c { print $n }' "$logdir/bench-loss-$1.txt" 2>/dev/null
}
ratio() { # A B: A / B, or n/a
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b + 0 > 0) printf "%.2f", a / b; else print "n/a" }'
}

echo
echo "drivers run: $drivers; kernel: $(readlink -f "${KDIR:-/opt/rxe-rs/kernel}")"
printf '%-24s %12s %12s %8s %10s %10s\n' case "C s" "ours s" "ours/C" "C/0%" "ours/0%"
cases=$(cat "$logdir"/bench-loss-*.txt 2>/dev/null | awk '{ print $1 }' | awk '!seen[$0]++')
for c in $cases; do
    base=${c%_loss*}_loss0
    ct=$(field c "$c" 2); rt=$(field rust "$c" 2)
    printf '%-24s %12s %12s %8s %10s %10s\n' "$c" "${ct:-n/a}" "${rt:-n/a}" "$(ratio "$rt" "$ct")" \
        "$(ratio "$ct" "$(field c "$base" 2)")" "$(ratio "$rt" "$(field rust "$base" 2)")"
done
echo
echo "bandwidth (MB/s) and counters moved on the client device:"
for d in $drivers; do
    sed "s/^/  $d: /" "$logdir/bench-loss-$d.txt" 2>/dev/null
done
exit "$vm_rc"
