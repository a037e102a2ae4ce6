"""Data integrity over RC through stock librxe (pyverbs): random patterns
through SEND, SEND with immediate, RDMA WRITE, WRITE with immediate and
RDMA READ, at sizes from 1 byte to several MTUs, gathered from and
scattered to many SGEs at odd offsets, between two QPs; every byte is
checked, and every completion (opcode, length, immediate, QP).

    integrity.py DEV_A GID_INDEX_A DEV_B GID_INDEX_B

The two ends may be one device talking to itself (loopback) or two devices
joined by a network. Exits non-zero on the first difference."""
import os
import random
import sys
import time
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.qp import QP, QPCap, QPInitAttr, QPAttr
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.wr import RecvWR, SendWR, SGE
import pyverbs.enums as e

ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
MAX_SGE = 16
BUF = 1 << 20


class End:
    """One side: context, PD, CQ, one QP and a registered buffer."""

    def __init__(self, dev, gid_index):
        self.ctx = Context(name=dev)
        self.gid_index = gid_index
        self.gid = self.ctx.query_gid(port_num=1, index=gid_index)
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 256)
        cap = QPCap(max_send_wr=64, max_recv_wr=64, max_send_sge=MAX_SGE, max_recv_sge=MAX_SGE)
        self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=cap))
        self.mr = MR(self.pd, BUF, ACCESS)

    def connect(self, peer, psn_local, psn_remote):
        a = QPAttr(qp_state=e.IBV_QPS_INIT)
        a.pkey_index = 0
        a.port_num = 1
        a.qp_access_flags = ACCESS
        self.qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
        a = QPAttr(qp_state=e.IBV_QPS_RTR)
        a.path_mtu = e.IBV_MTU_1024
        a.dest_qp_num = peer.qp.qp_num
        a.rq_psn = psn_remote
        a.max_dest_rd_atomic = 4
        a.min_rnr_timer = 12
        a.ah_attr = AHAttr(is_global=1, port_num=1,
                           gr=GlobalRoute(dgid=peer.gid, sgid_index=self.gid_index, hop_limit=64))
        self.qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN
                       | e.IBV_QP_RQ_PSN | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
        a = QPAttr(qp_state=e.IBV_QPS_RTS)
        a.timeout = 14
        a.retry_cnt = 7
        a.rnr_retry = 7
        a.sq_psn = psn_local
        a.max_rd_atomic = 4
        self.qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT
                       | e.IBV_QP_RNR_RETRY | e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)

    def sges(self, base, length, count, rng):
        """`count` SGEs covering `length` bytes from offset `base`, with
        gaps between them; returns (sges, [(offset, len)])."""
        cuts = sorted(rng.sample(range(1, length), min(count, length) - 1)) if length > 1 else []
        pieces, start = [], 0
        for cut in cuts + [length]:
            pieces.append(cut - start)
            start = cut
        out, spans, off = [], [], base
        for n in pieces:
            out.append(SGE(self.mr.buf + off, n, self.mr.lkey))
            spans.append((off, n))
            off += n + rng.randrange(0, 64)
        return out, spans

    def gather(self, spans):
        return b"".join(self.mr.read(n, off) for off, n in spans)


def poll(cq, want, deadline=60):
    got, end = [], time.time() + deadline
    while len(got) < want:
        n, wcs = cq.poll(want - len(got))
        got += wcs[:n]
        if time.time() > end:
            raise AssertionError("timed out waiting for %d completions, got %d" % (want, len(got)))
    for wc in got:
        assert wc.status == e.IBV_WC_SUCCESS, "completion status %d (wr_id %d)" % (wc.status, wc.wr_id)
    return got


