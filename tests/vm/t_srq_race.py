"""Two RC QPs on one shared receive queue, fed at the same time by two
senders on two CPUs: every receive WQE must be taken by exactly one message.

    t_srq_race.py RECV_DEV RECV_GID_INDEX SEND_DEV SEND_GID_INDEX [MESSAGES]

The receiving process opens RECV_DEV, posts 2 * MESSAGES receive WQEs (one
64-byte buffer each, filled with 0xee) to one SRQ and attaches two RC QPs to
it. Two child processes, each pinned to its own CPU, open SEND_DEV and
stream MESSAGES small SENDs each (16 to 64 bytes: sender, sequence number,
length, then a pattern of both) to one of the QPs, up to 32 in flight. The
packets of a sender's QP are received on the CPU they leave from, so both
receiving QPs consume from the SRQ at once.

Checked: every posted wr_id completes exactly once, successfully, on the QP
its message was sent to; its buffer holds exactly that message (length and
every byte); every message sent lands exactly once. Two QPs taking the same
WQE show up as a wr_id completing twice, a WQE holding another message than
its completion says, and a WQE never completed. Fork happens before any
verbs object exists, so no registered memory is shared with a child."""
import json
import os
import select
import struct
import sys
import time

from pyverbs.addr import AHAttr, GID, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
from pyverbs.wr import RecvWR, SendWR, SGE
import pyverbs.enums as e

SLOT = 64
WINDOW = 32
DEADLINE = 300


def message(sender, seq):
    """The payload of message `seq` of `sender`: 16 to 64 bytes."""
    length = 16 + (seq * 7 + sender * 3) % 49
    head = struct.pack("<III", sender, seq, length)
    body = bytes((sender * 31 + seq * 17 + k) & 0xFF for k in range(length - len(head)))
    return head + body


def connect(qp, local_gid_index, remote_qpn, remote_gid, access):
    a = QPAttr(qp_state=e.IBV_QPS_INIT)
    a.pkey_index = 0
    a.port_num = 1
    a.qp_access_flags = access
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
    a = QPAttr(qp_state=e.IBV_QPS_RTR)
    a.path_mtu = e.IBV_MTU_1024
    a.dest_qp_num = remote_qpn
    a.rq_psn = 0
    a.max_dest_rd_atomic = 1
    a.min_rnr_timer = 1
    a.ah_attr = AHAttr(is_global=1, port_num=1,
                       gr=GlobalRoute(dgid=GID(remote_gid), sgid_index=local_gid_index, hop_limit=64))
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN
              | e.IBV_QP_RQ_PSN | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
    a = QPAttr(qp_state=e.IBV_QPS_RTS)
    a.timeout = 14
    a.retry_cnt = 7
    a.rnr_retry = 7
    a.sq_psn = 0
    a.max_rd_atomic = 1
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT
              | e.IBV_QP_RNR_RETRY | e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)


class Pipe:
    """One JSON object per line, each way."""

    def __init__(self, rfd, wfd):
        self.r = os.fdopen(rfd, "r")
        self.w = os.fdopen(wfd, "w")

    def send(self, obj):
        self.w.write(json.dumps(obj) + "\n")
        self.w.flush()

    def recv(self, timeout=120):
        ready, _, _ = select.select([self.r], [], [], timeout)
        if not ready:
            raise AssertionError("no word from the other process in %d s" % timeout)
        line = self.r.readline()
        if not line:
            raise AssertionError("the other process went away")
        return json.loads(line)


def sender(index, dev, gid_index, count, pipe):
    """Child `index`: streams `count` SENDs to the receiving QP `index`."""
    ncpu = os.cpu_count() or 1
    try:
        os.sched_setaffinity(0, {index % ncpu})
    except OSError:
        pass
    ctx = Context(name=dev)
    pd = PD(ctx)
    cq = CQ(ctx, 2 * WINDOW)
    cap = QPCap(max_send_wr=WINDOW, max_recv_wr=1, max_send_sge=1, max_recv_sge=1)
    # Our driver sends a QP's packets from CPU (QPN % online CPUs): make
    # the two senders' QPNs differ in parity, so their packets leave (and
    # are received) on two CPUs, as the pinning does for the C driver.
    qps = [QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))]
    while qps[-1].qp_num % 2 != index % 2 and len(qps) < 4:
        qps.append(QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap)))
    qp = qps[-1]
    mr = MR(pd, count * SLOT, e.IBV_ACCESS_LOCAL_WRITE)
    for seq in range(count):
        m = message(index, seq)
        mr.write(m, len(m), seq * SLOT)
    gid = ctx.query_gid(port_num=1, index=gid_index)
    pipe.send({"qpn": qp.qp_num, "gid": str(gid)})
    peer = pipe.recv()
    connect(qp, gid_index, peer["qpn"], peer["gid"], e.IBV_ACCESS_LOCAL_WRITE)
    pipe.send({"ready": True})
    pipe.recv()  # go
    posted = done = 0
    end = time.time() + DEADLINE
    while done < count:
        while posted < count and posted - done < WINDOW:
            m_len = len(message(index, posted))
            wr = SendWR(wr_id=posted, opcode=e.IBV_WR_SEND, num_sge=1,
                        sg=[SGE(mr.buf + posted * SLOT, m_len, mr.lkey)],
                        send_flags=e.IBV_SEND_SIGNALED)
            qp.post_send(wr)
            posted += 1
        n, wcs = cq.poll(WINDOW)
        for wc in wcs[:n]:
            if wc.status != e.IBV_WC_SUCCESS:
                raise AssertionError("sender %d: send %d completed with status %d"
                                     % (index, wc.wr_id, wc.status))
        done += n
        if time.time() > end:
            raise AssertionError("sender %d: %d of %d sends completed in %d s"
                                 % (index, done, count, DEADLINE))
    pipe.send({"sent": count, "cpus": sorted(os.sched_getaffinity(0))})


