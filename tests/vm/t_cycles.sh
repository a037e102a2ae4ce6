# Load / add / use / del / unload cycles, then kmemleak: nothing of ours
# may leak, and the kernel log must stay clean (checked by the runner).
# Ours does 8 cycles on the production kernel and 4 on the debug kernel,
# where a cycle takes about 35 s under TCG and a leak of one object per
# cycle shows after the first; the C driver, which only has to show the
# test is right, does 3 (RXE_CYCLES overrides, e.g. 100 for a soak).
. "$(dirname "$0")/lib.sh"

km=/sys/kernel/debug/kmemleak
# The production kernel has no kmemleak: there the cycles alone are
# checked (and the kernel log); the debug kernel's pass checks leaks.
leak_check=true
if [ -f "${RXE_KDIR:-}/.config" ] && ! grep -qx 'CONFIG_DEBUG_KMEMLEAK=y' "$RXE_KDIR/.config"; then
    leak_check=false
else
    [ -e $km ] || fail "kmemleak not available"
fi
if [ "$RXE_DRIVER" != rust ]; then
    cycles=${RXE_CYCLES:-3}
elif rxe_debug_kernel; then
    cycles=${RXE_CYCLES:-4}
else
    cycles=${RXE_CYCLES:-8}
fi
veth_pair
for i in $(seq 1 "$cycles"); do
    modprobe rdma_rxe || fail "cycle $i: modprobe"
    rdma link add rxe0 type rxe netdev veth-a || fail "cycle $i: link add"
    ibv_devinfo -d rxe0 > /dev/null || fail "cycle $i: ibv_devinfo"
    rdma link del rxe0 || fail "cycle $i: link del"
    modprobe -r rdma_rxe || fail "cycle $i: modprobe -r"
done
note "ok: $cycles cycles"
if ! $leak_check; then
    note "no kmemleak in this kernel (production kernel): leaks are the debug kernel's pass's to check"
    exit 0
fi
# An object is reported once two scans found no reference to it. Objects
# leaked before this test (boot) may be reported too: only backtraces
# through rxe, ib_core or the UDP tunnel code count.
echo scan > $km; sleep 1; echo scan > $km
cat $km > "$RXE_LOGDIR/kmemleak-$RXE_DRIVER.txt"
n=$(grep -c '^unreferenced object' "$RXE_LOGDIR/kmemleak-$RXE_DRIVER.txt")
ours=$(grep -cE 'rdma_rxe|rxe_|ib_(alloc|register|device|uverbs)|udp_tunnel|udp_sock' "$RXE_LOGDIR/kmemleak-$RXE_DRIVER.txt")
note "kmemleak: $n unreferenced objects, $ours backtrace lines in rxe/ib/udp-tunnel code"
[ "$ours" = 0 ] || { cat "$RXE_LOGDIR/kmemleak-$RXE_DRIVER.txt"; fail "leaks in driver paths"; }
echo clear > $km