def main():
    dev_a, gid_a, dev_b, gid_b = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    rng = random.Random(int(os.environ.get("RXE_SEED", "4791")))
    a, b = End(dev_a, gid_a), End(dev_b, gid_b)
    psn_a, psn_b = rng.randrange(1 << 24), rng.randrange(1 << 24)
    a.connect(b, psn_a, psn_b)
    b.connect(a, psn_b, psn_a)
    ops = [("send", e.IBV_WR_SEND), ("send_imm", e.IBV_WR_SEND_WITH_IMM),
           ("write", e.IBV_WR_RDMA_WRITE), ("write_imm", e.IBV_WR_RDMA_WRITE_WITH_IMM),
           ("read", e.IBV_WR_RDMA_READ)]
    sizes = [1, 2, 63, 1024, 1025, 4096, 12345, 65536 + 7, 200000]
    checked = 0
    for name, opcode in ops:
        for size in sizes:
            for nsge in (1, 3, MAX_SGE):
                pattern = rng.randbytes(size)
                src_off, dst_off = rng.randrange(0, 4096), rng.randrange(0, 4096)
                # Local side of the initiator: the data for SEND/WRITE, the
                # landing place for READ.
                local, local_spans = a.sges(src_off, size, nsge, rng)
                if opcode == e.IBV_WR_RDMA_READ:
                    b.mr.write(pattern, size, dst_off)
                    a.mr.write(bytes(size + 64 * nsge), size + 64 * nsge, src_off)
                else:
                    for (off, n), i in zip(local_spans, range(len(local_spans))):
                        start = sum(l for _, l in local_spans[:i])
                        a.mr.write(pattern[start:start + n], n, off)
                imm = rng.randrange(1 << 32)
                remote_spans = [(dst_off, size)]
                if opcode in (e.IBV_WR_SEND, e.IBV_WR_SEND_WITH_IMM):
                    rsg, remote_spans = b.sges(dst_off, size, nsge, rng)
                    b.qp.post_recv(RecvWR(wr_id=2, num_sge=len(rsg), sg=rsg))
                elif opcode == e.IBV_WR_RDMA_WRITE_WITH_IMM:
                    b.qp.post_recv(RecvWR(wr_id=2, num_sge=1, sg=[SGE(b.mr.buf + BUF - 64, 64, b.mr.lkey)]))
                wr = SendWR(wr_id=1, opcode=opcode, num_sge=len(local), sg=local,
                            send_flags=e.IBV_SEND_SIGNALED, imm_data=imm)
                if opcode not in (e.IBV_WR_SEND, e.IBV_WR_SEND_WITH_IMM):
                    wr.set_wr_rdma(b.mr.rkey, b.mr.buf + dst_off)
                a.qp.post_send(wr)
                want_recv = opcode in (e.IBV_WR_SEND, e.IBV_WR_SEND_WITH_IMM, e.IBV_WR_RDMA_WRITE_WITH_IMM)
                (sc,) = poll(a.cq, 1)
                assert sc.wr_id == 1 and sc.qp_num == a.qp.qp_num, (name, size)
                if want_recv:
                    (rc,) = poll(b.cq, 1)
                    assert rc.wr_id == 2 and rc.byte_len == size, (name, size, rc.byte_len)
                    if opcode != e.IBV_WR_SEND:
                        assert rc.wc_flags & e.IBV_WC_WITH_IMM, (name, size)
                if opcode == e.IBV_WR_RDMA_READ:
                    got = a.gather(local_spans)
                else:
                    got = b.gather(remote_spans)
                if got != pattern:
                    first = next(i for i in range(size) if got[i] != pattern[i])
                    raise AssertionError("%s %d bytes %d SGEs: first difference at byte %d"
                                         % (name, size, nsge, first))
                checked += size
    # A zero-length READ names no memory: the responder answers it whatever
    # its rkey (rxe checks no key for it), and the READ completes.
    for rkey in (b.mr.rkey, 0xdead_beef):
        wr = SendWR(wr_id=3, opcode=e.IBV_WR_RDMA_READ, num_sge=0, sg=None, send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_rdma(rkey, 0)
        a.qp.post_send(wr)
        (sc,) = poll(a.cq, 1)
        assert sc.wr_id == 3 and sc.byte_len == 0, ("zero-length READ", hex(rkey), sc.byte_len)
    print("integrity: ok, %d messages, %d bytes checked, zero-length READs answered"
          % (len(ops) * len(sizes) * 3, checked))


main()
