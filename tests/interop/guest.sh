#!/bin/bash
# One side of the wire interop test (scripts/interop.sh): runs in a guest
# joined to one other guest by a virtual wire (a virtio NIC whose MAC
# names the side), with one driver loaded; runs each case's server or
# client and records a verdict per case. The two sides meet through
# files in RXE_LOGDIR, which both guests mount read-write.
#
#   guest.sh server|client DRIVER CASE...
#
# Settings, from $RXE_LOGDIR/interop.env:
# RXE_INTEROP_LOSS (percent, default 0): netem loss on this side's NIC.
# RXE_INTEROP_BOUND (seconds, default 240): how long one case may take.
# RXE_INTEROP_CAPTURE=1: capture each case's RoCE packets (tcpdump).
# RXE_INTEGRITY_QUICK=1: integrity2.py's quick set.
#
# Results: $RXE_LOGDIR/interop-ROLE.txt, one line per case
# "PASS|FAIL<TAB>CASE<TAB>SECONDS<TAB>WHY"; each case's output in
# ROLE-CASE.out, the counters after it in ROLE-CASE.counters.
role=$1 driver=$2
shift 2
export RXE_DRIVER=$driver
. "$RXE_REPO/tests/vm/lib.sh"
# The host's settings (scripts/interop.sh writes them next to the logs).
if [ -f "$RXE_LOGDIR/interop.env" ]; then
    set -a
    . "$RXE_LOGDIR/interop.env"
    set +a
fi

bound=${RXE_INTEROP_BOUND:-240}
loss=${RXE_INTEROP_LOSS:-0}
dir=$RXE_LOGDIR
results=$dir/interop-$role.txt
: > "$results"

case $role in
    server) me=1 peer=2 other=client ;;
    client) me=2 peer=1 other=server ;;
    *) echo "role must be server or client" >&2; exit 2 ;;
esac
my_ip=10.7.0.$me peer_ip=10.7.0.$peer server_ip=10.7.0.1

# mark NAME: tell the other side NAME happened. await NAME SECONDS.
mark() { echo "$EPOCHSECONDS" > "$dir/mark-$1"; }
await() { wait_for "$2" test -e "$dir/mark-$1"; }
# await_peer NAME SECONDS: await NAME, but give up at once if the other
# side's set-up failed.
peer_event() { [ -e "$dir/mark-$1" ] || [ -e "$dir/mark-$other-gone" ]; }
await_peer() { wait_for "$2" peer_event "$1" && [ -e "$dir/mark-$1" ]; }

record() { # VERDICT CASE SECONDS WHY
    printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$results"
    echo "$role: $1 $2 (${3} s) $4"
}

# Fail every case at once if the set-up fails, so the other side does not
# wait for cases that will never run.
setup_failed() {
    echo "$role: set-up failed: $*" >&2
    mark "$role-gone"
    local c
    for c in "${cases[@]}"; do record FAIL "$c" 0 "set-up: $1"; done
    exit 1
}
cases=("$@")

rxe_use_driver
rxe_load_checked || setup_failed "rdma_rxe ($driver) did not load"

# The wire's NIC: the one whose MAC scripts/interop.sh gave this side.
nic=
for a in /sys/class/net/*/address; do
    read -r mac < "$a"
    if [ "$mac" = "52:54:00:7e:00:0$me" ]; then
        nic=${a%/address}; nic=${nic##*/}
    fi
done
[ -n "$nic" ] || setup_failed "no NIC with MAC 52:54:00:7e:00:0$me"
# Room for a 4096-byte path MTU (RoCE headers on top of the payload).
ip link set "$nic" mtu 9000 || setup_failed "mtu 9000 on $nic"
ip addr add "$my_ip/24" dev "$nic"
ip link set lo up
ip link set "$nic" up
if [ "$loss" != 0 ]; then
    tc qdisc add dev "$nic" root netem loss "$loss%" || setup_failed "netem loss $loss% on $nic"
fi
rdma link add rxe0 type rxe netdev "$nic" || setup_failed "rdma link add rxe0 netdev $nic"
wait_for 30 link_state_is rxe0 ACTIVE || setup_failed "rxe0 not ACTIVE"
pat=ffff:0a07:000$me
wait_for 30 gid_index rxe0 "$pat" || setup_failed "no GID for $my_ip"
gid=$(gid_index rxe0 "$pat")
echo "$role: $(rxe_loaded_driver) driver, rxe0 on $nic ($my_ip), GID index $gid, loss $loss%"

mark "$role-up"
await_peer "$other-up" 900 || setup_failed "the $other did not come up"
# The wire works at the IP level before any RDMA is tried.
wait_for 30 ping -c 1 -W 2 "$peer_ip" || setup_failed "no ping to $peer_ip"

# A perftest client and server agree on everything but the server's address.
perftest_args() { # CASE -> the common arguments
    case $1 in
        ib_send_bw) echo "ib_send_bw -s 65536 -n 200" ;;
        ib_write_bw) echo "ib_write_bw -s 65536 -n 200" ;;
        ib_read_bw) echo "ib_read_bw -s 65536 -n 200" ;;
        ib_atomic_bw_cas) echo "ib_atomic_bw -A CMP_AND_SWAP -n 500" ;;
        ib_atomic_bw_faa) echo "ib_atomic_bw -A FETCH_AND_ADD -n 500" ;;
        ib_send_lat) echo "ib_send_lat -s 2 -n 500" ;;
        ib_write_lat) echo "ib_write_lat -s 2 -n 500" ;;
        ib_read_lat) echo "ib_read_lat -s 2 -n 500" ;;
    esac
}

