#!/bin/bash
# UC traffic: ibv_uc_pingpong with its buffer check between two
# namespaces (4 KiB; 64 KiB at path MTU 1024, 64 packets a message; with
# CQ events) and a device talking to itself (4 KiB), through
# x_rc_traffic.sh's runner. Lossless: on UC a lost packet loses its
# message, and a pingpong then waits for ever.
exec bash "$(dirname "$0")/x_rc_traffic.sh" '^ns/uc_pingpong_|^loop/uc_pingpong_s4096$'
