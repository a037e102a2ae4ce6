#!/bin/bash
# NVMe over RDMA on the driver (issue 14 item 5): an nvmet target (a
# memory-backed null_blk namespace, port trtype rdma, ipv4, 4420) on rxe0's address
# and `nvme connect -t rdma` to it from the same host. nvmet-rdma and
# nvme-rdma make their rdma_cm IDs in the initial namespace, so both ends
# are here and the traffic takes rxe's loopback path. Every I/O buffer is
# registered with IB_WR_REG_MR and invalidated (LOCAL_INV, or the target's
# SEND_WITH_INV), so this is fast registration under a real ULP. Checks:
# MIB MiB written and read back byte for byte (O_DIRECT), then fio random
# writes at queue depth 16 verified with crc32c (each step bounded: a
# stalled transport fails, not hangs); disconnect, target
# removed, modules unloaded; the suite checks the kernel log and kmemleak.
# Then the same again from rxe0 to a second port on rxe1 (veth-b, the
# same namespace) with the packets routed through the veth pair and 1% of
# them lost each way (netem): every loss recovered by the transport, the
# data still identical.
#   t_nvme.sh [MIB]   the sequential size (default 256 MiB and fio over
#                     8 MiB on the production kernel; 2 MiB and fio over
#                     512 KiB on the debug kernel, where one 4 KiB I/O
#                     takes about 0.1 s and one of 1 MiB 10 s under TCG
#                     (8 MiB and 2 MiB took 8 minutes): two 1 MiB I/Os
#                     each way and 128 random ones take the same paths
#                     under its checks)
#   RXE_NVME_PERF=FILE  profile the read-back with perf record into FILE
#                     (scripts/profile.sh with RXE_PROFILE_PROG=nvme)
. "$(dirname "$0")/lib.sh"

command -v nvme >/dev/null || fail "nvme-cli missing"
command -v fio >/dev/null || fail "fio missing"
if rxe_debug_kernel; then
    mib=${1:-2} fio_kib=512
else
    mib=${1:-256} fio_kib=8192
fi
nqn=rxe-rs-test
cfg=/sys/kernel/config/nvmet
bdev=/dev/nullb0

one_device
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
expect "nvmet, nvmet-rdma, nvme-rdma load" modprobe -a nvmet nvmet-rdma nvme-rdma
# A file namespace in the guest's /tmp came up with LBA data size 0 (the
# host skipped it); null_blk keeps what is written (memory_backed) and
# allocates it as it is written.
expect "null_blk, 1 GiB, memory-backed" modprobe null_blk nr_devices=1 memory_backed=1 gb=1 bs=4096
wait_for 10 test -b "$bdev" || fail "no $bdev"

# lossy_routes: packets between 10.0.0.1 and 10.0.0.2 out through the
# veth pair, where netem drops 1% each way (see the lossy phase below);
# lossless_routes undoes it (later tests in the boot expect the defaults).
lossy=
saved_sysctl=
lossy_routes() {
    local c
    lossy=1
    saved_sysctl="$(cat /proc/sys/net/ipv4/conf/all/accept_local) $(cat /proc/sys/net/ipv4/conf/all/rp_filter)"
    ip_batch -- "rule add pref 10 iif lo from 10.0.0.1 to 10.0.0.2 table 101" \
        "rule add pref 11 iif lo from 10.0.0.2 to 10.0.0.1 table 102" \
        "route add 10.0.0.2 dev veth-a src 10.0.0.1 table 101" \
        "route add 10.0.0.1 dev veth-b src 10.0.0.2 table 102" \
        "rule add pref 100 lookup local" "rule del pref 0 lookup local" \
        "neigh replace 10.0.0.2 lladdr 02:00:00:00:00:0b dev veth-a nud permanent" \
        "neigh replace 10.0.0.1 lladdr 02:00:00:00:00:0a dev veth-b nud permanent" || return 1
    for c in all veth-a veth-b; do
        echo 1 > /proc/sys/net/ipv4/conf/$c/accept_local
        echo 0 > /proc/sys/net/ipv4/conf/$c/rp_filter
    done
    tc qdisc add dev veth-a root netem loss 1% && tc qdisc add dev veth-b root netem loss 1%
}
lossless_routes() {
    [ -n "$lossy" ] || return 0
    lossy=
    ip rule add pref 0 lookup local 2>/dev/null
    ip rule del pref 100 lookup local 2>/dev/null
    ip rule del pref 10 2>/dev/null; ip rule del pref 11 2>/dev/null
    set -- $saved_sysctl
    echo "${1:-0}" > /proc/sys/net/ipv4/conf/all/accept_local
    echo "${2:-0}" > /proc/sys/net/ipv4/conf/all/rp_filter
    true
}

