# Loading and unloading; the link type's module alias autoloads the driver.
. "$(dirname "$0")/lib.sh"

expect "modprobe rdma_rxe" modprobe rdma_rxe
expect "module is listed" sh -c "lsmod | grep -q '^rdma_rxe '"
expect "it is the $RXE_DRIVER driver" rxe_driver_is "$RXE_DRIVER"
expect "alias rdma-link-rxe" sh -c "modinfo -F alias rdma_rxe | grep -qx rdma-link-rxe"
expect "modprobe -r rdma_rxe" modprobe -r rdma_rxe
expect_not "module is gone" sh -c "lsmod | grep -q '^rdma_rxe '"

veth_pair
expect "rdma link add autoloads the module" rdma link add rxe0 type rxe netdev veth-a
expect "module is loaded" sh -c "lsmod | grep -q '^rdma_rxe '"
expect "rdma link del" rdma link del rxe0
expect "unload after use" modprobe -r rdma_rxe
