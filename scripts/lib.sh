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

# bench_kernel KERNEL LOGDIR: the kernel a benchmark boots. "bench": the
# benchmark kernel (built first if not cached) and our module built for it,
# exported as KDIR and RXE_KO for vm.sh; "test": vm.sh's defaults (the
# test kernel, the repository's rdma_rxe.ko). Returns 1 if a build failed,
# 2 on a bad KERNEL.
bench_kernel() {
    local scripts
    scripts=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    case $1 in
        test) ;;
        bench)
            "$scripts/build-kernel.sh" bench >&2 || return 1
            KDIR=$(readlink -f "$RXE_CACHE/kernel-bench")
            if ! RXE_KO=$("$scripts/build-module.sh" bench 2> "$2/module-build.log"); then
                tail -20 "$2/module-build.log" >&2
                echo "could not build rdma_rxe.ko for the benchmark kernel" >&2
                return 1
            fi
            export KDIR RXE_KO ;;
        *) echo "RXE_BENCH_KERNEL must be bench or test" >&2; return 2 ;;
    esac
}
