#!/usr/bin/env bash
# Capture packets sent by the in-tree C rdma_rxe in the VM and store them as
# host test vectors (host/tests/data/c_rxe_capture.pcap), against which
# host/tests/capture.rs checks our parser and ICRC byte for byte.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
logdir=$here/logs/capture
"$here/scripts/vm.sh" "$logdir" "$here/tests/vm/capture.sh"
mkdir -p "$here/host/tests/data"
cp "$logdir/c_rxe_capture.pcap" "$here/host/tests/data/c_rxe_capture.pcap"
echo "stored host/tests/data/c_rxe_capture.pcap"
