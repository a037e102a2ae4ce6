#!/bin/bash
# RC traffic in the suite: the part of x_rc_traffic.sh that fits the CI
# time budget under TCG (about five minutes per driver). ibv_rc_pingpong
# with its buffer check between two namespaces (4 KiB at the default MTU,
# 16 KiB at path MTU 4096, with CQ events, with the new send API),
# ibv_srq_pingpong, 200 ib_read_lat round trips with one READ in the SQ at
# a time, and a device talking to itself (4 KiB, through the stack's
# loopback; a stream of 64 KiB WRITEs, in order). The perftest -a sweeps and ib_write_bw -q 16 take
# over half an hour per driver under TCG: run them with x_rc_traffic.sh by
# hand.
exec bash "$(dirname "$0")/x_rc_traffic.sh" \
    '^ns/(rc_pingpong_s4096|rc_pingpong_mtu4096|rc_pingpong_events|rc_pingpong_new_send|srq_pingpong|ib_read_lat_s2)$|^loop/(rc_pingpong_s4096|ib_write_bw_in_order)$'
