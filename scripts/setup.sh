#!/usr/bin/env bash
# Set up a fresh Debian bookworm machine (as root) to build and test rxe-rs:
# apt sources and packages, bindgen, virtme-ng, then the cached test kernel.
# Idempotent: every step checks whether it is already done.
#
# Every package the test command uses is named here, not left to come in
# as a dependency: the compilers (gcc, make, clang/LLVM, Debian's rustc for
# the kernel), the 7.3 uapi headers (linux-libc-dev from trixie-backports,
# the version of linux-source-7.3: the host crate's C cross-checks compile
# against them), Debian's clippy for the module (rust-web-clippy: its
# clippy-driver matches the kernel's rustc), a Rust toolchain with cargo,
# clippy and rustfmt for the host crate and the format check (Debian's
# cargo-web and rustfmt-web if the machine has none), the
# guest's userspace (rdma-core, perftest, pyverbs, iproute2...), packet
# capture (tcpdump, tshark) and the NVMe tools (nvme-cli, fio).
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
# Other clones of the repository may run their setup.sh at the same time:
# wait for the dpkg lock instead of failing.
apt_get() { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 "$@"; }
# The marker names this script's hash, so a changed package list installs again.
apt_marker=$RXE_CACHE/.apt-done-$(sha256sum "$0" | cut -c1-12)
if [ ! -f "$apt_marker" ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt_get update -qq
    apt_get install -y -qq --no-install-recommends \
        gcc libc6-dev make ca-certificates procps \
        rustc-web rust-web-src rust-web-clippy clang-19 lld-19 llvm-19 libclang-19-dev \
        bc bison flex libelf-dev libssl-dev cpio kmod rsync xz-utils zstd \
        ibverbs-utils ibverbs-providers rdma-core rdmacm-utils perftest iproute2 iputils-ping \
        python3 python3-pyverbs python3-venv libibverbs-dev librdmacm-dev busybox-static udev \
        tcpdump tshark nvme-cli fio \
        >/dev/null
    apt_get install -y -qq --no-install-recommends -t bookworm-backports qemu-system-x86 >/dev/null
    apt_get install -y -qq --no-install-recommends -t trixie-backports linux-source-7.3 >/dev/null
    # The uapi headers of the same kernel (bookworm's are 6.1: too old for
    # rdma_user_rxe.h as the host crate's C cross-checks read it).
    src_version=$(dpkg-query -W -f='${Version}' linux-source-7.3)
    apt_get install -y -qq --no-install-recommends -t trixie-backports \
        "linux-libc-dev=$src_version" >/dev/null
    touch "$apt_marker"
fi
hdr_version=$(dpkg-query -W -f='${Version}' linux-libc-dev 2>/dev/null || true)
if ! dpkg --compare-versions "${hdr_version:-0}" ge 7.3; then
    echo "setup: linux-libc-dev is ${hdr_version:-missing}, the host tests need 7.3 (trixie-backports)" >&2
    exit 1
fi
# A Rust toolchain for the host crate (cargo test, cargo clippy) and
# rustfmt: the machine's (rustup in ~/.cargo/bin, on PATH through
# scripts/lib.sh) if it has one, else Debian's, the same 1.96 as the
# kernel's rustc-web (its cargo clippy is rust-web-clippy's, above).
if ! cargo --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1 ||
    ! rustfmt --version >/dev/null 2>&1; then
    if command -v rustup >/dev/null 2>&1; then
        rustup component add clippy rustfmt
    else
        apt_get install -y -qq --no-install-recommends cargo-web rustfmt-web >/dev/null
    fi
fi
echo "setup: $(cargo --version), $(cargo clippy --version), $(rustfmt --version)," \
    "module: $(/usr/bin/clippy-driver --version | head -1), gcc $(gcc -dumpversion)," \
    "linux-libc-dev $hdr_version"
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
