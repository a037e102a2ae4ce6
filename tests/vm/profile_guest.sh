#!/bin/bash
# Guest side of scripts/profile.sh: a CPU profile (perf record, the
# cpu-clock event: TCG has no PMU) of the whole guest while one perftest
# client runs against its server between two namespaces (as in
# bench_guest.sh), for each driver named. Writes
# $RXE_LOGDIR/profile-DRIVER.txt: the client's result, then the kernel
# and user symbols with at least 0.5% of the samples. With -g "ROOT...",
# a call-graph profile, and after the flat one, for each ROOT (a function
# name, e.g. ib_uverbs_post_send or udp_queue_rcv_one_skb) the samples
# that pass through it broken down by leaf symbol, callee and memcpy
# caller (tests/vm/perf_roots.py).
#
#   profile_guest.sh [-g "ROOT..."] PROG SIZE ITERS DRIVER...
#                                 e.g. ib_write_bw 65536 300 rust
#                                 or ib_write_bw,-q,16 65536 300 rust
#                                 or lo,ib_write_bw 65536 300 rust (one device)
#   profile_guest.sh nvme MIB 0 DRIVER...          the NVMe read-back (t_nvme.sh)
roots=
if [ "${1:-}" = -g ]; then roots=$2; shift 2; fi
# PROG may carry perftest options after commas: ib_write_bw,-q,16.
# A leading "lo," runs server and client on rxe0 (the loopback path).
prog=${1//,/ } size=$2 iters=$3; shift 3
loop=
case $prog in "lo "*) loop=1 prog=${prog#lo } ;; esac
[ $# -gt 0 ] || set -- rust
export RXE_DRIVER=$1
. "$(dirname "$0")/lib.sh"
set -u

# PROG nvme: the read-back of t_nvme.sh (SIZE MiB written, then read back
# through nvme-rdma and nvmet-rdma on one device) instead of perftest.
nvme_profile() {
    local driver=$1 out=$2 data=/tmp/perf-$1.data t0=$SECONDS
    rxe_use_driver "$driver"
    rxe_driver_is "$driver" || { echo "could not select driver $driver" | tee "$out"; return; }
    RXE_DRIVER=$driver RXE_NVME_PERF=$data bash "$(dirname "$0")/t_nvme.sh" "$size" > "$out.client" 2>&1
    echo "$driver: t_nvme.sh $size: exit $? after $((SECONDS - t0)) s"
    {
        echo "== $driver: NVMe read-back of $size MiB"
        grep -E "ok:|FAILED" "$out.client"
        perf report -q -i "$data" --stdio --no-children --sort dso,sym --percent-limit 0.5 2>/dev/null
    } > "$out"
    cat "$out"
}

# debug_counters: our module-wide debugfs counters, "name value" sorted by
# name (nothing for the C driver).
debug_counters() {
    local f
    for f in /sys/kernel/debug/rdma_rxe/*; do
        [ -f "$f" ] && [ "${f##*/}" != ceiling ] || continue
        echo "${f##*/} $(cat "$f")"
    done | sort
}

# hw_counters: the rxe devices' counters (rxe's 17, both drivers), "dev/name
# value" sorted by name, for the devices of this namespace and of peer (in
# the shared netns mode of the RDMA subsystem, peer sees the same devices:
# those are listed once).
hw_counters() {
    local f here
    here=$(ls /sys/class/infiniband 2>/dev/null | tr '\n' ' ')
    {
        for f in /sys/class/infiniband/*/ports/1/hw_counters/*; do
            [ -f "$f" ] && echo "${f#/sys/class/infiniband/} $(cat "$f")"
        done
        ip netns exec peer sh -c 'for f in /sys/class/infiniband/*/ports/1/hw_counters/*; do
            d=${f#/sys/class/infiniband/}; d=${d%%/*}
            case " $1 " in *" $d "*) continue ;; esac
            [ -f "$f" ] && echo "peer:${f#/sys/class/infiniband/} $(cat "$f")"; done' sh "$here" 2>/dev/null
    } | sed 's|/ports/1/hw_counters/|/|' | sort -u
}

# ipis: the interrupt counts that cross-CPU wake-ups and timers move
# (local timer, rescheduling, function call and IRQ work IPIs), "NAME
# cpu0 cpu1 ..." per line.
ipis() {
    awk '$1 ~ /^(LOC|RES|CAL|IWI):$/ { l = $1; for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) l = l " " $i; print l }' \
        /proc/interrupts
}

for driver in "$@"; do
    out=$RXE_LOGDIR/profile-$driver.txt
    if [ "$prog" = nvme ]; then
        nvme_profile "$driver" "$out"
        continue
    fi
    two_namespaces_down; rxe_unload >/dev/null 2>&1
    # rust:P=V,...: ours loaded with those module parameters.
    module=${driver%%:*} args=
    [ "$module" = "$driver" ] || args=${driver#*:}
    rxe_use_driver "$module"
    # shellcheck disable=SC2086
    if ! rxe_driver_is "$module" || ! modprobe rdma_rxe ${args//,/ } || ! two_namespaces; then
        echo "could not set up driver $driver" | tee "$out"; continue
    fi
    port=$((19000 + RANDOM % 1000))
    ns=(ip netns exec peer) sdev=rxe1 sgid=$g1 addr=10.0.0.2
    [ -z "$loop" ] || ns=() sdev=rxe0 sgid=$g0 addr=10.0.0.1
    "${ns[@]}" timeout 1800 $prog -d $sdev -x "$sgid" -p $port -F -s "$size" -n "$iters" \
        > "$out.server" 2>&1 &
    spid=$!
    wait_for 120 sh -c "${ns[*]} ss -Htln 'sport = :$port' | grep -q :$port"
    # Not in $RXE_LOGDIR: perf cannot write its data to the shared
    # filesystem (EFAULT), the guest's /tmp is its own.
    data=/tmp/perf-$driver.data
    t0=$SECONDS
    debug0=$(debug_counters)
    hw0=$(hw_counters)
    ipi0=$(ipis)
    perf record -e cpu-clock -a ${roots:+-g} -o "$data" -- \
        timeout 1800 $prog -d rxe0 -x "$g0" -p $port -F -s "$size" -n "$iters" $addr \
        > "$out.client" 2> "$out.perf"
    echo "$driver: $prog -s $size -n $iters: exit $? after $((SECONDS - t0)) s"
    ipi1=$(ipis)
    cat "$out.perf"
    end=$((SECONDS + 30))
    while kill -0 $spid 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.5; done
    kill $spid 2>/dev/null; wait $spid 2>/dev/null
    {
        echo "== $driver: $prog -s $size -n $iters ($((SECONDS - t0)) s)"
        grep -E "^ *$size " "$out.client"
        perf report -q -i "$data" --kallsyms=/proc/kallsyms --stdio --no-children \
            --sort dso,sym --percent-limit 0.5 ${roots:+-g none} 2>/dev/null
        # Where the work runs: each vCPU's share, and each task's (the
        # softirqs are accounted to whatever task they interrupted).
        echo "-- by cpu, then by cpu and task"
        perf report -q -i "$data" --stdio --no-children --sort cpu ${roots:+-g none} 2>/dev/null
        perf report -q -i "$data" --stdio --no-children --sort cpu,comm \
            --percent-limit 1 ${roots:+-g none} 2>/dev/null
        # Our module-wide debugfs counters that moved during the run.
        if [ -n "$debug0" ]; then
            echo "-- debugfs counters, change during the run"
            join <(echo "$debug0") <(debug_counters) | awk '$3 != $2 { print "  " $1, $3 - $2 }'
        fi
        # The device counters that moved (RNR NAKs, retries, sequence
        # errors: how each driver's run went on the wire).
        echo "-- device counters, change during the run"
        join <(echo "$hw0") <(hw_counters) | awk '$3 != $2 { print "  " $1, $3 - $2 }'
        echo "-- interrupts during the run, per CPU"
        paste -d' ' <(echo "$ipi0") <(echo "$ipi1") |
            awk '{ n = NF / 2; l = "  " $1; for (i = 2; i <= n; i++) l = l " " ($(i + n) - $i); print l }'
        if [ -n "$roots" ]; then
            # The stacks are kept (compressed, beside this report) for
            # other questions than these: perf_roots.py reads them again.
            # Written and compressed before the next step, so that the
            # guest cannot shut down on a half-written file.
            perf script -i "$data" --kallsyms=/proc/kallsyms -F comm,tid,ip,sym,symoff \
                > "$out.stacks" 2>/dev/null
            # shellcheck disable=SC2086
            python3 "$(dirname "$0")/perf_roots.py" $roots < "$out.stacks"
            gzip -f "$out.stacks"
        fi
    } > "$out"
    cat "$out"
    two_namespaces_down; rxe_unload >/dev/null 2>&1
done
exit 0
