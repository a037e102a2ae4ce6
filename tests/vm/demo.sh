#!/bin/bash
# Guest side of scripts/demo.sh: our rdma_rxe at work, for a reader. Two
# RDMA devices on the two ends of a veth pair (one in a network namespace,
# as if on another host), an ibv_rc_pingpong between them with its numbers,
# and the transport counters the traffic moved.
set -u
export RXE_DRIVER=rust
. "$(dirname "$0")/lib.sh"
say() { printf '\n== %s\n' "$*"; }

rxe_use_driver rust >/dev/null 2>&1 || fail "cannot install rdma_rxe.ko in the guest"
rxe_load_checked rust >/dev/null || fail "the loaded rdma_rxe is not ours"
say "The driver"
echo "rdma_rxe: $(modinfo -F description rdma_rxe)"
echo "          (loaded: /sys/module/rdma_rxe, taint '$(cat /sys/module/rdma_rxe/taint)' = out of tree)"

two_namespaces || fail "could not set up rxe0 and rxe1"
say "Two RoCE devices on a veth pair: rxe0 here (10.0.0.1), rxe1 in namespace 'peer' (10.0.0.2)"
echo "\$ rdma link show"
rdma link show rxe0/1
ip netns exec peer rdma link show rxe1/1
echo "\$ ibv_devinfo -d rxe0   (through Debian's stock librxe)"
ibv_devinfo -d rxe0 | grep -E 'hca_id|transport|node_guid|vendor_id|port:|state:|active_mtu|link_layer'

counters() { rdma statistic show link rxe0/1 | tr ' ' '\n' | awk 'n != "" { print n, $1; n = "" } /^[a-z_]+$/ && !/^(link|rxe0)$/ { n = $1 }'; }
counters > /tmp/demo.before

size=4096 iters=100
say "ibv_rc_pingpong: $iters round trips of $size bytes over RC, rxe1 (server) <-> rxe0 (client)"
ip netns exec peer timeout 660 ibv_rc_pingpong -d rxe1 -g "$g1" -s $size -n $iters -c > /tmp/demo.server 2>&1 &
server=$!
wait_for 60 bash -c "ip netns exec peer ss -Htln 'sport = :18515' | grep -q 18515" ||
    fail "the server did not start: $(cat /tmp/demo.server)"
echo "\$ ibv_rc_pingpong -d rxe0 -g $g0 -s $size -n $iters -c 10.0.0.2"
start=$SECONDS
timeout 600 ibv_rc_pingpong -d rxe0 -g "$g0" -s $size -n $iters -c 10.0.0.2 > /tmp/demo.client 2>&1
rc=$?
if [ $rc != 0 ]; then
    cat /tmp/demo.client /tmp/demo.server
    [ $rc != 124 ] || fail "ibv_rc_pingpong did not finish in $((SECONDS - start)) s"
    fail "ibv_rc_pingpong failed (exit $rc)"
fi
wait $server
grep -Ev 'local address|remote address' /tmp/demo.client | sed 's/^/  client: /'
grep -E 'bytes in' /tmp/demo.server | sed 's/^/  server: /'
echo "  (-c: every received buffer was checked; under emulation (TCG) the rate says little)"

say "Counters of rxe0 that moved (rdma statistic show link rxe0/1)"
counters > /tmp/demo.after
awk 'NR == FNR { b[$1] = $2; next } $2 != b[$1] { printf "  %-28s %8d -> %d\n", $1, b[$1], $2 }' \
    /tmp/demo.before /tmp/demo.after

two_namespaces_down
rxe_unload || fail "rdma_rxe did not unload"

say "What next"
echo "Run every test against the C driver and ours: sudo scripts/test.sh (Documentation/testing.md);"
echo "on a real NIC: rdma link add rxe0 type rxe netdev eth0 (Documentation/using.md)."
