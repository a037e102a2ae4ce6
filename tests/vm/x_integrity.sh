# Data integrity over RC, both topologies: one device talking to itself
# (through the stack's loopback), then two devices in two namespaces. The
# suite runs the second only (t_integrity.sh); run this by hand:
#   scripts/vm.sh logs/x tests/vm/x_integrity.sh   (RXE_DRIVER=c or rust)
exec bash "$(dirname "$0")/t_integrity.sh" loop ns
