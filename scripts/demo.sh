#!/usr/bin/env bash
# Set up this machine, build rdma_rxe.ko, boot the test kernel in a VM and
# show the Rust driver working (tests/vm/demo.sh): two devices on a veth
# pair, one in another network namespace, an ibv_rc_pingpong between them
# through Debian's stock librxe with its numbers, and the counters it moved.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/lib.sh"
cd "$here"
"$here/scripts/setup.sh"
make --no-print-directory modules
echo "demo: booting the test kernel under QEMU (emulated: a few minutes) to run tests/vm/demo.sh"
"$here/scripts/vm.sh" "$here/logs/demo" "$here/tests/vm/demo.sh"
