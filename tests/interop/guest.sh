#!/bin/bash
# One side of the wire interop test (scripts/interop.sh): runs in a guest
# joined to one other guest by a virtual wire (a virtio NIC whose MAC
# names the side), with one driver loaded; for each phase of its plan it
# runs each case's server or client and records a verdict per case. The
# two sides meet through files in RXE_LOGDIR, which both guests mount
# read-write.
#
#   guest.sh SIDE DRIVER BOOT   SIDE 1 or 2 (10.7.0.SIDE on the wire),
#                               BOOT this boot's directory in RXE_LOGDIR
#
# The plan, BOOT/plan-SIDE.txt, one phase per line: "ROLE SUBDIR CASE...",
# ROLE server or client; the phase's files go to $RXE_LOGDIR/SUBDIR (both
# sides name the same SUBDIR for a phase, in the same order). So one boot
# of the two guests runs a C server against our client, then our server
# against a C client.
#
# A CASE is a case's name (command_for below), or NAME@lossP: that case
# with netem loss of P% on this side's NIC (the other side sets the same).
#
# Settings, from BOOT/interop.env:
# RXE_INTEROP_LOSS (percent, default 0): netem loss on this side's NIC
#   for the cases that do not name their own.
# RXE_INTEROP_BOUND (seconds, default 240): how long one case may take.
# RXE_INTEROP_CAPTURE=1: capture each case's RoCE packets (tcpdump), or a
#   list of the cases to capture.
# RXE_INTEGRITY_QUICK=1: integrity2.py's quick set.
# RXE_INTEROP_TRACE=1: all of our driver's trace events in ROLE-CASE.trace
#   (without it, only its go-back-N decisions and exhausted retries).
#
# Results: SUBDIR/interop-ROLE.txt, one line per case
# "PASS|FAIL<TAB>CASE<TAB>SECONDS<TAB>WHY"; each case's output in
# SUBDIR/ROLE-CASE.out, the counters after it in ROLE-CASE.counters.
side=$1 driver=$2 boot=$RXE_LOGDIR/$3
export RXE_DRIVER=$driver
. "$RXE_REPO/tests/vm/lib.sh"
# The host's settings (scripts/interop.sh writes them next to the plan).
if [ -f "$boot/interop.env" ]; then
    set -a
    . "$boot/interop.env"
    set +a
fi

bound=${RXE_INTEROP_BOUND:-240}
loss=${RXE_INTEROP_LOSS:-0}
case $side in
    1|2) ;;
    *) echo "side must be 1 or 2" >&2; exit 2 ;;
esac
peer=$((3 - side))
my_ip=10.7.0.$side peer_ip=10.7.0.$peer
mapfile -t plan < "$boot/plan-$side.txt"

# The phase under way: set by begin_phase.
role= dir= results= other= server_ip=
begin_phase() { # ROLE SUBDIR
    role=$1 dir=$RXE_LOGDIR/$2
    mkdir -p "$dir"
    results=$dir/interop-$role.txt
    : > "$results"
    case $role in
        server) other=client server_ip=$my_ip ;;
        *) other=server server_ip=$peer_ip ;;
    esac
}

# mark NAME: tell the other side NAME happened (in this phase).
mark() { echo "$EPOCHSECONDS" > "$dir/mark-$1"; }
# await_peer NAME SECONDS: await NAME, but give up at once if the other
# side's set-up failed.
peer_event() { [ -e "$dir/mark-$1" ] || [ -e "$boot/mark-side$peer-gone" ]; }
await_peer() { wait_for "$2" peer_event "$1" && [ -e "$dir/mark-$1" ]; }

record() { # VERDICT CASE SECONDS WHY
    printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$results"
    echo "$role: $1 $2 (${3} s) $4"
}

# Fail every case of every phase at once if the set-up fails, so the other
# side does not wait for cases that will never run.
setup_failed() {
    echo "side $side: set-up failed: $*" >&2
    echo "$EPOCHSECONDS" > "$boot/mark-side$side-gone"
    local line c
    for line in "${plan[@]}"; do
        read -r -a words <<< "$line"
        begin_phase "${words[0]}" "${words[1]}"
        for c in "${words[@]:2}"; do record FAIL "$c" 0 "set-up: $1"; done
    done
    exit 1
}

