"""ATOMIC_WRITE through stock librxe (pyverbs' extended QP,
ibv_wr_atomic_write): the 8 bytes land at the remote word and nowhere else
(guard bytes around it), 24 of them posted at once (more than the QP's
max_rd_atomic of 4: the requester holds them back and completes them in
order), each completion IBV_WC_ATOMIC_WRITE; the errors a responder
returns for a misaligned target (REM_INV_REQ_ERR) and for a region
without remote write (REM_ACCESS_ERR); and the FLUSH access flags of a
registration: FLUSH_GLOBAL accepted, FLUSH_PERSISTENT refused with EINVAL
(no persistent memory here, as the C driver answers on ordinary pages).

    t_atomic_write.py DEV_A GID_INDEX_A DEV_B GID_INDEX_B"""
import errno
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import integrity  # noqa: E402
from verbs_util import expect_errno  # noqa: E402
from pyverbs.mr import MR  # noqa: E402
from pyverbs.qp import QPCap, QPEx, QPInitAttrEx  # noqa: E402
import pyverbs.enums as e  # noqa: E402

# IB_ACCESS_FLUSH_GLOBAL / _PERSISTENT (libibverbs 44 has no names for them).
ACCESS_FLUSH_GLOBAL = 1 << 8
ACCESS_FLUSH_PERSISTENT = 1 << 9


class Requester(integrity.End):
    """An End whose QP is an extended QP that may post ATOMIC_WRITE."""

    def __init__(self, dev, gid_index):
        super().__init__(dev, gid_index)
        cap = QPCap(max_send_wr=64, max_recv_wr=16, max_send_sge=1, max_recv_sge=1)
        attr = QPInitAttrEx(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=cap, pd=self.pd,
                            comp_mask=e.IBV_QP_INIT_ATTR_PD | e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
                            send_ops_flags=e.IBV_QP_EX_WITH_ATOMIC_WRITE | e.IBV_QP_EX_WITH_SEND)
        self.qp = QPEx(self.ctx, attr)
        self.qp_num = self.qp.qp_num

    def atomic_write(self, wr_id, rkey, addr, value):
        self.qp.wr_start()
        self.qp.wr_id = wr_id
        self.qp.wr_flags = e.IBV_SEND_SIGNALED
        self.qp.wr_atomic_write(rkey, addr, value)
        self.qp.wr_complete()

    def statuses(self, want):
        """The next `want` completions: [(wr_id, status, opcode)]."""
        got = []
        while len(got) < want:
            n, wcs = self.cq.poll(want - len(got))
            got += [(wc.wr_id, wc.status, wc.opcode) for wc in wcs[:n]]
        return got


def pair(dev_a, gid_a, dev_b, gid_b, rng):
    a, b = Requester(dev_a, gid_a), integrity.End(dev_b, gid_b)
    integrity.connect(a, b, rng)
    return a, b


def main():
    dev_a, gid_a, dev_b, gid_b = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    rng = random.Random(4791)

    a, b = pair(dev_a, gid_a, dev_b, gid_b, rng)
    base = 4096
    b.guard(base - 64, base + 8 * 24 + 64)
    values = [rng.randbytes(8) for _ in range(24)]
    for i, v in enumerate(values):
        a.atomic_write(10 + i, b.rkey, b.buf + base + 8 * i, v)
    done = a.statuses(len(values))
    assert [w for w, _, _ in done] == list(range(10, 10 + len(values))), done
    for wr_id, status, opcode in done:
        assert status == e.IBV_WC_SUCCESS, (wr_id, status)
        assert opcode == e.IBV_WC_ATOMIC_WRITE, (wr_id, opcode)
    for i, v in enumerate(values):
        assert b.read(base + 8 * i, 8) == v, "word %d: %r, wrote %r" % (i, b.read(base + 8 * i, 8), v)
    b.check_guard(base - 64, base + 8 * 24 + 64, [(base, 8 * 24)], "atomic write")
    print("ok: 24 ATOMIC_WRITEs posted at once, each word written, guards intact")

    # A misaligned target: the responder refuses it as an invalid request.
    a, b = pair(dev_a, gid_a, dev_b, gid_b, rng)
    a.atomic_write(1, b.rkey, b.buf + base + 4, bytes(8))
    (wc,) = a.statuses(1)
    assert wc[1] == e.IBV_WC_REM_INV_REQ_ERR, ("misaligned", wc)
    print("ok: misaligned target: REM_INV_REQ_ERR")

    # A region without remote write: a remote access error, nothing stored.
    a, b = pair(dev_a, gid_a, dev_b, gid_b, rng)
    ro = MR(b.pd, 4096, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_READ)
    ro.write(bytes(8), 8, 0)
    a.atomic_write(2, ro.rkey, ro.buf, b"\xff" * 8)
    (wc,) = a.statuses(1)
    assert wc[1] == e.IBV_WC_REM_ACCESS_ERR, ("read-only region", wc)
    assert ro.read(8, 0) == bytes(8), "stored into a read-only region"
    print("ok: region without remote write: REM_ACCESS_ERR, nothing stored")

    # The FLUSH access flags of a registration.
    MR(b.pd, 4096, e.IBV_ACCESS_LOCAL_WRITE | ACCESS_FLUSH_GLOBAL).close()
    expect_errno("FLUSH_PERSISTENT on ordinary memory", errno.EINVAL,
                 lambda: MR(b.pd, 4096, e.IBV_ACCESS_LOCAL_WRITE | ACCESS_FLUSH_PERSISTENT))
    print("ok: registration with FLUSH_GLOBAL accepted, FLUSH_PERSISTENT refused (EINVAL)")


main()
