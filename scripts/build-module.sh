#!/usr/bin/env bash
# Build rdma_rxe.ko against one flavour's cached kernel (see
# scripts/build-kernel.sh) from a copy of the sources, so that the build in
# the source directory (`make modules`, against the test kernel) is left
# alone: an out-of-tree build writes its objects next to the sources.
#
#   scripts/build-module.sh [test|bench]     (default bench)
#
# The copy is logs/module-<flavour>/ (under the repository, which the guest
# sees; the guest's /tmp is its own). Each run mirrors src/, Kbuild and
# Makefile into it and runs make there, which rebuilds only what changed.
# Prints the module's path last.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/lib.sh"

flavour=${1:-bench}
case $flavour in
    test) kdir=$RXE_CACHE/kernel ;;
    bench) kdir=$RXE_CACHE/kernel-$flavour ;;
    *) echo "usage: $0 [test|bench]" >&2; exit 2 ;;
esac
kdir=$(readlink -f "$kdir")
[ -f "$kdir/.rxe-built" ] || {
    echo "no $flavour kernel in $kdir: run scripts/build-kernel.sh $flavour" >&2
    exit 1
}
build=$here/logs/module-$flavour
mkdir -p "$build"
# Sources only: what a build writes (here or in the copy) is excluded, and
# excluded files in the copy survive --delete, so make stays incremental.
rsync -a --delete \
    --exclude='*.o' --exclude='*.ko' --exclude='*.mod' --exclude='*.mod.c' \
    --exclude='.*.cmd' --exclude='.*.d' --exclude='/src/generated/' \
    --exclude='modules.order' --exclude='Module.symvers' \
    --include='/src/***' --include='/Kbuild' --include='/Makefile' --exclude='*' \
    "$here/" "$build/"
make -C "$build" KDIR="$kdir" modules >&2
echo "$build/rdma_rxe.ko"
