# UD multicast, between two devices in two namespaces: the receiving
# netdev joins the groups at the IP level (as rdma_cm does for
# rdma_join_multicast), then
#   - tests/vm/mcast.c through stock librxe, with an IPv4 group and then
#     an IPv6 one: attach and detach
#     (ibv_attach_mcast, ibv_detach_mcast) with their errors, every SEND to
#     the group delivered to each attached QP and to no other, a group's
#     56-QP limit, QPs destroyed while attached;
#   - tests/kmod/rxe_kmcast_test.c: the same through kernel verbs;
#   - mckey (rdmacm-utils): rdma_cm joins the group on both sides and
#     sends 10 datagrams of 100 bytes from rxe0 to rxe1.
# The netdev's multicast filter is checked too: a group's Ethernet
# address in it while the group exists, gone after (a known failure of
# the C driver, which never takes it out).
. "$(dirname "$0")/lib.sh"

# scripts/test.sh builds it on the host before the boot; build it here
# when run by hand.
bin=$RXE_LOGDIR/mcast
src=$(dirname "$0")/mcast.c
if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
    gcc -O1 -g -Wall -o "$bin" "$src" -libverbs || fail "cannot build mcast (libibverbs-dev missing?)"
fi
command -v mckey > /dev/null || fail "mckey (rdmacm-utils) missing"
rxe_load || fail "modprobe"
two_namespaces || fail "two-namespace set-up"
ip -n peer addr add 239.1.2.3/32 dev veth-b autojoin || fail "join 239.1.2.3 on veth-b"

# The second group (239.1.2.2, not joined at the IP level) is in the
# netdev's filter only through the driver: at the group's Ethernet address,
# 01:00:5e:01:02:02 on ours, 33:33:ef:01:02:02 on the C driver (which maps
# every GID the IPv6 way); and gone once the program's exit detached
# everything.
mac=01:00:5e:01:02:02
[ "$RXE_DRIVER" = c ] && mac=33:33:ef:01:02:02
expect "multicast rxe0 to rxe1" env MCAST_FILTER_CMD="ip -n peer maddr show dev veth-b" \
    timeout -k 5 300 "$bin" rxe0 "$g0" rxe1 "$g1" 239.1.2.3 # second group: 239.1.2.2
sed 's/^/  /' /tmp/expect.out
sed -n '/^filter:/,/^ok/p' /tmp/expect.out | grep -qE "link +$mac" ||
    fail "the second group's address $mac is not in veth-b's multicast filter"
note "ok: $mac in veth-b's multicast filter while the group exists"
filter=$(ip -n peer maddr show dev veth-b)
if ! grep -qE "01:00:5e:01:02:02|33:33:ef:01:02:02" <<< "$filter"; then
    note "ok: gone from the filter after the program's exit detached its QPs"
elif [ "$RXE_DRIVER" = c ]; then
    # rxe takes a group's address out of the filter only when attaching
    # its first QP fails (rxe_destroy_mcg); the last detach
    # (rxe_detach_mcg -> __rxe_destroy_mcg) leaves it there.
    note "C known failure: $mac stays in veth-b's filter after the group is gone"
else
    echo "$filter" | sed 's/^/    /'
    fail "a group's address stayed in veth-b's filter after the program exited"
fi

# The same with an IPv6 group (ff0e::1:2:3, joined at the IP level on
# veth-b), sent from rxe0's IPv6 link-local GID: the GRH area then holds
# the IPv6 header, and the group's Ethernet address is 33:33:00:02:00:0x
# on both drivers.
ip -n peer addr add ff0e::1:2:3/128 dev veth-b autojoin || fail "join ff0e::1:2:3 on veth-b"
wait_for 30 gid_index rxe0 fe80: || fail "no IPv6 link-local GID on rxe0"
wait_for 30 gid_index rxe1 fe80: || fail "no IPv6 link-local GID on rxe1"
expect "IPv6 multicast rxe0 to rxe1" env MCAST_FILTER_CMD="ip -n peer maddr show dev veth-b" \
    timeout -k 5 300 "$bin" rxe0 "$(gid_index rxe0 fe80:)" rxe1 "$(gid_index rxe1 fe80:)" ff0e::1:2:3
sed 's/^/  /' /tmp/expect.out
sed -n '/^filter:/,/^ok/p' /tmp/expect.out | grep -qE "link +33:33:00:02:00:02" ||
    fail "the second IPv6 group's address 33:33:00:02:00:02 is not in veth-b's multicast filter"
