# The performance management agent (`process_mad`): the port's sysfs
# `counters/` directory, which ib_core creates for a driver with a
# `process_mad` and fills through PMA Gets, reports the hardware counters
# after traffic: port_xmit_packets = sent_pkts, port_rcv_packets =
# rcvd_pkts, port_xmit_data and port_rcv_data = the bytes / 4 (IBA counts
# 4-byte words), link_downed = link_downed. The values are kept in
# pma-DRIVER.txt.
. "$(dirname "$0")/lib.sh"

rxe_load || fail "modprobe"
two_namespaces || fail "two-namespace set-up"
pma=/sys/class/infiniband/rxe0/ports/1/counters
hw=/sys/class/infiniband/rxe0/ports/1/hw_counters
expect "sysfs counters/ exists" test -r "$pma/port_xmit_packets"

ip netns exec peer timeout -k 5 300 ibv_rc_pingpong -d rxe1 -g "$g1" -n 20 -s 4096 > /tmp/pma-server.out 2>&1 &
server=$!
sleep 2
expect "ibv_rc_pingpong 20 x 4 KiB" timeout -k 5 300 ibv_rc_pingpong -d rxe0 -g "$g0" -n 20 -s 4096 10.0.0.2
wait "$server" || fail "server: $(cat /tmp/pma-server.out)"
sleep 1

out=$RXE_LOGDIR/pma-$RXE_DRIVER.txt
for f in "$pma"/*; do echo "${f##*/} $(cat "$f")"; done > "$out"
cat "$out"
sent=$(cat $hw/sent_pkts) rcvd=$(cat $hw/rcvd_pkts)
[ "$sent" -ge 40 ] || fail "sent_pkts $sent after 20 round trips of 4 KiB"
expect "port_xmit_packets = sent_pkts ($sent)" test "$(cat $pma/port_xmit_packets)" = "$sent"
expect "port_rcv_packets = rcvd_pkts ($rcvd)" test "$(cat $pma/port_rcv_packets)" = "$rcvd"
expect "port_xmit_data = sent_bytes / 4" test "$(cat $pma/port_xmit_data)" = "$(( $(cat $hw/sent_bytes) / 4 ))"
expect "port_rcv_data = rcvd_bytes / 4" test "$(cat $pma/port_rcv_data)" = "$(( $(cat $hw/rcvd_bytes) / 4 ))"
expect "link_downed = link_downed" test "$(cat $pma/link_downed)" = "$(cat $hw/link_downed)"
two_namespaces_down