# command CASE: this side's command line for CASE (the client's names the
# server's address).
command_for() {
    local c=$1 srv=
    [ "$role" = server ] || srv=$server_ip
    case $c in
        rc_pingpong_*)
            # rc_pingpong_SIZE_mtuMTU, SIZE 4k, 64k or 1m.
            local size=${c#rc_pingpong_} mtu
            mtu=${size#*_mtu}; size=${size%%_*}
            case $size in 4k) size=4096 n=100 ;; 64k) size=65536 n=50 ;; 1m) size=1048576 n=10 ;; esac
            echo "ibv_rc_pingpong -d rxe0 -g $gid -m $mtu -s $size -n $n -c $srv" ;;
        srq_pingpong) echo "ibv_srq_pingpong -d rxe0 -g $gid -m 1024 -s 4096 -n 50 $srv" ;;
        ud_pingpong) echo "ibv_ud_pingpong -d rxe0 -g $gid -s 1024 -n 100 -c $srv" ;;
        uc_pingpong) echo "ibv_uc_pingpong -d rxe0 -g $gid -m 1024 -s 1024 -n 100 $srv" ;;
        rping)
            if [ "$role" = server ]; then echo "rping -s -a $server_ip -C 20 -S 1024 -V"
            else echo "rping -c -a $server_ip -C 20 -S 1024 -V"; fi ;;
        integrity)
            echo "python3 $RXE_REPO/tests/interop/integrity2.py $role $server_ip rxe0 $gid" ;;
        ib_*) echo "$(perftest_args "$c") -d rxe0 -x $gid -F --report_gbits $srv" ;;
        *) return 1 ;;
    esac
}

# Is something listening on TCP PORT (the out-of-band exchange of the
# pingpongs, perftest and integrity2.py)? Builtins only.
tcp_listening() {
    local hex f line
    printf -v hex ':%04X ' "$1"
    for f in /proc/net/tcp /proc/net/tcp6; do
        while read -r line; do
            case $line in *"$hex"*" 0A "*) return 0 ;; esac
        done < "$f"
    done
    return 1
}
listen_port() { # CASE
    case $1 in
        rping) echo ;;           # rdma_cm: no TCP port to watch
        integrity) echo 18516 ;;
        *) echo 18515 ;;
    esac
}

run_case() {
    local c=$1 cmd out start pid rc why= port t
    out=$dir/$role-$c.out
    cmd=$(command_for "$c") || { record FAIL "$c" 0 "unknown case"; return; }
    start=$EPOCHSECONDS
    if [ -n "${RXE_INTEROP_CAPTURE:-}" ]; then
        tcpdump -i "$nic" -w "$dir/$role-$c.pcap" udp port 4791 2> /dev/null &
        cap=$!
    fi
    echo "\$ $cmd" > "$out"
    if [ "$role" = server ]; then
        timeout "$bound" $cmd >> "$out" 2>&1 &
        pid=$!
        port=$(listen_port "$c")
        if [ -n "$port" ]; then
            wait_for 120 tcp_listening "$port" || why="the server did not listen on $port"
        else
            sleep 5
        fi
        mark "ready-$c"
        # The client's end bounds ours: once it is done, 20 s more.
        while kill -0 "$pid" 2> /dev/null; do
            if [ -e "$dir/mark-done-$c" ] || [ -e "$dir/mark-client-gone" ]; then
                t=$(< "$dir/mark-done-$c") 2> /dev/null || t=$EPOCHSECONDS
                if [ $((EPOCHSECONDS - t)) -gt 20 ]; then
                    kill "$pid" 2> /dev/null
                    why=${why:-"still running 20 s after the client ended"}
                fi
            fi
            sleep 1
        done
        wait "$pid"; rc=$?
    else
        if ! await_peer "ready-$c" 300; then
            why="the server never got ready"; rc=1
        fi
        if [ -e "$dir/mark-server-gone" ]; then
            why="the server's set-up failed"; rc=1
        elif [ -z "$why" ]; then
            # rping's server has no port to watch: one retry if its
            # listen was late.
            timeout "$bound" $cmd >> "$out" 2>&1; rc=$?
            if [ "$c" = rping ] && [ $rc != 0 ] && [ $((EPOCHSECONDS - start)) -lt 30 ]; then
                sleep 5; echo "\$ (again) $cmd" >> "$out"
                timeout "$bound" $cmd >> "$out" 2>&1; rc=$?
            fi
        fi
        mark "done-$c"
    fi
    [ -z "${cap:-}" ] || { sleep 1; kill "$cap" 2> /dev/null; wait "$cap" 2> /dev/null; cap=; }
    [ $rc != 124 ] || why=${why:-"did not finish in $bound s"}
    [ $rc = 0 ] || why=${why:-"exit $rc"}
    rdma statistic show link rxe0/1 > "$dir/$role-$c.counters" 2>&1
    if [ -z "$why" ]; then
        record PASS "$c" $((EPOCHSECONDS - start)) ""
    else
        record FAIL "$c" $((EPOCHSECONDS - start)) "$why"
        tail -5 "$out" | sed "s/^/    $role: /"
    fi
    # Neither side starts the next case before both ended this one.
    mark "$role-end-$c"
    await_peer "$other-end-$c" $((bound + 120)) || true
}

for c in "${cases[@]}"; do
    run_case "$c"
done
mark "$role-finished"
grep -q '^FAIL' "$results" && exit 1
exit 0