# The device goes before the target's port. Removing the port while its
# rdma_cm listener is bound makes nvmet destroy the listener (taking
# rdma_cm's handler_mutex) under nvmet_config_sem; an I/O queue whose
# Connect arrived before rdma_cm's ESTABLISHED event (a race between the
# RC data path and the CM's work, won more often the faster the driver)
# was connected under the handler_mutex, taking nvmet_config_sem: lockdep
# reports the pair as a possible deadlock, in nvmet and rdma_cm alone
# (seen once in CI, stop 27, no rxe frame in either chain), and lockdep is
# then off for the rest of the boot. Removed with the device first, the
# listener is destroyed by rdma_cm's DEVICE_REMOVAL handling, and the
# port's removal finds none left to destroy.
teardown() {
    nvme disconnect -n "$nqn" >/dev/null 2>&1
    rdma link del rxe0 2>/dev/null
    rdma link del rxe1 2>/dev/null
    for p in 1 2; do
        rm -f "$cfg/ports/$p/subsystems/$nqn" 2>/dev/null
        rmdir "$cfg/ports/$p" 2>/dev/null
    done
    lossless_routes
    [ -e "$cfg/subsystems/$nqn/namespaces/1/enable" ] && echo 0 > "$cfg/subsystems/$nqn/namespaces/1/enable"
    rmdir "$cfg/subsystems/$nqn/namespaces/1" "$cfg/subsystems/$nqn" 2>/dev/null
    rm -f /tmp/nvme-pattern
    true
}

# The target: one namespace on the null_blk device.
mkdir "$cfg/subsystems/$nqn" || fail "nvmet subsystem"
echo 1 > "$cfg/subsystems/$nqn/attr_allow_any_host"
mkdir "$cfg/subsystems/$nqn/namespaces/1"
echo -n "$bdev" > "$cfg/subsystems/$nqn/namespaces/1/device_path"
echo 1 > "$cfg/subsystems/$nqn/namespaces/1/enable" || fail "nvmet namespace enable"
mkdir "$cfg/ports/1"
echo rdma > "$cfg/ports/1/addr_trtype"
echo ipv4 > "$cfg/ports/1/addr_adrfam"
echo 10.0.0.1 > "$cfg/ports/1/addr_traddr"
echo 4420 > "$cfg/ports/1/addr_trsvcid"
ln -s "$cfg/subsystems/$nqn" "$cfg/ports/1/subsystems/$nqn" || { teardown; fail "nvmet port (rdma on 10.0.0.1:4420)"; }
note "ok: nvmet target $nqn on rdma 10.0.0.1:4420"

