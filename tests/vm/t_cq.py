"""Completion queues on rxe0 through librxe (pyverbs, Debian's
python3-pyverbs). Without a QP there is no traffic, so what is checked is
the verbs themselves and the mapped ring as librxe reads it (empty).
Shrinking a CQ below the number of queued completions (EINVAL) needs
traffic and is not tested here."""
import os
import sys
from pyverbs.device import Context
from pyverbs.cq import CQ, CQEX, CompChannel, CqInitAttrEx
from pyverbs.pyverbs_error import PyverbsError, PyverbsRDMAError
import pyverbs.enums as e


def rxe_capacity(n):
    """What rxe reports for a request of n entries: pow2(n + 1) - 1."""
    slots = 1
    while slots < n + 1:
        slots <<= 1
    return slots - 1


def check_cq(cq, requested):
    assert cq.cqe >= requested, (cq.cqe, requested)
    assert cq.cqe == rxe_capacity(requested), (cq.cqe, requested)
    npolled, wcs = cq.poll(16)
    assert npolled == 0, npolled
    cq.req_notify()
    cq.req_notify(solicited_only=True)
    npolled, _ = cq.poll(1)
    assert npolled == 0, npolled


def expect_error(what, fn):
    try:
        fn()
    except (PyverbsError, PyverbsRDMAError):
        return
    raise AssertionError(what + " succeeded")


ctx = Context(name="rxe0")
attr = ctx.query_device()
max_cqe = attr.max_cqe
assert max_cqe == 32767, max_cqe

if len(sys.argv) > 1 and sys.argv[1] == "--exit-with-open-cqs":
    # Leave CQs (one resized, so an old and a new buffer were mapped) and a
    # channel for the kernel to clean up when the process goes away.
    ch = CompChannel(ctx)
    cqs = [CQ(ctx, n, None, ch if n % 2 else None, 0) for n in (1, 100, 4096, 32767)]
    cqs[1].resize(1000)
    for cq in cqs:
        cq.req_notify()
    sys.stdout.flush()
    os._exit(0)

sizes = (1, 2, 100, 1000, 32767)
report = []
for size in sizes:
    cq = CQ(ctx, size)
    check_cq(cq, size)
    report.append(f"{size}->{cq.cqe}")
    cq.close()

# With a completion channel.
channel = CompChannel(ctx)
for size in sizes:
    cq = CQ(ctx, size, None, channel, 0)
    check_cq(cq, size)
    cq.close()

# Many CQs open at once on one channel, then closed.
cqs = [CQ(ctx, 16, None, channel, 0) for _ in range(200)]
for cq in cqs:
    check_cq(cq, 16)
for cq in cqs:
    cq.close()
channel.close()

# Created and destroyed in a loop.
for i in range(1000):
    CQ(ctx, 1 + (i % 300)).close()

# Resize up and down; the ring must still read as empty afterwards.
cq = CQ(ctx, 100)
for size in (1000, 10, 1, 32767, 100):
    cq.resize(size)
    assert cq.cqe >= size, (cq.cqe, size)
    npolled, _ = cq.poll(8)
    assert npolled == 0
    cq.req_notify()
expect_error("resize beyond max_cqe", lambda: cq.resize(max_cqe + 1))
npolled, _ = cq.poll(8)
assert npolled == 0
cq.close()

# Limits.
expect_error("cqe > max_cqe", lambda: CQ(ctx, max_cqe + 1))

# create_cq_ex (the path perftest uses), with the completion fields librxe
# supports.
init = CqInitAttrEx(cqe=256, wc_flags=e.IBV_WC_EX_WITH_BYTE_LEN | e.IBV_WC_EX_WITH_QP_NUM
                    | e.IBV_WC_EX_WITH_IMM | e.IBV_WC_EX_WITH_SRC_QP)
cqex = CQEX(ctx, init)
try:
    rc = cqex.start_poll(None)
except PyverbsRDMAError as err:
    rc = err.error_code
assert rc == 2, rc  # ENOENT: empty
cqex.close()
# Creation flags are not supported (EOPNOTSUPP from the driver).
expect_error("create_cq_ex with IGNORE_OVERRUN",
             lambda: CQEX(ctx, CqInitAttrEx(cqe=16, comp_mask=e.IBV_CQ_INIT_ATTR_MASK_FLAGS,
                                            flags=e.IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)))
# (pyverbs 44 cannot pass a completion channel to CQEX: its CQEX calls a
# missing CompChannel.add_ref; channels are covered by the CQ cases above.)
cqex = CQEX(ctx, CqInitAttrEx(cqe=32767, comp_vector=0))
cqex.close()
expect_error("create_cq_ex cqe > max_cqe", lambda: CQEX(ctx, CqInitAttrEx(cqe=max_cqe + 1)))

# A second context with its own CQs at the same time.
ctx2 = Context(name="rxe0")
a = CQ(ctx, 64)
b = CQ(ctx2, 64)
check_cq(a, 64)
check_cq(b, 64)
b.close()
ctx2.close()
a.close()
ctx.close()
print("ok: CQ sizes " + " ".join(report) + ", channel, 200 open, 1000 create/destroy, "
      "resize up/down, limits, CQEX, two contexts")
