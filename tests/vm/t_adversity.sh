# The reliability engine under adversity, on both drivers (the C driver is
# the reference; where it fails, that is recorded, not hidden):
#   - data integrity (integrity.py, quick set: every operation, atomics,
#     48 in flight, guard bytes) with netem on both ends of the veth pair:
#     1% loss at path MTU 256, 5% loss at path MTU 4096 (the veths at MTU
#     9000), 1% duplication and 25% reordering at 1024; each run's retry,
#     duplicate and NAK counters printed, so the faults were exercised;
#   - adversity.py: retry exhaustion when the peer goes silent, RNR
#     exhaustion and a late receive, QPs destroyed with their retry timer
#     armed, two processes racing FETCH_AND_ADD on one counter;
#   - retry exhaustion when the peer's namespace is deleted mid-transfer
#     (adversity.py retry_peer_gone), on a routed topology: deleting a
#     namespace deletes its veths and their peers, so with the plain pair
#     rxe0's own link would go too.
# Ours must pass everything. The C driver stalls on multi-packet messages
# under loss (a known failure of it): its lossy runs are bounded at
# RXE_C_LOSSY_BOUND seconds (default 90) and a run that does not finish is
# reported as "C known failure", not failed.
. "$(dirname "$0")/lib.sh"

need_pyverbs
rxe_load || fail "modprobe"
two_namespaces 9000 || fail "two-namespace set-up"
here=$(dirname "$0")

netem_both() { # netem arguments, or "off"
    tc qdisc del dev veth-a root 2>/dev/null
    ip netns exec peer tc qdisc del dev veth-b root 2>/dev/null
    [ "$1" = off ] && return 0
    tc qdisc add dev veth-a root netem "$@" &&
        ip netns exec peer tc qdisc add dev veth-b root netem "$@"
}

counters() { # DEV [netns]: the transport counters that show faults
    local cmd=(rdma statistic show link "$1/1") name= word line=
    [ -z "${2:-}" ] || cmd=(ip netns exec "$2" "${cmd[@]}")
    # "link DEV/1 NAME VALUE NAME VALUE ...", split by the shell: no
    # pipeline (a process costs a second under TCG).
    for word in $("${cmd[@]}"); do
        if [ -z "$name" ]; then name=$word; continue; fi
        case $name in
            duplicate_request|out_of_seq_request|rcvd_seq_err|completer_retry_err|retry_exceeded_err|rcvd_rnr_err|send_rnr_err|sent_pkts)
                line+="$name=$word " ;;
        esac
        name=
    done
    echo "$line"
}

