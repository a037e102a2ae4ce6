#!/usr/bin/env bash
# Build (or reuse) the rxe-rs test kernel: Linux from Debian's linux-source-7.3,
# x86_64 defconfig + kernel/configs/kvm_guest.config + kernel/rxe-rs.config, LLVM=1, Debian's
# rustc. The tree lives in $RXE_CACHE/kernel-<key>, where <key> hashes the
# kernel package version, the config fragment and the toolchain versions, so a
# later run with the same inputs reuses it. Prints the tree's path last.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/lib.sh"

src_tar=/usr/src/linux-source-7.3.tar.xz
[ -f "$src_tar" ] || { echo "missing $src_tar: run scripts/setup.sh" >&2; exit 1; }
key=$( {
    dpkg-query -W -f='${Version}\n' linux-source-7.3
    cat "$here/kernel/rxe-rs.config"
    "$RXE_RUSTC" --version; clang --version | head -1; "$BINDGEN" --version
} | sha256sum | cut -c1-16)
kdir=$RXE_CACHE/kernel-$key
log=$RXE_CACHE/kernel-$key.log

if [ -f "$kdir/.rxe-built" ]; then
    echo "kernel: cached build $kdir"
    ln -sfn "$kdir" "$RXE_CACHE/kernel"
    echo "$kdir"
    exit 0
fi

echo "kernel: building in $kdir (log: $log)"
src_version=$(dpkg-query -W -f='${Version}' linux-source-7.3)
if [ ! -f "$kdir/Makefile" ]; then
    rm -rf "$kdir" "$kdir.tmp"
    prev=$(readlink -f "$RXE_CACHE/kernel" 2>/dev/null || true)
    if [ -n "$prev" ] && [ -f "$prev/.rxe-built" ] && \
       [ "$(cat "$prev/.rxe-src-version" 2>/dev/null)" = "$src_version" ]; then
        # Same sources, other config or toolchain: start from the previous
        # tree so make rebuilds only what the change touches.
        echo "kernel: seeding from $prev"
        cp -a "$prev" "$kdir.tmp"
        rm -f "$kdir.tmp/.rxe-built"
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
    kernel/configs/kvm_guest.config "$here/kernel/rxe-rs.config" >/dev/null)
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
done < "$here/kernel/rxe-rs.config"
[ "$bad" = 0 ] || exit 1

start=$(date +%s)
if ! kmake > "$log" 2>&1; then
    tail -40 "$log" >&2
    exit 1
fi
echo "kernel: built in $(( $(date +%s) - start )) s"
touch "$kdir/.rxe-built"
ln -sfn "$kdir" "$RXE_CACHE/kernel"
# Older trees are only kept until a newer one is built.
for old in "$RXE_CACHE"/kernel-*; do
    case $old in "$kdir"|"$kdir.log"|*.log) ;; *) rm -rf "$old" "$old.log" ;; esac
done
echo "$kdir"