dev=
find_dev() {
    local c
    for c in /sys/class/nvme/nvme*; do
        [ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$nqn" ] || continue
        dev=$(ls -d "$c"/nvme*n1 2>/dev/null | head -1)
        [ -n "$dev" ] && dev=/dev/$(basename "$dev") && [ -b "$dev" ] && return 0
    done
    return 1
}

# rate MIB SECONDS: MiB/s, one decimal.
rate() { awk -v m="$1" -v s="$2" 'BEGIN { printf "%.1f", m / (s > 0 ? s : 1) }'; }

# nvme_io WHAT ADDR [HOST-ADDR]: connect to the target at ADDR (from
# HOST-ADDR), write MIB MiB and read them back compared, fio random writes
# verified, disconnect. Sets bad=1 on a failed check.
nvme_io() {
    local what=$1 addr=$2 from=${3:-} start w r
    note "$what:"
    start=$SECONDS
    if ! timeout 120 nvme connect -t rdma -a "$addr" -s 4420 ${from:+-w "$from"} -n "$nqn" > /tmp/expect.out 2>&1; then
        cat /tmp/expect.out >&2; dmesg | tail -20 >&2; teardown; fail "$what: nvme connect -t rdma"
    fi
    wait_for 60 find_dev || { teardown; fail "$what: no block device for $nqn"; }
    find_dev
    note "ok: connected in $((SECONDS - start)) s: $dev ($(cat /sys/class/nvme/*/transport 2>/dev/null | sort -u | tr '\n' ' '))"
    head -c "${mib}M" /dev/urandom > /tmp/nvme-pattern
    start=$SECONDS
    if timeout 600 dd if=/tmp/nvme-pattern of="$dev" bs=1M oflag=direct status=none; then
        w=$((SECONDS - start)); start=$SECONDS
        # Compared as it is read: a second copy would double what the guest's
        # /tmp (memory) holds.
        if (set -o pipefail
            ${RXE_NVME_PERF:+perf record -e cpu-clock -a -o "$RXE_NVME_PERF" --} \
                timeout 600 dd if="$dev" bs=1M count="$mib" iflag=direct status=none | cmp - /tmp/nvme-pattern); then
            r=$((SECONDS - start))
            note "ok: $mib MiB written in $w s and read back identical in $r s ($(rate "$mib" "$w") and $(rate "$mib" "$r") MiB/s)"
        else
            note "FAILED: $what: $mib MiB read back differs or failed"; bad=1
        fi
    else
        note "FAILED: $what: writing $mib MiB"; bad=1
    fi
    rm -f /tmp/nvme-pattern
    start=$SECONDS
    if timeout 600 fio --name=rand --filename="$dev" --rw=randwrite --bs=4k --iodepth=16 \
        --ioengine=libaio --direct=1 --size=${fio_kib}K --verify=crc32c --do_verify=1 \
        --output=/tmp/fio.out > /dev/null 2>&1 && ! grep -q "err= *[1-9]" /tmp/fio.out; then
        note "ok: fio 4 KiB random writes, queue depth 16, $fio_kib KiB verified (crc32c) in $((SECONDS - start)) s: $(grep -o 'IOPS=[^,]*' /tmp/fio.out | head -2 | tr '\n' ' ')"
    else
        sed 's/^/    /' /tmp/fio.out | tail -20
        note "FAILED: $what: fio random writes with verify"; bad=1
    fi
    expect "nvme disconnect" nvme disconnect -n "$nqn"
}

bad=0
lent0=$(cat /sys/kernel/debug/rdma_rxe/sent_zero_copy 2>/dev/null || echo 0)
nvme_io "lossless, over the loopback path" 10.0.0.1
note "counters: $(rdma statistic show link rxe0/1 | tr ' ' '\n' | paste - - | awk '$2 ~ /^[1-9]/ { printf "%s=%s ", $1, $2 }')"
# Ours lends the I/O pages (the host's O_DIRECT buffers under its fast
# registrations, the target's page-allocator buffers under its DMA
# region) to the packets instead of copying them (zero-copy transmit):
# at least half of the 2 x 1024 payload packets per MiB written and read
# back at path MTU 1024.
if [ "$RXE_DRIVER" != c ]; then
    lent=$(( $(cat /sys/kernel/debug/rdma_rxe/sent_zero_copy) - lent0 ))
    note "$lent payload packets lent from the I/O pages"
    [ "$lent" -ge $((mib * 1024)) ] || { note "FAILED: only $lent payload packets lent"; bad=1; }
fi

# Then the same under 1% loss each way (netem on both veths). nvme-rdma and
# nvmet-rdma live in the initial namespace, so both ends are here: rxe1 on
# veth-b (10.0.0.2) carries a second port, and policy routing sends
# packets between the two local addresses out through the veth pair
# instead of lo (rules for locally made packets, `iif lo`, ahead of the
# local table; accept_local takes them in at the other end), so they
# meet netem. The host connects from 10.0.0.1 (rxe0).

expect "add rxe1 on veth-b" rdma link add rxe1 type rxe netdev veth-b
wait_for 30 gid_index rxe1 ffff:0a00:0002 || { teardown; fail "no IPv4 GID on rxe1"; }
mkdir "$cfg/ports/2"
echo rdma > "$cfg/ports/2/addr_trtype"
echo ipv4 > "$cfg/ports/2/addr_adrfam"
echo 10.0.0.2 > "$cfg/ports/2/addr_traddr"
echo 4420 > "$cfg/ports/2/addr_trsvcid"
ln -s "$cfg/subsystems/$nqn" "$cfg/ports/2/subsystems/$nqn" || { teardown; fail "nvmet port (rdma on 10.0.0.2:4420)"; }
lossy_routes || { teardown; fail "routes through the veth pair with netem loss"; }
[ "$(ip route get 10.0.0.2 from 10.0.0.1 | grep -o 'dev [^ ]*')" = "dev veth-a" ] ||
    { teardown; fail "10.0.0.1 -> 10.0.0.2 not routed out of veth-a"; }
if [ "$RXE_DRIVER" = c ] && ! rxe_debug_kernel; then
    # The C driver wrote 256 MiB so in 259 s, read it back in 412 s and
    # ran the 8 MiB of fio in 552 s (ours: 12 s, 14 s and 2 s; one run
    # on the production kernel, stop 28): its multi-packet messages stall
    # under loss until a retry timer fires. A sixteenth keeps its pass
    # within minutes.
    mib=16 fio_kib=512
fi
nvme_io "1% loss each way (netem), rxe0 -> rxe1 through the veth pair" 10.0.0.2 10.0.0.1
lost=$(($(tc -s qdisc show dev veth-a | awk '/dropped/ { gsub(",", ""); print $7 }') +
        $(tc -s qdisc show dev veth-b | awk '/dropped/ { gsub(",", ""); print $7 }')))
note "netem dropped $lost packets"
[ "$lost" -gt 0 ] || { note "FAILED: no packet was lost"; bad=1; }
for d in rxe0 rxe1; do
    note "counters $d: $(rdma statistic show link $d/1 | tr ' ' '\n' | paste - - | awk '$2 ~ /^[1-9]/ { printf "%s=%s ", $1, $2 }')"
done
expect "rdma link del, nvmet's ports still listening on them" rdma link del rxe0
expect "rdma link del rxe1" rdma link del rxe1
teardown
expect "nvme-rdma, nvmet-rdma, nvmet, null_blk unload" modprobe -r nvme-rdma nvmet-rdma nvmet null_blk
[ $bad = 0 ] || fail "NVMe over RDMA"
