"""Shared receive queues on rxe0 through librxe (pyverbs): creation and
the capacities rxe reports, the mapped ring (librxe posts into it; a full
ring refuses), resize with posted WQEs carried over, the limit, the
attribute checks, RC QPs attached to an SRQ, and a process that exits with
SRQs open, and the Last WQE Reached event of a QP on an SRQ that enters
ERROR (ib_drain_qp and user space wait for it). Values read back are
written to $RXE_LOGDIR/srq-$RXE_DRIVER.txt for cmp_srq.sh. The limit event
needs traffic and is not tested here."""
import errno
import os
import subprocess
import sys
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import RecvWR, SGE
from pyverbs.pyverbs_error import PyverbsError, PyverbsRDMAError
import pyverbs.enums as e
from verbs_util import Record, expect_errno




ctx = Context(name="rxe0")
pd = PD(ctx)
cq = CQ(ctx, 64)
mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)


def srq(max_wr, max_sge=2, limit=0):
    return SRQ(pd, SrqInitAttr(attr=SrqAttr(max_wr=max_wr, max_sge=max_sge, srq_limit=limit)))


def post(s, n, first=0):
    """Posts n receive WRs; returns how many librxe accepted."""
    for i in range(n):
        wr = RecvWR(wr_id=first + i, num_sge=1, sg=[SGE(mr.buf, 64, mr.lkey)])
        try:
            s.post_recv(wr)
        except (PyverbsError, PyverbsRDMAError):
            return i
    return n


if len(sys.argv) > 1 and sys.argv[1] == "--exit-with-open-srqs":
    srqs = [srq(n) for n in (1, 10, 1000)]
    post(srqs[1], 5)
    # os._exit: the kernel, not pyverbs finalizers (whose order at
    # interpreter shutdown is arbitrary and has segfaulted), cleans up.
    os._exit(0)

if len(sys.argv) > 1 and sys.argv[1] == "--last-wqe-event":
    # An RC QP on an SRQ moved to INIT, then ERROR: its context must get
    # IBV_EVENT_QP_LAST_WQE_REACHED. get_async_event blocks, so the parent
    # runs this in a process it can time out.
    s = srq(10)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, srq=s,
                           cap=QPCap(max_send_wr=4, max_recv_wr=0, max_send_sge=1, max_recv_sge=0)))
    attr = QPAttr(qp_state=e.IBV_QPS_INIT)
    attr.pkey_index = 0
    attr.port_num = 1
    attr.qp_access_flags = e.IBV_ACCESS_LOCAL_WRITE
    qp.modify(attr, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
    qp.modify(QPAttr(qp_state=e.IBV_QPS_ERR), e.IBV_QP_STATE)
    ev = ctx.get_async_event()
    kind = ev.event_type
    ev.ack()
    print("async event %d" % kind, flush=True)
    os._exit(0 if kind == e.IBV_EVENT_QP_LAST_WQE_REACHED else 1)

# Not before the exits above: those runs must not truncate the record.
record = Record("srq")

for max_wr, max_sge in ((1, 1), (10, 2), (100, 27), (4096, 0)):
    s = srq(max_wr, max_sge)
    a = s.query()
    record("srq %s" % ((max_wr, max_sge),), (a.max_wr, a.max_sge, a.srq_limit))
    s.close()

expect_errno("max_wr 0", errno.EINVAL, lambda: srq(0))
expect_errno("max_sge 28", errno.EINVAL, lambda: srq(10, 28))
expect_errno("max_wr 2^20 + 1", errno.EINVAL, lambda: srq((1 << 20) + 1))

# The ring: a 15-entry ring takes 15 WRs and refuses the 16th.
s = srq(10)
cap = s.query().max_wr
accepted = post(s, cap + 1)
record("posted into a fresh ring", (cap, accepted))
assert accepted == cap, (cap, accepted)
s.close()

# Resize with WRs posted: they move over, and the new ring takes the rest.
s = srq(10)
assert post(s, 5) == 5
s.modify(SrqAttr(max_wr=100), e.IBV_SRQ_MAX_WR)
a = s.query()
more = post(s, a.max_wr)
record("after resize to 100", (a.max_wr, more))
assert more == a.max_wr - 5, (a.max_wr, more)

# Limit: armed, read back; above the ring's capacity or a resize below it
# is refused.
s.modify(SrqAttr(srq_limit=7), e.IBV_SRQ_LIMIT)
record("limit", s.query().srq_limit)
expect_errno("limit above capacity", errno.EINVAL,
             lambda: s.modify(SrqAttr(srq_limit=a.max_wr + 1), e.IBV_SRQ_LIMIT))
expect_errno("resize below the limit", errno.EINVAL,
             lambda: s.modify(SrqAttr(max_wr=3), e.IBV_SRQ_MAX_WR))

# RC QPs on the SRQ.
cap = QPCap(max_send_wr=4, max_recv_wr=0, max_send_sge=1, max_recv_sge=0)
qps = [QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, srq=s, cap=cap)) for _ in range(3)]
_, init = qps[0].query(e.IBV_QP_CAP)
# Only the send side: for a QP on an SRQ the C driver leaves the receive
# caps of query_qp unset, and ib_core's buffer for them is not zeroed.
record("qp on srq caps", init.max_send_wr)
for q in qps:
    q.close()
s.close()

try:
    child = subprocess.run([sys.executable, __file__, "--last-wqe-event"],
                           capture_output=True, text=True, timeout=120)
    got = child.stdout.strip() or child.stderr.strip()[-200:]
    ok = child.returncode == 0
except subprocess.TimeoutExpired:
    got, ok = "no async event in 120 s", False
record("last WQE reached on ERROR", got)
assert ok, got
print("shared receive queues: ok")
