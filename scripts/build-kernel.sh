#!/usr/bin/env bash
# Build (or reuse) an rxe-rs kernel: Linux from Debian's linux-source-7.3,
# x86_64 defconfig + kernel/configs/kvm_guest.config + a fragment of ours,
# LLVM=1, Debian's rustc. Two flavours:
#
#   scripts/build-kernel.sh [test]   the test kernel: kernel/rxe-rs.config
#                                    (KASAN, lockdep, kmemleak...), tree
#                                    $RXE_CACHE/kernel-<key>, link
#                                    $RXE_CACHE/kernel
#   scripts/build-kernel.sh bench    the benchmark kernel:
#                                    kernel/rxe-rs-bench.config (no debug
#                                    options, perf), tree
#                                    $RXE_CACHE/kernel-bench-<key>, link
#                                    $RXE_CACHE/kernel-bench
#   scripts/build-kernel.sh [FLAVOUR] --key   only print the flavour's key
#
# <key> hashes the kernel package version, the flavour's config fragment and
# the toolchain versions, so a later run with the same inputs reuses the
# tree. A new build deletes the older trees of its own flavour only. Prints
# the tree's path last.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/lib.sh"

flavour=test key_only=
for arg in "$@"; do
    case $arg in
        test|bench) flavour=$arg ;;
        --key) key_only=1 ;;
        *) echo "usage: $0 [test|bench] [--key]" >&2; exit 2 ;;
    esac
done
case $flavour in
    test) fragment=$here/kernel/rxe-rs.config name=kernel ;;
    bench) fragment=$here/kernel/rxe-rs-bench.config name=kernel-bench ;;
esac
link=$RXE_CACHE/$name

src_tar=/usr/src/linux-source-7.3.tar.xz
[ -f "$src_tar" ] || { echo "missing $src_tar: run scripts/setup.sh" >&2; exit 1; }
# The test flavour's key must stay what it always was (its fragment, nothing
# else of this script): a changed key rebuilds the test kernel (about 12
# minutes on 2 cores) and deletes the cached tree.
key=$( {
    dpkg-query -W -f='${Version}\n' linux-source-7.3
    cat "$fragment"
    "$RXE_RUSTC" --version; clang --version | head -1; "$BINDGEN" --version
} | sha256sum | cut -c1-16)
[ -z "$key_only" ] || { echo "$key"; exit 0; }
kdir=$RXE_CACHE/$name-$key
log=$RXE_CACHE/$name-$key.log

if [ -f "$kdir/.rxe-built" ]; then
    echo "kernel: cached build $kdir"
    ln -sfn "$kdir" "$link"
    echo "$kdir"
    exit 0
fi

echo "kernel: building in $kdir (log: $log)"
src_version=$(dpkg-query -W -f='${Version}' linux-source-7.3)
if [ ! -f "$kdir/Makefile" ]; then
    rm -rf "$kdir" "$kdir.tmp"
    # Same sources, other config or toolchain: start from the previous
    # tree of this flavour so make rebuilds only what the change touches.
    # A first bench tree starts from the test tree (same sources, so no
    # extraction; its objects are rebuilt, the config being another).
    prev= cands=("$link")
    [ "$flavour" = test ] || cands+=("$RXE_CACHE/kernel")
    for cand in "${cands[@]}"; do
        cand=$(readlink -f "$cand" 2>/dev/null || true)
        if [ -n "$cand" ] && [ -f "$cand/.rxe-built" ] && \
           [ "$(cat "$cand/.rxe-src-version" 2>/dev/null)" = "$src_version" ]; then
            prev=$cand; break
        fi
    done
    if [ -n "$prev" ]; then
        echo "kernel: seeding from $prev"
        cp -a "$prev" "$kdir.tmp"
        # virtme-ng's module directory is made anew for this tree.
        rm -rf "$kdir.tmp/.rxe-built" "$kdir.tmp/.virtme_mods"
    else
        mkdir -p "$kdir.tmp"
        tar -xf "$src_tar" -C "$kdir.tmp" --strip-components=1
        echo "$src_version" > "$kdir.tmp/.rxe-src-version"
    fi
    mv "$kdir.tmp" "$kdir"
fi
kmake() { make -C "$kdir" LLVM=1 RUSTC="$RXE_RUSTC" BINDGEN="$BINDGEN" -j"$(nproc)" "$@"; }
kmake rustavailable
kmake defconfig >/dev/null
(cd "$kdir" && KCONFIG_CONFIG=.config scripts/kconfig/merge_config.sh -m .config \
    kernel/configs/kvm_guest.config "$fragment" >/dev/null)
kmake olddefconfig >/dev/null

# Every line of the fragment must have survived dependency resolution.
bad=0
while IFS= read -r line; do
    case "$line" in
        CONFIG_*=*) grep -qxF "$line" "$kdir/.config" || { echo "config: lost $line" >&2; bad=1; } ;;
        "# CONFIG_"*" is not set")
            sym=${line#\# }; sym=${sym%% *}
            if grep -q "^$sym=" "$kdir/.config"; then echo "config: $sym still set" >&2; bad=1; fi ;;
    esac
done < "$fragment"
[ "$bad" = 0 ] || exit 1

start=$(date +%s)
if ! kmake > "$log" 2>&1; then
    tail -40 "$log" >&2
    exit 1
fi
echo "kernel: built in $(( $(date +%s) - start )) s"
touch "$kdir/.rxe-built"
ln -sfn "$kdir" "$link"
# Older trees of this flavour are only kept until a newer one is built:
# $name-<key> (and a left-over $name-<key>.tmp) with its log. The other
# flavour's trees and links do not match (kernel-bench-... is no key).
for old in "$link"-*; do
    rest=${old#"$link"-}
    [[ $rest =~ ^[0-9a-f]{16}(\.tmp)?$ ]] || continue
    [ "$old" = "$kdir" ] || rm -rf "$old" "$old.log"
done
echo "$kdir"
