#!/bin/bash
# Hostile send ring (tests/vm/hostile_ring.c): malformed WQEs written
# straight into the send ring librxe shares with the kernel (bad opcodes,
# huge lengths, too many SGEs, walk state beyond the SGE array, bogus lkey,
# oversized inline data, producer indices out of range), malformed
# doorbells (wr_count, wqe_size, QP handle), and UD WQEs naming an address
# handle that does not exist, was destroyed, belongs to another protection
# domain or is 0, or carrying a message longer than the MTU (completes, and
# nothing reaches the peer) or an RDMA WRITE. Each case runs in its own
# process, limited to 180 s; a case fails if the process dies or hangs, if
# the driver neither completes the WQE with an error nor moves the QP to
# ERROR (strict cases), if a fresh QP pair cannot send afterwards, or if the
# kernel log gains an oops, WARNING, KASAN report etc. (scripts/check-dmesg.sh).
#
# All 32 cases take about ten minutes per driver under TCG, so the suite
# runs a subset (t_hostile_ring.sh); run every case by hand (RXE_DRIVER=c or
# rust in the guest):
#   x_hostile_ring.sh [CASE...]     default: every case
# After an oops (or a process stuck in the kernel) the remaining cases are
# not run, unless RXE_HOSTILE_KEEP_GOING=1 (and never after a stuck one).
# The in-tree C driver trusts the shared ring more than it should: the cases
# in c_unsafe below crash or warn its kernel, so with RXE_DRIVER=c they are
# skipped (said so in the output) unless RXE_HOSTILE_ALL=1.
set -u
. "$(dirname "$0")/lib.sh"

# Cases that take the C driver's kernel down or make it warn (what it did is
# in the comment above each; RXE_HOSTILE_ALL=1 runs them anyway).
#   prod_ffffffff: producer index 0xffffffff makes every slot of the ring
#     look posted; destroying the QP afterwards hits WARN_ON in
#     __rxe_cleanup (rxe_pool.c:212, references not dropped in time).
#   inline_huge: inline length 16 MiB; the requester's memcpy runs off the
#     end of the ring: page fault, Oops in rxe_requester (kworker), and the
#     process then hangs in destroy_qp (WARN_ON in __rxe_cleanup).
#   prod_unmasked: a producer index with bits above the ring's mask; on
#     the production kernel (2026-12-04) destroying the QP hits the same
#     WARN_ON in __rxe_cleanup as prod_ffffffff (on the debug kernel the
#     references happened to drop in time).
c_unsafe="prod_ffffffff inline_huge prod_unmasked"
# Cases where the C driver neither fails the WQE nor the QP, but stays safe:
# with RXE_DRIVER=c their UNEXPECTED verdict is reported, not failed.
#   inline_over_max: inline length beyond max_inline_data; C sends the
#     bytes that follow the WQE's slot and completes it successfully.
#   inline_offset_huge: inline data with the shared walk offset (sge_offset)
#     at 256 MiB; C reads 64 bytes from there and sends them.
c_lax="inline_over_max inline_offset_huge"

# scripts/test.sh builds it on the host before the boot (gcc under TCG
# takes about a minute); build it here when run by hand.
bin=$RXE_LOGDIR/hostile_ring
src=$(dirname "$0")/hostile_ring.c
if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
    gcc -O1 -g -Wall -o "$bin" "$src" -libverbs ||
        fail "cannot build hostile_ring (libibverbs-dev missing?)"
fi

one_device
g=$g0
note "rxe0 IPv4 GID index $g"

if [ $# -gt 0 ]; then cases=("$@"); else mapfile -t cases < <("$bin" --list); fi
passed=0 failed=0 skipped=0 broken=false
failures=()
for c in "${cases[@]}"; do
    if [ "$RXE_DRIVER" = c ] && [ -z "${RXE_HOSTILE_ALL:-}" ] && [[ " $c_unsafe " == *" $c "* ]]; then
        echo "SKIP $c: known to crash or warn the C driver's kernel (RXE_HOSTILE_ALL=1 runs it)"
        skipped=$((skipped + 1))
        continue
    fi
    before=$(dmesg | wc -l)
    start=$SECONDS
    # Not timeout(1): a process stuck in the kernel (D state) outlives
    # SIGKILL, and timeout would wait for it forever.
    "$bin" rxe0 "$g" "$c" > /tmp/hostile.out 2>&1 &
    pid=$!
    while kill -0 $pid 2>/dev/null && [ $((SECONDS - start)) -lt 180 ]; do sleep 0.5; done
    stuck=false
    if kill -0 $pid 2>/dev/null; then
        kill -KILL $pid; sleep 5
        if kill -0 $pid 2>/dev/null; then stuck=true rc=stuck; else wait $pid; rc=124; fi
    else
        wait $pid; rc=$?
    fi
    dmesg | tail -n +$((before + 1)) > /tmp/hostile.dmesg
    sed 's/^/  /' /tmp/hostile.out
    why=
    case $rc in
        0) ;;
        1) if [ "$RXE_DRIVER" = c ] && [[ " $c_lax " == *" $c "* ]]; then
               echo "  known C behaviour: the C driver accepts this case (ours must not)"
           else
               why="unexpected outcome"
           fi ;;
        124) why="hung (killed after 180 s)" ;;
        stuck) why="hung, and stuck in the kernel after SIGKILL" ;;
        *) why="exit status $rc" ;;
    esac
    if ! "$RXE_REPO/scripts/check-dmesg.sh" /tmp/hostile.dmesg > /tmp/hostile.check; then
        why="${why:+$why; }kernel log problem"
        sed 's/^/    /' /tmp/hostile.check | head -20
    fi
    broken=$stuck
    if [[ $why == *"kernel log problem"* ]] && grep -qE "Oops|general protection|BUG: unable|kernel BUG|RIP: " /tmp/hostile.dmesg; then
        [ -n "${RXE_HOSTILE_KEEP_GOING:-}" ] || broken=true
    fi
    if [ -z "$why" ]; then
        passed=$((passed + 1)); echo "PASS $c ($((SECONDS - start)) s)"
    else
        failed=$((failed + 1)); failures+=("$c"); echo "FAIL $c ($((SECONDS - start)) s): $why"
        grep -v '^$' /tmp/hostile.dmesg | head -40 | sed 's/^/    dmesg: /'
    fi
    if $broken; then
        echo "the kernel is broken (oops or stuck process): not running the cases after $c"
        break
    fi
done

if $broken; then
    # rdma link del would wait forever for the stuck process's QP
    echo "not removing rxe0: the kernel is broken"
else
    rdma link del rxe0
    ip link del veth-a 2>/dev/null
fi
echo "$passed passed, $failed failed, $skipped skipped (driver $RXE_DRIVER)"
[ ${#failures[@]} = 0 ] || echo "failed: ${failures[*]}"
[ "$failed" = 0 ]
