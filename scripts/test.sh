#!/usr/bin/env bash
# Run every test: host protocol tests (cargo test, clippy), the module build
# (warnings are errors), and the VM suite against the C driver and ours.
# Sets the machine up first (idempotent). Prints phase timings and ends with
# the VM suite's "N passed, N failed".
#
#   scripts/test.sh [PATTERN]   PATTERN limits the VM tests (a regex on names)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/lib.sh"
cd "$here"

"$here/scripts/setup.sh"

phase_start host-tests
(cd host && cargo test --quiet 2>&1 | tail -n 60)
(cd host && cargo clippy --quiet --all-targets -- -D warnings)
phase_end host-tests

phase_start module
make --no-print-directory modules
phase_end module

phase_start vm-tests
logdir=${RXE_LOGDIR:-$here/logs/vm-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$logdir"
# The guest runs the host's userspace: build the test programs here, where
# gcc is not emulated (x_hostile_ring.sh looks for it in the log directory).
gcc -O1 -g -Wall -Werror -o "$logdir/hostile_ring" tests/vm/hostile_ring.c -libverbs
# The kernel-verbs test module (t_kverbs.sh), against the test kernel.
mkdir -p "$logdir/kmod"
cp tests/kmod/Kbuild tests/kmod/*.c "$logdir/kmod/"
make -s -C "$RXE_CACHE/kernel" LLVM=1 M="$logdir/kmod" W=1 KCFLAGS=-Werror modules
"$here/scripts/vm.sh" "$logdir" "$here/tests/vm/suite.sh" "${1:-.}"
phase_end vm-tests
