# Shared settings for the rxe-rs scripts (sourced, not run).
# Not under /var/cache: virtme-ng mounts a tmpfs there in the guest, which
# must see the kernel tree (for its modules).
RXE_CACHE=${RXE_CACHE:-/opt/rxe-rs}
export PATH=/usr/lib/llvm-19/bin:$HOME/.cargo/bin:$PATH
export RUSTC=/usr/bin/rustc
export BINDGEN=$RXE_CACHE/bindgen/bin/bindgen
VNG=$RXE_CACHE/venv/bin/vng

phase_start() { eval "_phase_$1=\$(date +%s)"; echo "== phase $1: start"; }
phase_end() {
    local start; eval "start=\$_phase_$1"
    echo "== phase $1: $(( $(date +%s) - start )) s"
}
