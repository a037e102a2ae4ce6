# Kernel verbs, as a kernel ULP uses them (tests/kmod/rxe_kverbs_test.c,
# built on the host by scripts/test.sh): a PD with its DMA MR, a kernel CQ
# polled directly, two RC QPs of one device connected to each other; SEND
# with immediate in two SGEs, RDMA WRITE and READ through the PD's global
# rkey, every byte checked; posting in RESET must fail and ib_drain_qp()
# (ERROR and flushed completions) must return. Then the same with the
# receive taken from a kernel SRQ, and at 1 MiB (1024 packets each way at
# path MTU 1024).
. "$(dirname "$0")/lib.sh"

ko=$RXE_LOGDIR/kmod/rxe_kverbs_test.ko
[ -f "$ko" ] || fail "$ko missing (scripts/test.sh builds it on the host)"
one_device

kverbs() { # DESCRIPTION PARAMS...
    local what=$1; shift
    local before
    before=$(dmesg | wc -l)
    local start=$SECONDS
    if insmod "$ko" dev=rxe0 gid_index="$g0" "$@"; then
        rmmod rxe_kverbs_test
        note "ok: $what ($((SECONDS - start)) s): $(dmesg | tail -n +$((before + 1)) | grep -o 'rxe_kverbs_test: PASS.*')"
    else
        dmesg | tail -n +$((before + 1)) | grep rxe_kverbs_test | sed 's/^/    /'
        fail "$what"
    fi
}
kverbs "RC through the RQ" size=4096
kverbs "RC through an SRQ" size=4096 srq=1
kverbs "RC, 1 MiB" size=1048576
# Retransmissions or drops here would explain a slow run.
note "counters: $(rdma statistic show link rxe0/1)"
expect "rdma link del" rdma link del rxe0
