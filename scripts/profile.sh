#!/usr/bin/env bash
# Profile a driver's data path on the benchmark kernel: one VM boot, for
# each driver a perftest run between two namespaces under `perf record`
# (tests/vm/profile_guest.sh), then each driver's hottest symbols. What
# motivates a change to the data path (issue 16) is read here.
#
#   scripts/profile.sh [LOGDIR]
#   RXE_PROFILE_PROG=ib_write_bw  RXE_PROFILE_SIZE=65536  RXE_PROFILE_ITERS=300
#   RXE_PROFILE_DRIVERS="rust c"  RXE_BENCH_KERNEL=bench (or test)
#   RXE_PROFILE_PROG=nvme RXE_PROFILE_SIZE=64: t_nvme.sh's read-back of
#   64 MiB through nvme-rdma and nvmet-rdma instead of a perftest run
#   RXE_PROFILE_ROOTS="ib_uverbs_post_send udp_queue_rcv_one_skb": a
#   call-graph profile, and where each path's samples go (leaf symbols,
#   callees, inclusive shares, memcpy's callers; tests/vm/perf_roots.py);
#   the stacks stay in LOGDIR/profile-DRIVER.txt.stacks.gz
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
logdir=${1:-$here/logs/profile-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$logdir"
. "$here/scripts/lib.sh"
bench_kernel "${RXE_BENCH_KERNEL:-bench}" "$logdir" || exit

# shellcheck disable=SC2086
"$here/scripts/vm.sh" "$logdir" "$here/tests/vm/profile_guest.sh" \
    ${RXE_PROFILE_ROOTS:+-g "$RXE_PROFILE_ROOTS"} \
    "${RXE_PROFILE_PROG:-ib_write_bw}" "${RXE_PROFILE_SIZE:-65536}" \
    "${RXE_PROFILE_ITERS:-300}" ${RXE_PROFILE_DRIVERS:-rust c}
rc=$?
cat "$logdir"/profile-*.txt 2>/dev/null
exit "$rc"
