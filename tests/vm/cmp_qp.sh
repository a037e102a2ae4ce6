# Both drivers report the same QP capacities and attributes, as read back
# by t_qp.py with query_qp.
. "$(dirname "$0")/lib.sh"
same_in_both_drivers qp "QP capacities and attributes"
