#!/bin/bash
# UD traffic and rdma_cm in the suite, the part of x_rc_traffic.sh that
# needs the UD QP type and the GSI QP (QP1), in both of its topologies
# (ns/: rxe1 in namespace "peer" at 10.0.0.2 serving rxe0 through a veth
# pair; loop/: rxe0 at 10.0.0.1 talking to itself):
#   ud_pingpong, ud_pingpong_s4096, ud_pingpong_events: ibv_ud_pingpong -c,
#     100 round trips of 1 KiB, of 4 KiB (a whole port MTU, the veths
#     being at MTU 9000) and of 1 KiB sleeping on CQ events: UD send,
#     receive with its GRH, address handles;
#   rping: 20 rounds of 1000 bytes (SEND, RDMA READ, RDMA WRITE back)
#     through an RC connection made by rdma_cm, whose exchange (ib_cm's
#     REQ/REP/RTU MADs) goes through the GSI QPs; -V checks every echo;
#   udaddy: 10 UD datagrams each way between UD QPs set up through rdma_cm,
#     whose SIDR REQ/REP go through the GSI QPs;
#   ucmatose: 10 messages each way over an RC connection made by rdma_cm.
# Every server and client runs under timeout(1), so a hang fails the test.
# Roughly five minutes per driver under TCG (an estimate, not yet timed).
exec bash "$(dirname "$0")/x_rc_traffic.sh" \
    '^(ns|loop)/(ud_pingpong|ud_pingpong_s4096|ud_pingpong_events|rping|udaddy|ucmatose)$'
