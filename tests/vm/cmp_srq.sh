# Both drivers report the same SRQ capacities, ring sizes and limits, as
# read back by t_srq.py.
. "$(dirname "$0")/lib.sh"
same_in_both_drivers srq "SRQ capacities, ring sizes and limits"
