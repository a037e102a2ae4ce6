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
rxe_load || fail "modprobe"
veth_pair
expect "add rxe0" rdma link add rxe0 type rxe netdev veth-a
wait_for 20 link_state_is rxe0 ACTIVE || fail "port not active"
wait_for 30 sh -c "grep -qs ffff:0a00:0001 /sys/class/infiniband/rxe0/ports/1/gids/*" \
    || fail "no IPv4 GID"
g=$(basename "$(grep -ls ffff:0a00:0001 /sys/class/infiniband/rxe0/ports/1/gids/* | sort -t/ -k9 -n | head -1)")

kverbs() { # DESCRIPTION PARAMS...
    local what=$1; shift
    local before
    before=$(dmesg | wc -l)
    if insmod "$ko" dev=rxe0 gid_index="$g" "$@"; then
        rmmod rxe_kverbs_test
        note "ok: $what: $(dmesg | tail -n +$((before + 1)) | grep -o 'rxe_kverbs_test: PASS.*')"
    else
        dmesg | tail -n +$((before + 1)) | grep rxe_kverbs_test | sed 's/^/    /'
        fail "$what"
    fi
}
kverbs "RC through the RQ" size=4096
kverbs "RC through an SRQ" size=4096 srq=1
kverbs "RC, 1 MiB" size=1048576
expect "rdma link del" rdma link del rxe0
