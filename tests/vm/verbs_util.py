"""Helpers shared by the pyverbs guest tests."""
import os
from pyverbs.pyverbs_error import PyverbsRDMAError


def expect_errno(what, want, fn):
    """fn() must fail with errno `want`."""
    try:
        fn()
    except PyverbsRDMAError as err:
        assert err.error_code == want, (what, err.error_code, want)
        return
    raise AssertionError(what + " succeeded")


def rxe_capacity(n):
    """What rxe reports for a queue of n entries: pow2(n + 1) - 1."""
    slots = 1
    while slots < n + 1:
        slots <<= 1
    return slots - 1


class Record:
    """Values read back, printed and kept in $RXE_LOGDIR/STEM-$RXE_DRIVER.txt
    for the cmp_STEM.sh comparison of both drivers."""

    def __init__(self, stem):
        path = os.path.join(os.environ["RXE_LOGDIR"], "%s-%s.txt" % (stem, os.environ["RXE_DRIVER"]))
        self.out = open(path, "w")

    def __call__(self, what, value):
        print(what, value)
        self.out.write("%s %s\n" % (what, value))
        self.out.flush()
