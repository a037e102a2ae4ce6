#!/bin/bash
# UD traffic and rdma_cm in the suite, the part of x_rc_traffic.sh that
# needs the UD QP type and the GSI QP (QP1), in both of its topologies
# (ns/: rxe1 in namespace "peer" at 10.0.0.2 serving rxe0 through a veth
# pair; loop/: rxe0 at 10.0.0.1 talking to itself):
#   ud_pingpong_s4096: ibv_ud_pingpong -c, 100 round trips of 4 KiB (a
#     whole port MTU, the veths being at MTU 9000): UD send, receive with
#     its GRH, address handles;
#   rping: 20 rounds of 1000 bytes (SEND, RDMA READ, RDMA WRITE back)
#     through an RC connection made by rdma_cm, whose exchange (ib_cm's
#     REQ/REP/RTU MADs) goes through the GSI QPs; -V checks every echo;
#   udaddy: 10 UD datagrams each way between UD QPs set up through rdma_cm,
#     whose SIDR REQ/REP go through the GSI QPs;
#   ucmatose: 10 messages each way over an RC connection made by rdma_cm.
# Every server and client runs under timeout(1), so a hang fails the test.
# About two minutes per driver under TCG: ns/ runs the UD pingpong, rping,
# udaddy and ucmatose, loop/ rping (the rxe_sent_rcvd_bytes.sh selftest
# runs another rping on one device). The rest of the matrix (1 KiB and
# CQ-event UD pingpongs, all of it in loop/; all twelve pass on both
# drivers, about five minutes each) is run by hand with
# x_rc_traffic.sh '^(ns|loop)/(ud_|rping|udaddy|ucmatose)'.
exec bash "$(dirname "$0")/x_rc_traffic.sh" \
    '^ns/(ud_pingpong_s4096|rping|udaddy|ucmatose)$|^loop/rping$'