rxe_use_driver
if [ "$driver" = rust ] && [ -n "${RXE_INTEROP_RUST_PARAMS:-}" ]; then
    echo "options rdma_rxe $RXE_INTEROP_RUST_PARAMS" > /etc/modprobe.d/rxe-interop.conf
fi
rxe_load_checked || setup_failed "rdma_rxe ($driver) did not load"

# The wire's NIC: the one whose MAC scripts/interop.sh gave this side.
nic=
for a in /sys/class/net/*/address; do
    read -r mac < "$a"
    if [ "$mac" = "52:54:00:7e:00:0$side" ]; then
        nic=${a%/address}; nic=${nic##*/}
    fi
done
[ -n "$nic" ] || setup_failed "no NIC with MAC 52:54:00:7e:00:0$side"
# Room for a 4096-byte path MTU (RoCE headers on top of the payload).
ip link set "$nic" mtu 9000 || setup_failed "mtu 9000 on $nic"
ip addr add "$my_ip/24" dev "$nic"
ip link set lo up
ip link set "$nic" up
# set_loss P: netem loss of P% on the NIC from now on (0: none).
cur_loss=0
set_loss() {
    [ "$1" != "$cur_loss" ] || return 0
    if [ "$1" = 0 ]; then
        tc qdisc del dev "$nic" root || return 1
    else
        tc qdisc replace dev "$nic" root netem loss "$1%" || return 1
    fi
    cur_loss=$1
}
set_loss "$loss" || setup_failed "netem loss $loss% on $nic"
rdma link add rxe0 type rxe netdev "$nic" || setup_failed "rdma link add rxe0 netdev $nic"
wait_for 30 link_state_is rxe0 ACTIVE || setup_failed "rxe0 not ACTIVE"
pat=ffff:0a07:000$side
wait_for 30 gid_index rxe0 "$pat" || setup_failed "no GID for $my_ip"
gid=$(gid_index rxe0 "$pat")
echo "side $side: $(rxe_loaded_driver) driver, rxe0 on $nic ($my_ip), GID index $gid, loss $loss%"

mount -t debugfs none /sys/kernel/debug 2> /dev/null || true
tracing=/sys/kernel/tracing
if [ -d "$tracing/events/rdma_rxe" ]; then
    echo 4096 > "$tracing/buffer_size_kb"
    if [ -n "${RXE_INTEROP_TRACE:-}" ]; then
        echo 1 > "$tracing/events/rdma_rxe/enable"
    else
        echo 1 > "$tracing/events/rdma_rxe/rxe_req_go_back/enable"
        echo 1 > "$tracing/events/rdma_rxe/rxe_retry_exhausted/enable"
    fi
fi

echo "$EPOCHSECONDS" > "$boot/mark-side$side-up"
wait_for 900 test -e "$boot/mark-side$peer-up" -o -e "$boot/mark-side$peer-gone" &&
    [ -e "$boot/mark-side$peer-up" ] || setup_failed "side $peer did not come up"
# The wire works at the IP level before any RDMA is tried.
wait_for 30 ping -c 1 -W 2 "$peer_ip" || setup_failed "no ping to $peer_ip"

# A perftest client and server agree on everything but the server's address.
perftest_args() { # CASE -> the common arguments
    case $1 in
        ib_send_bw) echo "ib_send_bw -s 65536 -n 200" ;;
        ib_write_bw) echo "ib_write_bw -s 65536 -n 200" ;;
        # Small messages posted 16 to a call: ours asks for an ACK once
        # per burst (ack_req_coalesce), C's responder must answer that.
        ib_write_bw_64) echo "ib_write_bw -s 64 -n 4000 --post_list 16" ;;
        ib_send_bw_64) echo "ib_send_bw -s 64 -n 4000 --post_list 16" ;;
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

