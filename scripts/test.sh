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
"$here/scripts/vm.sh" "$logdir" "$here/tests/vm/suite.sh" "${1:-.}"
phase_end vm-tests
