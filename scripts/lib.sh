# Shared settings for the rxe-rs scripts (sourced, not run).
# Not under /var/cache: virtme-ng mounts a tmpfs there in the guest, which
# must see the kernel tree (for its modules).
RXE_CACHE=${RXE_CACHE:-/opt/rxe-rs}
# vng runs virtme-ng's other commands (virtme-run) by name: its venv's bin
# must be on PATH.
export PATH=$RXE_CACHE/venv/bin:/usr/lib/llvm-19/bin:$HOME/.cargo/bin:$PATH
# The kernel is built with Debian's rustc (the version its Rust support
# wants); the host crate with the machine's rustup toolchain, whose clippy
# must read what its rustc compiled. So RUSTC is not exported: a cargo that
# inherited it would compile with one rustc and lint with another.
RXE_RUSTC=/usr/bin/rustc
export BINDGEN=$RXE_CACHE/bindgen/bin/bindgen
VNG=$RXE_CACHE/venv/bin/vng

# Phase names may contain '-', which a shell variable name may not: keep the
# start times in an associative array instead.
declare -gA RXE_PHASE_START
phase_start() { RXE_PHASE_START[$1]=$(date +%s); echo "== phase $1: start"; }
phase_end() {
    echo "== phase $1: $(( $(date +%s) - ${RXE_PHASE_START[$1]} )) s"
}
