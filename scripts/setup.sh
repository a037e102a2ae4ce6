#!/usr/bin/env bash
# Set up a fresh Debian bookworm machine (as root) to build and test rxe-rs:
# apt sources and packages, bindgen, virtme-ng, then the cached test kernel.
# Idempotent: every step checks whether it is already done.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/lib.sh"

phase_start apt
if [ ! -f /etc/apt/sources.list.d/rxe-rs.sources ]; then
    mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)\/\?$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
    mirror=${mirror:-http://deb.debian.org/debian}
    cat > /etc/apt/sources.list.d/rxe-rs.sources <<SRC
Types: deb
URIs: $mirror
Suites: bookworm-backports trixie-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    # Never take anything from trixie(-backports) unless asked by name.
    cat > /etc/apt/preferences.d/rxe-rs <<PREF
Package: *
Pin: release n=trixie-backports
Pin-Priority: 50
PREF
    rm -f "$RXE_CACHE"/.apt-done*
fi
mkdir -p "$RXE_CACHE"
# The marker names this script's hash, so a changed package list installs again.
apt_marker=$RXE_CACHE/.apt-done-$(sha256sum "$0" | cut -c1-12)
if [ ! -f "$apt_marker" ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends \
        rustc-web rust-web-src clang-19 lld-19 llvm-19 libclang-19-dev \
        bc bison flex libelf-dev libssl-dev cpio kmod rsync xz-utils zstd \
        ibverbs-utils ibverbs-providers rdma-core rdmacm-utils perftest iproute2 iputils-ping \
        python3-pyverbs python3-venv libibverbs-dev librdmacm-dev busybox-static udev tcpdump \
        >/dev/null
    apt-get install -y -qq --no-install-recommends -t bookworm-backports qemu-system-x86 >/dev/null
    apt-get install -y -qq --no-install-recommends -t trixie-backports linux-source-7.3 >/dev/null
    rm -f "$RXE_CACHE"/.apt-done*
    touch "$apt_marker"
fi
phase_end apt

phase_start tools
if [ ! -x "$RXE_CACHE/bindgen/bin/bindgen" ]; then
    cargo install --quiet bindgen-cli --version 0.72.1 --locked --root "$RXE_CACHE/bindgen"
fi
if [ ! -x "$VNG" ]; then
    rm -rf "$RXE_CACHE/venv"
    python3 -m venv "$RXE_CACHE/venv"
    "$RXE_CACHE/venv/bin/pip" install --quiet virtme-ng==1.42
fi
mkdir -p /lib/modules
phase_end tools

phase_start kernel
"$here/scripts/build-kernel.sh"
phase_end kernel