# capture_wanted SPEC: is case SPEC to be captured (RXE_INTEROP_CAPTURE
# is 1 for every case, or a list of cases)?
capture_wanted() {
    case " ${RXE_INTEROP_CAPTURE:-} " in
        "  ") return 1 ;;
        " 1 "|*" $1 "*) return 0 ;;
    esac
    return 1
}

# dump_state: our driver's QPs (debugfs qps: PSNs, timer, outstanding
# WQEs), either driver's as `rdma res` shows them, and the processes of a
# case with their wait channels.
dump_state() {
    local f
    echo "at $EPOCHSECONDS"
    for f in /sys/kernel/debug/rdma_rxe/*/qps; do
        [ -r "$f" ] && { echo "== $f"; cat "$f"; }
    done
    # Either driver's QPs as ib_core reports them (state, sq-psn, rq-psn).
    echo "== rdma res show qp"
    rdma -d res show qp
    ps -eo pid,stat,wchan:32,args | grep -E 'pingpong|ib_|rping|python3' | grep -v grep
}

# attempt_case SPEC KEY: one attempt at case SPEC, its files and marks
# named KEY; sets attempt_verdict, attempt_why, attempt_secs (verdict
# "SETUP" when the case could not start: no second attempt).
attempt_case() {
    local spec=$1 key=$2 c=${1%@*} case_loss=$loss cmd out start pid rc why= port t
    [[ $spec != *@loss* ]] || case_loss=${spec##*@loss}
    out=$dir/$role-$key.out
    # Tell apart "the case's command failed" from "its set-up failed".
    attempt_verdict=SETUP attempt_secs=0
    set_loss "$case_loss" || { attempt_why="netem loss $case_loss% on $nic"; c=; }
    cmd=$(command_for "$c") || { [ -z "$c" ] || attempt_why="unknown case"; c=; }
    if [ -z "$c" ]; then
        mark "$role-end-$key"
        await_peer "$other-end-$key" $((bound + 120)) || true
        return
    fi
    start=$EPOCHSECONDS
    # Our driver's go-back-N decisions (and, with RXE_INTEROP_TRACE=1,
    # every PSN check and ACK) during the case, in ROLE-SPEC.trace.
    if [ -d "$tracing/events/rdma_rxe" ]; then
        echo 0 > "$tracing/tracing_on"
        : > "$tracing/trace"
        echo 1 > "$tracing/tracing_on"
    fi
    if capture_wanted "$spec"; then
        tcpdump -i "$nic" -w "$dir/$role-$key.pcap" udp port 4791 2> /dev/null &
        cap=$!
    fi
    echo "\$ $cmd" > "$out"
    # What the QPs and the case's processes were doing just before the
    # bound ends the case (ROLE-KEY.state): our driver's live PSN state
    # (debugfs qps) and where each process waits.
    ( sleep $((bound - 10)); dump_state > "$dir/$role-$key.state" 2>&1 ) &
    local dumper=$!
    if [ "$role" = server ]; then
        timeout "$bound" $cmd >> "$out" 2>&1 &
        pid=$!
        port=$(listen_port "$c")
        if [ -n "$port" ]; then
            wait_for 120 tcp_listening "$port" || why="the server did not listen on $port"
        else
            sleep 5
        fi
        mark "ready-$key"
        # The client's end bounds ours: once it is done, 20 s more.
        while kill -0 "$pid" 2> /dev/null; do
            if [ -e "$dir/mark-done-$key" ] || [ -e "$boot/mark-side$peer-gone" ]; then
                t=$(< "$dir/mark-done-$key") 2> /dev/null || t=$EPOCHSECONDS
                if [ $((EPOCHSECONDS - t)) -gt 20 ]; then
                    kill "$pid" 2> /dev/null
                    why=${why:-"still running 20 s after the client ended"}
                fi
            fi
            sleep 1
        done
        wait "$pid"; rc=$?
    else
        if ! await_peer "ready-$key" 300; then
            why="the server never got ready"; rc=1
        fi
        if [ -e "$boot/mark-side$peer-gone" ]; then
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
        mark "done-$key"
    fi
    kill "$dumper" 2> /dev/null; wait "$dumper" 2> /dev/null
    [ -z "${cap:-}" ] || { sleep 1; kill "$cap" 2> /dev/null; wait "$cap" 2> /dev/null; cap=; }
    [ $rc != 124 ] || why=${why:-"did not finish in $bound s"}
    [ $rc = 0 ] || why=${why:-"exit $rc"}
    rdma statistic show link rxe0/1 > "$dir/$role-$key.counters" 2>&1
    [ ! -d "$tracing/events/rdma_rxe" ] || grep -v '^#' "$tracing/trace" > "$dir/$role-$key.trace"
    attempt_secs=$((EPOCHSECONDS - start)) attempt_why=$why
    if [ -z "$why" ]; then
        attempt_verdict=PASS
    else
        attempt_verdict=FAIL
        tail -5 "$out" | sed "s/^/    $role: /"
    fi
    # Neither side starts the next case before both ended this one; each
    # tells the other how its side went.
    echo "$attempt_verdict" > "$dir/verdict-$role-$key"
    mark "$role-end-$key"
    await_peer "$other-end-$key" $((bound + 120)) || true
}

# run_case SPEC: case SPEC, and once more if either side failed it (under
# TCG a guest stalls now and then for longer than a QP timeout), a loss
# case twice more; a pass at a later attempt is recorded as one, with the
# earlier failures as its reason, so they stay visible.
run_case() {
    local spec=$1 mine theirs first_why
    attempt_case "$spec" "$spec"
    if [ "$attempt_verdict" = SETUP ]; then
        record FAIL "$spec" 0 "$attempt_why"
        return
    fi
    mine=$attempt_verdict first_why=$attempt_why
    theirs=$(cat "$dir/verdict-$other-$spec" 2> /dev/null) || theirs=none
    if [ "$mine" = PASS ] && [ "$theirs" = PASS ]; then
        record PASS "$spec" "$attempt_secs" ""
        return
    fi
    echo "$role: $spec failed at the first attempt (this side: $mine ${first_why}; the $other: $theirs): again"
    attempt_case "$spec" "$spec~2"
    mine=$attempt_verdict
    theirs=$(cat "$dir/verdict-$other-$spec~2" 2> /dev/null) || theirs=none
    if [ "$mine" = PASS ] && [ "$theirs" = PASS ]; then
        record PASS "$spec" "$attempt_secs" "passed at the second attempt; the first: ${first_why:-the $other failed}"
        return
    fi
    # A loss case gets a third attempt: with a C server the 64 KiB pingpong
    # at 1% loss now and then stalls in the C driver for good, its
    # requester rewound behind what our client has received and no timer
    # armed (seen C to C too; CI, stop 28: both attempts so); both sides
    # decide from both verdicts, so they stay in step.
    if [[ $spec == *@loss* ]]; then
        local second_why=${attempt_why:-the $other failed}
        echo "$role: $spec failed at the second attempt (this side: $mine ${attempt_why}; the $other: $theirs): once more"
        attempt_case "$spec" "$spec~3"
        if [ "$attempt_verdict" = PASS ]; then
            record PASS "$spec" "$attempt_secs" "passed at the third attempt; the first: ${first_why:-the $other failed}; the second: $second_why"
        else
            record FAIL "$spec" "$attempt_secs" "three attempts: ${first_why:-the $other failed}; $second_why; ${attempt_why:-the $other failed}"
        fi
        return
    fi
    record FAIL "$spec" "$attempt_secs" "both attempts: ${first_why:-the $other failed}; ${attempt_why:-the $other failed}"
}

failed=0
for line in "${plan[@]}"; do
    read -r -a words <<< "$line"
    begin_phase "${words[0]}" "${words[1]}"
    echo "side $side: $role in ${words[1]}: ${words[*]:2}"
    for c in "${words[@]:2}"; do
        run_case "$c"
    done
    mark "$role-finished"
    ! grep -q '^FAIL' "$results" || failed=1
done
exit $failed