def main():
    recv_dev, recv_gid_index = sys.argv[1], int(sys.argv[2])
    send_dev, send_gid_index = sys.argv[3], int(sys.argv[4])
    count = int(sys.argv[5]) if len(sys.argv) > 5 else 2000
    total = 2 * count

    pipes, pids = [], []
    for index in range(2):
        to_child_r, to_child_w = os.pipe()
        to_parent_r, to_parent_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(to_child_w)
            os.close(to_parent_r)
            status = 0
            try:
                sender(index, send_dev, send_gid_index, count, Pipe(to_child_r, to_parent_w))
            except BaseException as err:  # reported by the exit status
                print("sender %d: %s" % (index, err), file=sys.stderr, flush=True)
                status = 1
            # The kernel, not pyverbs finalizers, cleans up.
            sys.stdout.flush()
            os._exit(status)
        os.close(to_child_r)
        os.close(to_parent_w)
        pipes.append(Pipe(to_parent_r, to_child_w))
        pids.append(pid)

    ctx = Context(name=recv_dev)
    pd = PD(ctx)
    cq = CQ(ctx, total + 64)
    srq = SRQ(pd, SrqInitAttr(attr=SrqAttr(max_wr=total, max_sge=1)))
    cap = QPCap(max_send_wr=4, max_recv_wr=0, max_send_sge=1, max_recv_sge=0)
    qps = [QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, srq=srq, cap=cap))
           for _ in range(2)]
    mr = MR(pd, total * SLOT, e.IBV_ACCESS_LOCAL_WRITE)
    mr.write(b"\xee" * (total * SLOT), total * SLOT, 0)
    for i in range(total):
        srq.post_recv(RecvWR(wr_id=i, num_sge=1, sg=[SGE(mr.buf + i * SLOT, SLOT, mr.lkey)]))
    gid = ctx.query_gid(port_num=1, index=recv_gid_index)
    for index, pipe in enumerate(pipes):
        peer = pipe.recv()
        pipe.send({"qpn": qps[index].qp_num, "gid": str(gid)})
        connect(qps[index], recv_gid_index, peer["qpn"], peer["gid"], e.IBV_ACCESS_LOCAL_WRITE)
    for pipe in pipes:
        pipe.recv()  # ready
    start = time.time()
    for pipe in pipes:
        pipe.send({"go": True})

    wcs = []
    end = start + DEADLINE
    while len(wcs) < total and time.time() < end:
        n, got = cq.poll(64)
        wcs += got[:n]
        if n == 0:
            time.sleep(0.001)
    elapsed = time.time() - start
    # A few extra ones would mean a WQE completed twice: look a little more.
    time.sleep(1)
    n, got = cq.poll(64)
    wcs += got[:n]

    problems = []
    for index, pipe in enumerate(pipes):
        try:
            pipe.recv(timeout=30)
        except AssertionError as err:
            problems.append("sender %d did not finish: %s" % (index, err))
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        if status != 0:
            problems.append("a sender failed (status %#x)" % status)

    qp_index = {qp.qp_num: i for i, qp in enumerate(qps)}
    seen_wr = {}
    landed = {}
    for wc in wcs:
        if wc.status != e.IBV_WC_SUCCESS:
            problems.append("wr_id %d completed with status %d" % (wc.wr_id, wc.status))
            continue
        if wc.wr_id in seen_wr:
            problems.append("wr_id %d completed twice" % wc.wr_id)
            continue
        seen_wr[wc.wr_id] = wc
        if not 0 <= wc.wr_id < total:
            problems.append("unknown wr_id %d" % wc.wr_id)
            continue
        data = mr.read(SLOT, wc.wr_id * SLOT)
        snd, seq, length = struct.unpack("<III", data[:12])
        if snd > 1 or seq >= count:
            problems.append("wr_id %d holds no message (%r)" % (wc.wr_id, data[:16]))
            continue
        want = message(snd, seq)
        if wc.byte_len != len(want) or data[:len(want)] != want:
            problems.append("wr_id %d: completion says %d bytes, buffer holds %d bytes of "
                            "message %d/%d%s" % (wc.wr_id, wc.byte_len, length, snd, seq,
                                                 "" if data[:len(want)] == want else " (corrupt)"))
        if qp_index.get(wc.qp_num) != snd:
            problems.append("message %d/%d completed on QP %#x" % (snd, seq, wc.qp_num))
        if (snd, seq) in landed:
            problems.append("message %d/%d landed in wr_id %d and %d"
                            % (snd, seq, landed[(snd, seq)], wc.wr_id))
        landed[(snd, seq)] = wc.wr_id
    missing_wr = total - len(seen_wr)
    if missing_wr:
        problems.append("%d of %d receive WQEs never completed" % (missing_wr, total))
    lost = [(s, q) for s in range(2) for q in range(count) if (s, q) not in landed]
    if lost:
        problems.append("%d messages landed nowhere (first %s)" % (len(lost), lost[:3]))
    if problems:
        for p in problems[:20]:
            print(p)
        print("%d problems (%d completions in %.1f s)" % (len(problems), len(wcs), elapsed))
        sys.stdout.flush()
        os._exit(1)
    print("srq race: ok, %d messages from two CPUs into one SRQ in %.1f s, every WQE once"
          % (total, elapsed))
    sys.stdout.flush()
    os._exit(0)


main()
