# The hostile send-ring cases of x_hostile_ring.sh that fit the suite's
# time budget (about ten seconds each under TCG): a valid send and a valid
# FLUSH (a WQE as a newer librxe's ibv_wr_flush writes it) first, then
# a bad opcode, a 4 GiB length, 65535 SGEs, a bogus lkey, 16 MiB of inline
# data, producer indices unmasked and at 0xffffffff, a doorbell with a
# huge WR count, a producer index put back under a WQE in flight (it must
# not run twice), and UD sends naming an address handle that does not exist
# or is another protection domain's. With the C driver the three cases that
# crash or warn its kernel are skipped (said so in the log).
# x_hostile_ring.sh runs all 32.
exec bash "$(dirname "$0")/x_hostile_ring.sh" valid_send valid_flush bad_opcode len_ffffffff \
    num_sge_65535 bogus_lkey inline_huge prod_unmasked prod_ffffffff prod_rewound db_wr_count_huge \
    ud_bad_ah ud_ah_other_pd
