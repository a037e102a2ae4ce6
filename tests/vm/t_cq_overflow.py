"""A receive CQ that overflows: the QP must enter ERROR and the CQ raise
one IB_EVENT_CQ_ERR, not one event per lost completion (ib_uverbs keeps
each in memory until the process reads it).

    t_cq_overflow.py SEND_DEV SEND_GID_INDEX RECV_DEV RECV_GID_INDEX

One process, one RC QP on each device. The receiver's QP has a receive CQ
of 16 entries (31 with rxe's rounding) that is never polled and 64
receives posted; the sender streams 64 small SENDs. Checked: the
receiver's QP is in ERROR, its context got exactly one CQ error event
(counted until the event queue stays quiet for 3 s; other events are
printed).

Exit 0: as rxe should. Exit 2: the QP is in ERROR and the CQ raised two
events, no more (the C driver raises one for the overflow and one more for
the first flush completion that finds the CQ still full; the shell side
decides whether that is acceptable). Exit 1: anything else."""
import os
import select
import sys
import time

from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import RecvWR, SendWR, SGE
import pyverbs.enums as e

MESSAGES = 64
CQ_ENTRIES = 16


def event_fds():
    """The process's uverbs async event files, by fd number."""
    fds = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink("/proc/self/fd/" + fd) == "anon_inode:[infinibandevent]":
                fds.add(int(fd))
        except OSError:
            pass
    return fds


class End:
    def __init__(self, dev, gid_index, recv_cq_entries):
        known = event_fds()
        self.ctx = Context(name=dev)
        new = event_fds() - known
        self.async_fd = min(new) if new else None
        self.gid_index = gid_index
        self.gid = self.ctx.query_gid(port_num=1, index=gid_index)
        self.pd = PD(self.ctx)
        self.scq = CQ(self.ctx, 2 * MESSAGES)
        self.rcq = CQ(self.ctx, recv_cq_entries)
        cap = QPCap(max_send_wr=MESSAGES, max_recv_wr=MESSAGES, max_send_sge=1, max_recv_sge=1)
        self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.scq, rcq=self.rcq, cap=cap))
        self.mr = MR(self.pd, MESSAGES * 64, e.IBV_ACCESS_LOCAL_WRITE)

    def connect(self, peer):
        a = QPAttr(qp_state=e.IBV_QPS_INIT)
        a.pkey_index = 0
        a.port_num = 1
        a.qp_access_flags = e.IBV_ACCESS_LOCAL_WRITE
        self.qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
        a = QPAttr(qp_state=e.IBV_QPS_RTR)
        a.path_mtu = e.IBV_MTU_1024
        a.dest_qp_num = peer.qp.qp_num
        a.rq_psn = 0
        a.max_dest_rd_atomic = 1
        a.min_rnr_timer = 1
        a.ah_attr = AHAttr(is_global=1, port_num=1,
                           gr=GlobalRoute(dgid=peer.gid, sgid_index=self.gid_index, hop_limit=64))
        self.qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN
                       | e.IBV_QP_RQ_PSN | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
        a = QPAttr(qp_state=e.IBV_QPS_RTS)
        # 67 ms x 8 tries: the sender gives up within a second once the
        # receiver is in ERROR. Shorter (4 ms, one retry) made a loaded
        # machine's C sender give up before 17 SENDs had arrived, so the
        # CQ never overflowed (c/t_cq_overflow failed, receiver still RTS).
        a.timeout = 14
        a.retry_cnt = 7
        a.rnr_retry = 1
        a.sq_psn = 0
        a.max_rd_atomic = 1
        self.qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT
                       | e.IBV_QP_RNR_RETRY | e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)

    def state(self):
        attr, _ = self.qp.query(e.IBV_QP_STATE)
        return attr.qp_state


def main():
    send_dev, send_gid = sys.argv[1], int(sys.argv[2])
    recv_dev, recv_gid = sys.argv[3], int(sys.argv[4])
    # The receiver first: its event file is told apart from the sender's
    # by the fds each Context() opened.
    recv = End(recv_dev, recv_gid, CQ_ENTRIES)
    send = End(send_dev, send_gid, 2 * MESSAGES)
    if recv.async_fd is None:
        print("the receiver's async event file was not found")
        os._exit(1)
    recv.connect(send)
    send.connect(recv)
    for i in range(MESSAGES):
        recv.qp.post_recv(RecvWR(wr_id=i, num_sge=1, sg=[SGE(recv.mr.buf + i * 64, 64, recv.mr.lkey)]))
    for i in range(MESSAGES):
        send.qp.post_send(SendWR(wr_id=i, opcode=e.IBV_WR_SEND, num_sge=1,
                                 sg=[SGE(send.mr.buf + i * 64, 16, send.mr.lkey)],
                                 send_flags=e.IBV_SEND_SIGNALED))
    start = time.time()
    state = recv.state()
    while state != e.IBV_QPS_ERR and time.time() - start < 120:
        time.sleep(0.1)
        state = recv.state()
    elapsed = time.time() - start
    # Let the sender give up (and anything late arrive), then count every
    # event until none comes for 3 s.
    time.sleep(2)
    events = {}
    total = 0
    while total < 1000:
        ready, _, _ = select.select([recv.async_fd], [], [], 3)
        if not ready:
            break
        ev = recv.ctx.get_async_event()
        events[ev.event_type] = events.get(ev.event_type, 0) + 1
        total += 1
        ev.ack()
    cq_err = events.get(e.IBV_EVENT_CQ_ERR, 0)
    # The sender's side, to tell a stalled sender from a receiver that
    # did not react.
    sent_ok = sent_err = 0
    first_err = None
    while True:
        n, wcs = send.scq.poll(16)
        if not n:
            break
        for wc in wcs:
            if wc.status == e.IBV_WC_SUCCESS:
                sent_ok += 1
            else:
                sent_err += 1
                first_err = wc.status if first_err is None else first_err
    print("sender: %d SENDs completed, %d in error (first status %s)" % (sent_ok, sent_err, first_err))
    others = {k: v for k, v in events.items() if k != e.IBV_EVENT_CQ_ERR}
    print("receiver QP state %d after %.1f s; %d CQ error events, other events %s"
          % (state, elapsed, cq_err, others or "none"))
    if state == e.IBV_QPS_ERR and cq_err == 1:
        status = 0
    elif state == e.IBV_QPS_ERR and cq_err == 2:
        status = 2
    else:
        status = 1
    sys.stdout.flush()
    os._exit(status)


main()
