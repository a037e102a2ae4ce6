#!/usr/bin/env bash
# Boot the cached test kernel under QEMU (TCG: KVM guests hang on these
# machines) with the host's root filesystem, run one guest script, and check
# the guest's kernel log.
#
#   scripts/vm.sh LOGDIR GUEST-SCRIPT [ARGS...]
#
# LOGDIR is writable in the guest (as /tmp/rxe-logs is not: the root is
# read-only there). The guest script's stdout/stderr and the kernel log end up
# in LOGDIR. Exit status: the guest script's, or 1 if it did not finish or
# the kernel log shows an oops, BUG, WARNING, KASAN report, lockdep splat,
# RCU stall, hung task or memory leak.
#
# RXE_VM_TAG=NAME names this guest's own files (guest-NAME.log,
# dmesg-NAME.txt, console-NAME.log...), so that two guests can share LOGDIR
# and run at once (scripts/test.sh runs the C and the Rust pass so).
# RXE_VM_CPUS (default 2) and RXE_VM_MEMORY (default 3G) size the guest;
# RXE_VM_NICE (default 0) is QEMU's nice value (scripts/test.sh lowers the
# debug guests' priority below the production pass that runs beside them).
# KDIR (default $RXE_CACHE/kernel, the test kernel) is the kernel tree to
# boot; RXE_KO (default the repository's rdma_rxe.ko) is our module, which
# must be built against that tree (scripts/bench.sh boots the benchmark
# kernel with the module scripts/build-module.sh built for it).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/lib.sh"

logdir=$(mkdir -p "$1" && cd "$1" && pwd); shift
script=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); shift
kdir=$(readlink -f "${KDIR:-$RXE_CACHE/kernel}")
[ -f "$kdir/arch/x86/boot/bzImage" ] || { echo "no kernel in $kdir: run scripts/setup.sh" >&2; exit 1; }
mkdir -p /lib/modules
sfx=${RXE_VM_TAG:+-$RXE_VM_TAG}
rm -f "$logdir/guest$sfx.status" "$logdir/dmesg$sfx.txt"

# The guest wrapper records the script's status and the kernel log.
wrapper="$logdir/.guest-wrapper$sfx.sh"
cat > "$wrapper" <<WRAP
#!/bin/bash
export RXE_REPO='$here' RXE_LOGDIR='$logdir' RXE_KDIR='$kdir' RXE_SLOW_TESTS='${RXE_SLOW_TESTS:-}' RXE_CYCLES='${RXE_CYCLES:-}' RXE_VM_TAG='${RXE_VM_TAG:-}' RXE_KO='${RXE_KO:-}'
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
cd '$here'
bash '$script' $(printf '%q ' "$@") > '$logdir/guest$sfx.log' 2>&1
echo \$? > '$logdir/guest$sfx.status'
dmesg > '$logdir/dmesg$sfx.txt'
WRAP
chmod +x "$wrapper"

# no5lvl: with TCG's 5-level paging, KASAN reports a wild access in an early
# boot interrupt (rcu_is_watching from identify_cpu), which taints the kernel
# and switches lockdep off for the whole run.
# Hide systemd-udevd from the guest: its coldplug and settle take 75 s
# (2 vCPUs) to 136 s (1 vCPU) of every boot under TCG with this debug
# kernel, and devtmpfs already makes every node the tests use. vng's
# --rodir comes too late (virtme-ng-init looks for udevd before it mounts
# the --rodir directories), so vng runs in a mount namespace of its own
# where /usr/lib/systemd (and /lib/systemd) is an empty directory: QEMU's
# 9p server exports that view of the root, the host's stays as it is.
# virtme-ng-init then says "unable to find udevd, skip udev".
# RXE_VM_UDEV=1 keeps udev (or where unshare is not allowed).
mkdir -p "$RXE_CACHE/empty"
hide_udev=()
if [ -z "${RXE_VM_UDEV:-}" ] && unshare -m --propagation private true 2>/dev/null; then
    hide_udev=(unshare -m --propagation private bash -c '
        for d in /usr/lib/systemd /lib/systemd; do
            [ ! -d "$d" ] || mount --bind "$0" "$d" || exit 1
        done
        exec "$@"' "$RXE_CACHE/empty")
fi
# The root is the host's over 9p, which virtme-ng mounts uncached: every
# exec and library load goes back to the host. The root is read-only and
# nothing on the host changes it during a run, so let the guest cache it
# (a later rootflags= overrides virtme-ng's); processes start about 1.7x
# faster under TCG (bash -c true 1.7 -> 1.0 s, veth set-up 9.2 -> 5.3 s).
rootflags=rootflags=version=9p2000.L,trans=virtio,access=any,msize=524288,cache=loose
# mitigations=off: the guest runs only our tests, and under TCG the
# Spectre mitigations (retpoline thunks on every indirect call, RSB
# filling on every context switch) are pure emulation cost. KASAN, lockdep
# and kmemleak are unaffected.
# tsc=reliable: the clocksource watchdog compares the TSC with the HPET
# and, under TCG's uneven timing, marks the TSC unstable in some boots
# and not others ("Marking clocksource tsc unstable due to frequency
# skew", 12 to 19 s in); from then on every clock read in the guest
# (perftest's gettimeofday, both drivers' ktime_get per packet) is an
# emulated HPET access, and one boot's numbers were not comparable with
# another's. TCG's TSC follows the host's clock on every vCPU: keep it.
# log_buf_len: the suite checks the kernel log after every test from a
# marker it writes before the test; the default 256 KiB could lose a long
# test's beginning (and, at the end of the run, an early splat).
# --verbose (virtme's --show-boot-console) with loglevel=5 (not its 7):
# the kernel's console (warnings, oopses, a panic) goes to console.log,
# which is all that is left of a guest that died (virtme-ng's script
# mode otherwise sends it to /dev/null: a production guest that died in
# one CI run, vng exit 255, left an empty console log and no reason);
# informational messages stay in the kernel log only, the serial console
# being slow under TCG.

timeout_s=${RXE_VM_TIMEOUT:-5200}
set +e
nice -n "${RXE_VM_NICE:-0}" timeout --kill-after=30 "$timeout_s" "${hide_udev[@]}" "$VNG" --run "$kdir" --user root --disable-kvm \
    --cpus "${RXE_VM_CPUS:-2}" --memory "${RXE_VM_MEMORY:-3G}" \
    --rwdir "$logdir" --rodir="/usr/lib/systemd=$RXE_CACHE/empty" \
    --verbose \
    --append "no5lvl rcupdate.rcu_expedited=1 mitigations=off tsc=reliable log_buf_len=16M loglevel=5 $rootflags" --exec "$wrapper" ${RXE_VNG_OPTS:-} > "$logdir/console$sfx.log" 2>&1
vm_rc=$?
set -e

[ -n "${RXE_VM_QUIET:-}" ] || cat "$logdir/guest$sfx.log" 2>/dev/null || true
if [ ! -f "$logdir/guest$sfx.status" ]; then
    echo "vm${sfx}: the guest did not finish (vng exit $vm_rc); console log:" >&2
    tail -40 "$logdir/console$sfx.log" >&2
    exit 1
fi
status=$(cat "$logdir/guest$sfx.status")
if "$here/scripts/check-dmesg.sh" "$logdir/dmesg$sfx.txt"; then
    echo "vm${sfx}: kernel log clean"
else
    echo "vm${sfx}: kernel log shows a problem (see $logdir/dmesg$sfx.txt)"
    [ "$status" != 0 ] || status=1
fi
exit "$status"
