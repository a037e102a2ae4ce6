# Hardware counters: `rdma statistic show link rxe0/1` and sysfs
# hw_counters list the C driver's seventeen counters, in its order, all zero
# on a new device; taking the netdev down counts link_downed. The output is
# kept for cmp_counters.sh.
. "$(dirname "$0")/lib.sh"

rxe_load || fail "modprobe"
veth_pair
expect "add rxe0" rdma link add rxe0 type rxe netdev veth-a
wait_for 10 link_state_is rxe0 ACTIVE || fail "port not active"

names="sent_pkts rcvd_pkts duplicate_request out_of_seq_request rcvd_rnr_err
send_rnr_err rcvd_seq_err ack_deferred retry_exceeded_err
retry_rnr_exceeded_err completer_retry_err send_err link_downed rdma_sends
rdma_recvs sent_bytes rcvd_bytes"

out=$RXE_LOGDIR/counters-$RXE_DRIVER.txt
expect "rdma statistic show link rxe0/1" sh -c "rdma statistic show link rxe0/1 > $out"
cat "$out"
# "link rxe0/1 sent_pkts 0 rcvd_pkts 0 ...": the names in order, values 0.
got_names=$(tr -s '[:space:]' '\n' < "$out" | sed -n '3~2p' | tr '\n' ' ')
want_names=$(echo $names)
[ "$got_names" = "$want_names " ] || fail "counter names: got '$got_names'"
note "ok: the seventeen counter names, in the C driver's order"
got_values=$(tr -s '[:space:]' '\n' < "$out" | sed -n '4~2p' | sort -u | tr '\n' ' ')
[ "$got_values" = "0 " ] || fail "a new device has non-zero counters: $got_values"
note "ok: all zero"

dir=/sys/class/infiniband/rxe0/ports/1/hw_counters
for n in $names; do
    [ "$(cat "$dir/$n")" = 0 ] || fail "sysfs $n"
done
note "ok: sysfs hw_counters"

ip link set veth-a down
wait_for 10 link_state_is rxe0 DOWN || fail "port did not go down"
sleep 1
downs=$(cat "$dir/link_downed")
[ "$downs" -ge 1 ] || fail "link_downed = $downs after the netdev went down"
note "ok: link_downed = $downs after ip link set down"
echo "link_downed after one down: $downs" >> "$out"
ip link set veth-a up
wait_for 10 link_state_is rxe0 ACTIVE || fail "port did not come back"
expect "del rxe0" rdma link del rxe0
