"""Background RC traffic for the teardown tests (t_teardown.sh): one
process opens both ends (DEV_A and DEV_B: rdma devices are shared across
namespaces), connects two RC QPs and keeps RDMA WRITEs and SENDs in
flight from A to B until the time is up or something stops it.

    teardown_traffic.py DEV_A GID_A DEV_B GID_B READY_FILE [SECONDS] [hold]

With "hold" the requester's transport timeout is the longest there is
(timeout 31: hours), so work requests whose packets are lost stay
outstanding: once the test cuts the link, the process polls a CQ where
nothing can complete, and only the device going away can end its wait
(with flushed completions), not a retry counter running out. The stall
bound is then HOLD_STALL: the wait starts when the link is cut, before
the teardown, which takes longer than STALL on a slow guest; the test's
own bound from the teardown's start (40 s) is what judges it.

Creates READY_FILE once 16 operations have completed (the traffic really
flows). Polls without ever waiting unbounded: no completion for STALL
seconds ends it too. Its last line says how it ended; exit status:
  0  the time was up (SECONDS, default 120) with every completion good
  1  an error completion or a failed verb (the device went away: a
     flush, a device-fatal EIO from post_send...)
  3  stalled: no completion for STALL seconds (a device that went away
     with its rings still mapped stops answering without an error)"""
import os
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

ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
DEPTH = 8
WRITE_SIZE = 8192
SEND_SIZE = 2048
STALL = 10
HOLD_STALL = 120


class End:
    def __init__(self, dev, gid_index):
        self.ctx = Context(name=dev)
        self.gid_index = gid_index
        self.gid = self.ctx.query_gid(port_num=1, index=gid_index)
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 4 * DEPTH)
        cap = QPCap(max_send_wr=2 * DEPTH, max_recv_wr=2 * DEPTH, max_send_sge=1, max_recv_sge=1)
        self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=cap))
        self.mr = MR(self.pd, 1 << 17, ACCESS)

    def connect(self, peer, timeout):
        a = QPAttr(qp_state=e.IBV_QPS_INIT)
        a.pkey_index = 0
        a.port_num = 1
        a.qp_access_flags = ACCESS
        self.qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
        a = QPAttr(qp_state=e.IBV_QPS_RTR)
        a.path_mtu = e.IBV_MTU_1024
        a.dest_qp_num = peer.qp.qp_num
        a.rq_psn = 0
        a.max_dest_rd_atomic = 4
        a.min_rnr_timer = 12
        a.ah_attr = AHAttr(is_global=1, port_num=1,
                           gr=GlobalRoute(dgid=peer.gid, sgid_index=self.gid_index, hop_limit=64))
        self.qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN
                       | e.IBV_QP_RQ_PSN | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
        a = QPAttr(qp_state=e.IBV_QPS_RTS)
        a.timeout = timeout
        a.retry_cnt = 7
        a.rnr_retry = 7
        a.sq_psn = 0
        a.max_rd_atomic = 4
        self.qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT
                       | e.IBV_QP_RNR_RETRY | e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)


PROGRESS = [0]


def run(a, b, ready, seconds, stall):
    """Returns (exit status, how it ended, completions); the count so far
    is in PROGRESS[0] should a verb raise."""
    posted = done = 0
    start = last = time.time()
    recvs = 0
    while True:
        now = time.time()
        if now - start > seconds:
            return 0, "time up", done
        while posted - done < DEPTH:
            slot = posted % DEPTH
            if posted % 4 == 3:
                b.qp.post_recv(RecvWR(wr_id=recvs, num_sge=1,
                                      sg=[SGE(b.mr.buf + 65536 + slot * SEND_SIZE, SEND_SIZE, b.mr.lkey)]))
                recvs += 1
                wr = SendWR(wr_id=posted, opcode=e.IBV_WR_SEND, num_sge=1,
                            sg=[SGE(a.mr.buf + slot * WRITE_SIZE, SEND_SIZE, a.mr.lkey)],
                            send_flags=e.IBV_SEND_SIGNALED)
            else:
                wr = SendWR(wr_id=posted, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                            sg=[SGE(a.mr.buf + slot * WRITE_SIZE, WRITE_SIZE, a.mr.lkey)],
                            send_flags=e.IBV_SEND_SIGNALED)
                wr.set_wr_rdma(b.mr.rkey, b.mr.buf + slot * WRITE_SIZE)
            a.qp.post_send(wr)
            posted += 1
        n, wcs = a.cq.poll(DEPTH)
        for wc in wcs[:n]:
            if wc.status != e.IBV_WC_SUCCESS:
                return 1, "completion status %d (wr_id %d)" % (wc.status, wc.wr_id), done
            done += 1
            PROGRESS[0] = done
        # The receives' completions (on B's CQ): drained, checked.
        m, rwcs = b.cq.poll(DEPTH)
        for wc in rwcs[:m]:
            if wc.status != e.IBV_WC_SUCCESS:
                return 1, "receive completion status %d" % wc.status, done
        if n:
            last = now
            if done >= 16 and not os.path.exists(ready):
                open(ready, "w").close()
                print("traffic: flowing, %d operations done" % done, flush=True)
        elif now - last > stall:
            return 3, "stalled: no completion for %d s" % stall, done
        else:
            time.sleep(0.002)


def main():
    dev_a, gid_a, dev_b, gid_b, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
    seconds = float(sys.argv[6]) if len(sys.argv) > 6 else 120
    hold = sys.argv[7:8] == ["hold"]
    timeout = 31 if hold else 14
    a, b = End(dev_a, gid_a), End(dev_b, gid_b)
    a.connect(b, timeout)
    b.connect(a, timeout)
    start = time.time()
    try:
        rc, how, done = run(a, b, ready, seconds, HOLD_STALL if hold else STALL)
    except Exception as ex:  # a verb failing once the device is gone
        rc, how, done = 1, "%s: %s" % (type(ex).__name__, ex), PROGRESS[0]
    print("traffic: ended after %.1f s (%s operations done): %s" % (time.time() - start, done, how), flush=True)
    # Exit with every object open: what is left is the kernel's to clean
    # up (a closing verb on a device that went away may fail).
    sys.stdout.flush()
    os._exit(rc)


main()