bad=0
for run in "256 loss 1%" "4096 loss 5%" "1024 duplicate 1%" "1024 delay 2ms reorder 25% 50%"; do
    mtu=${run%% *} cond=${run#* }
    netem_both $cond || fail "netem $cond"
    bound=600
    [ "$RXE_DRIVER" = c ] && bound=${RXE_C_LOSSY_BOUND:-90}
    start=$SECONDS
    RXE_MTU=$mtu RXE_INTEGRITY_QUICK=1 timeout -k 5 "$bound" "$PY" "$here/integrity.py" rxe0 "$g0" rxe1 "$g1" \
        > /tmp/adv.out 2>&1
    rc=$?
    took=$((SECONDS - start))
    netem_both off
    summary="requester: $(counters rxe0)| responder: $(counters rxe1 peer)"
    if [ $rc = 0 ]; then
        note "ok: integrity under netem $cond at MTU $mtu ($took s): $(tail -1 /tmp/adv.out)"
    elif [ "$RXE_DRIVER" = c ]; then
        if [ $rc = 124 ] || [ $rc = 137 ]; then
            note "C known failure: integrity under netem $cond at MTU $mtu did not finish in $took s"
        else
            note "C known failure: integrity under netem $cond at MTU $mtu failed after $took s: $(tail -1 /tmp/adv.out)"
        fi
    else
        sed 's/^/    /' /tmp/adv.out | tail -20
        note "FAILED: integrity under netem $cond at MTU $mtu ($took s, exit $rc)"
        bad=1
    fi
    note "  counters so far: $summary"
    # A QP left in ERROR by a stalled run is gone with its process.
done

cases=(retry_exhausted rnr_exhausted rnr_late_recv destroy_armed atomic_race)
if [ "$RXE_DRIVER" = c ] && [ -z "${RXE_ADVERSITY_ALL:-}" ]; then
    # Destroying a QP whose retry timer is armed makes the C driver wait
    # about a minute and then WARN in __rxe_cleanup (rxe_pool.c:212,
    # references not dropped in time), which fails the test by its kernel
    # log: a known failure of the C driver, not run (RXE_ADVERSITY_ALL=1
    # runs it).
    cases=(retry_exhausted rnr_exhausted rnr_late_recv atomic_race)
    note "C known failure: destroy_armed (WARN in __rxe_cleanup), not run"
fi
expect "adversity cases" "$PY" "$here/adversity.py" rxe0 "$g0" rxe1 "$g1" "${cases[@]}"
sed 's/^/  /' /tmp/expect.out
two_namespaces_down

# routed_namespaces: rxe0 on veth-a (10.0.0.1) here, rxe1 on veth-b
# (10.0.1.2) in namespace "peer", namespace "mid" routing between them
# (veth-m 10.0.0.254, the peer of veth-a; veth-n 10.0.1.254, the peer of
# veth-b). Deleting "peer" deletes veth-b and veth-n, while veth-a, rxe0
# and the route stay: only the far end vanishes. Sets g0 and g1.
routed_namespaces() {
    ip netns add mid && ip netns add peer || return 1
    ip link add veth-a address 02:00:00:00:00:0a type veth peer name veth-m || return 1
    ip link add veth-b address 02:00:00:00:00:0b type veth peer name veth-n || return 1
    ip link set veth-m netns mid && ip link set veth-n netns mid && ip link set veth-b netns peer || return 1
    ip netns exec mid sh -c 'ip addr add 10.0.0.254/24 dev veth-m && ip addr add 10.0.1.254/24 dev veth-n &&
        ip link set lo up && ip link set veth-m up && ip link set veth-n up &&
        sysctl -qw net.ipv4.ip_forward=1' || return 1
    ip netns exec peer sh -c 'ip addr add 10.0.1.2/24 dev veth-b && ip link set lo up &&
        ip link set veth-b up && ip route add default via 10.0.1.254' || return 1
    ip addr add 10.0.0.1/24 dev veth-a && ip link set veth-a up || return 1
    ip route add 10.0.1.0/24 via 10.0.0.254 || return 1
    rdma link add rxe0 type rxe netdev veth-a || return 1
    ip netns exec peer rdma link add rxe1 type rxe netdev veth-b || return 1
    wait_for 20 port_state_is rxe0 ACTIVE || return 1
    wait_for 20 port_state_is rxe1 ACTIVE || return 1
    wait_for 30 gid_index rxe0 ffff:0a00:0001 || return 1
    wait_for 30 gid_index rxe1 ffff:0a00:0102 || return 1
    g0=$(gid_index rxe0 ffff:0a00:0001)
    g1=$(gid_index rxe1 ffff:0a00:0102)
}

routed_namespaces || fail "routed set-up"
if "$PY" "$here/adversity.py" rxe0 "$g0" rxe1 "$g1" retry_peer_gone > /tmp/adv.out 2>&1; then
    note "ok: $(tail -1 /tmp/adv.out)"
elif [ "$RXE_DRIVER" = c ]; then
    note "C known failure: retry_peer_gone: $(tail -1 /tmp/adv.out)"
else
    sed 's/^/    /' /tmp/adv.out | tail -20
    note "FAILED: retry_peer_gone"
    bad=1
fi
expect "rxe1 gone with its namespace" wait_for 30 sh -c "! rdma link show rxe1/1"
rdma link del rxe0
ip netns del mid
ip link del veth-a 2>/dev/null
[ $bad = 0 ] || fail "integrity under loss or retry_peer_gone"
