#!/bin/bash
# Guest side of scripts/demo.sh.
set -eux
export RXE_DRIVER=rust
. "$(dirname "$0")/lib.sh"
rxe_use_driver rust
modprobe rdma_rxe
modinfo -F description rdma_rxe
ip link add veth-a type veth peer name veth-b
ip addr add 10.0.0.1/24 dev veth-a
ip link set veth-a up; ip link set veth-b up
rdma link add rxe0 type rxe netdev veth-a
sleep 1
rdma link show
ibv_devices
ibv_devinfo -d rxe0
ss -Huln sport = :4791
rdma link del rxe0
modprobe -r rdma_rxe
