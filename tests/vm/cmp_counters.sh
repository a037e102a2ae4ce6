# Both drivers show the same counters: the rdma statistic output and the
# link_downed count after one netdev down, recorded by t_counters.sh.
. "$(dirname "$0")/lib.sh"
same_in_both_drivers counters "counters"
