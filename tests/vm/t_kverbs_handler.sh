# A kernel ULP posting from its completion handler (a two-CPU test: the
# suite runs it in its 2-vCPU guest). tests/kmod/rxe_kverbs_test.c with
# handler_post=1: two RC QPs of rxe0 connected to each other; the
# receiving QP sends a message of its own first (acknowledged), then
# receives 1 MiB, which receive spreading processes on the QP's receive
# CPU, not its transmit CPU; the receive CQ's completion handler, which
# the driver calls there with the QP's lock held (and the CQ's, interrupts
# off), posts a SEND on that QP. Every completion must arrive: the post
# must neither wait for the QP's lock there (it would spin on its own
# CPU's lock) nor be lost (the driver leaves it to the QP's transmit
# work).
. "$(dirname "$0")/lib.sh"

[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs (the suite's 2-vCPU guest), has $(nproc)"
ko=$RXE_LOGDIR/kmod/rxe_kverbs_test.ko
[ -f "$ko" ] || fail "$ko missing (scripts/test.sh builds it on the host)"
one_device
before=$(dmesg | wc -l)
timeout -k 5 120 insmod "$ko" dev=rxe0 gid_index="$g0" size=1048576 handler_post=1 || {
    dmesg | tail -n +$((before + 1)) | grep rxe_kverbs_test | sed 's/^/    /'
    fail "a SEND posted from the completion handler"
}
rmmod rxe_kverbs_test
note "$(dmesg | tail -n +$((before + 1)) | grep -o 'rxe_kverbs_test: PASS.*')"
[ "$RXE_DRIVER" = c ] || note "receive spreading moved $(cat /sys/kernel/debug/rdma_rxe/rcvd_spread) packets"
expect "rdma link del" rdma link del rxe0
