# Both drivers report the same attributes: the ibv_devinfo -v output of
# each, recorded by t_devinfo.sh in this boot, is identical.
. "$(dirname "$0")/lib.sh"
same_in_both_drivers devinfo "ibv_devinfo -v output"