note "ok: 33:33:00:02:00:02 in veth-b's multicast filter while the IPv6 group exists"

# The same from a kernel ULP's side (tests/kmod/rxe_kmcast_test.c, built
# on the host by scripts/test.sh): UD QPs made with kernel verbs,
# ib_attach_mcast/ib_detach_mcast, an address handle from rdma_create_ah,
# SENDs to the IPv4 group checked byte for byte on each attached QP and
# absent on the others.
ko=$RXE_LOGDIR/kmod/rxe_kmcast_test.ko
[ -f "$ko" ] || fail "$ko missing (scripts/test.sh builds it on the host)"
before=$(dmesg | wc -l)
if timeout -k 5 120 insmod "$ko" dev_s=rxe0 gid_index="$g0" dev_r=rxe1 group=239.1.2.3; then
    rmmod rxe_kmcast_test
    note "ok: kernel verbs: $(dmesg | tail -n +$((before + 1)) | grep -o 'rxe_kmcast_test: PASS.*')"
else
    dmesg | tail -n +$((before + 1)) | grep rxe_kmcast_test | sed 's/^/    /'
    fail "UD multicast through kernel verbs"
fi

# Line-buffered, so that its progress shows before it exits. On the C
# driver the receiver has got none or few of its datagrams in every suite
# run so far, so it is bounded tighter there. The sender is the cause:
# mckey posts its 10 SENDs unsignaled, never polls for them, and leaves
# the group and destroys its QP at once. The C driver's doorbell for a
# user QP only schedules its send work (rxe_post_send: rxe_sched_task),
# and destroying the QP drains that work with the rest of the send queue
# unsent; how many leave first is scheduling: all 10 when mckey ran
# alone (by hand, stop 28), 1 in the suite (rxe0's sent_pkts, printed
# below). Ours sends a UD QP's WQEs within the doorbell, on whatever CPU
# rang, so all 10 are on the wire before ibv_post_send returns. (Until
# it did, a doorbell rung off the QP's transmit CPU left them to the
# QP's transmit work, which under load ran after mckey had destroyed the
# AH they name: CI at 5ab668b, and a production run with the host's two
# cores kept busy, saw rxe0 send 1 packet of 10.)
bound=240
[ "$RXE_DRIVER" = c ] && bound=90
ip netns exec peer timeout -k 5 "$bound" stdbuf -oL mckey -m 239.1.2.5 -b 10.0.0.2 -C 10 > /tmp/mckey-recv.out 2>&1 &
recv=$!
if ! wait_for 120 grep -q "receiving data transfers" /tmp/mckey-recv.out; then
    kill "$recv" 2>/dev/null
    sed 's/^/    /' /tmp/mckey-recv.out
    fail "mckey receiver did not join 239.1.2.5"
fi
counted() { rdma statistic show link "$1/1" | awk -v k="$2" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }'; }
sent0=$(counted rxe0 sent_pkts) rcvd0=$(counted rxe1 rcvd_pkts) recvs0=$(counted rxe1 rdma_recvs)
expect "mckey sender to 239.1.2.5" timeout -k 5 120 mckey -m 239.1.2.5 -b 10.0.0.1 -s -C 10
if wait "$recv" && grep -q "data transfers complete" /tmp/mckey-recv.out; then
    note "ok: mckey: 10 datagrams through rdma_cm's join"
elif [ "$RXE_DRIVER" = c ]; then
    note "C known failure: the mckey receiver did not get its 10 datagrams in $bound s (rxe0 sent $(($(counted rxe0 sent_pkts) - sent0)) packets, rxe1 received $(($(counted rxe1 rcvd_pkts) - rcvd0)) and delivered $(($(counted rxe1 rdma_recvs) - recvs0)))"
else
    sed 's/^/    /' /tmp/mckey-recv.out
    fail "mckey receiver did not get its 10 datagrams (rxe0 sent $(($(counted rxe0 sent_pkts) - sent0)) packets, rxe1 received $(($(counted rxe1 rcvd_pkts) - rcvd0)) and delivered $(($(counted rxe1 rdma_recvs) - recvs0)); drops: $(cd /sys/kernel/debug/rdma_rxe 2>/dev/null && grep -H . rcvd_drop_* | tr '\n' ' '))"
fi
two_namespaces_down
