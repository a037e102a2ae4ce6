#!/usr/bin/env bash
# Set up this machine, build rdma_rxe.ko, boot the test kernel in a VM and
# show the Rust driver working: load it, create rxe0 on a veth, list it with
# ibv_devices and ibv_devinfo through Debian's stock librxe.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/lib.sh"
cd "$here"
"$here/scripts/setup.sh"
make --no-print-directory modules
"$here/scripts/vm.sh" "$here/logs/demo" "$here/tests/vm/demo.sh"
