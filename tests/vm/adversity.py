"""The reliability engine under adversity, through stock librxe (pyverbs),
between a requester on DEV_A (namespace of this process, netdev veth-a)
and a responder on DEV_B (netdev veth-b in namespace "peer"):

  retry_exhausted  the peer goes silent (netem drops everything) with
                   retry_cnt 1: the first WQE completes with
                   RETRY_EXC_ERR, the others with WR_FLUSH_ERR, within
                   (retry_cnt + 1) x timeout plus slack
  rnr_exhausted    no receive posted, rnr_retry 0: RNR_RETRY_EXC_ERR
  rnr_late_recv    no receive posted, rnr_retry 7, the receive posted half
                   a second later: the SEND completes successfully
  destroy_armed    QPs destroyed with the retry timer armed (SENDs in
                   flight to a silent peer): no hang, no warning
  atomic_race      two requester QPs, two processes, FETCH_AND_ADD on one
                   remote counter: the final value is the sum
  retry_peer_gone  the peer vanishes mid-transfer: its namespace ("peer")
                   is deleted and the responder process in it killed,
                   with retry_cnt 1 and WRITEs in flight: completions
                   succeed up to one RETRY_EXC_ERR, the rest WR_FLUSH_ERR,
                   within (retry_cnt + 1) x timeout plus slack. Needs a
                   topology where deleting "peer" leaves DEV_A's link up
                   (t_adversity.sh's routed_namespaces); not in the
                   default list

    adversity.py DEV_A GID_A DEV_B GID_B [CASE...]

Prints one line per case and the elapsed time; exits non-zero on the first
failure."""
import os
import subprocess
import sys
import time
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.qp import QP, QPCap, QPInitAttr, QPAttr
from pyverbs.addr import AHAttr, GID, GlobalRoute
from pyverbs.wr import RecvWR, SendWR, SGE
import pyverbs.enums as e

ACCESS = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
          | e.IBV_ACCESS_REMOTE_ATOMIC)


def netem(spec):
    """Sets (or with None removes) a netem qdisc on both ends of the pair."""
    for prefix in ([], ["ip", "netns", "exec", "peer"]):
        dev = "veth-b" if prefix else "veth-a"
        subprocess.run(prefix + ["tc", "qdisc", "del", "dev", dev, "root"],
                       stderr=subprocess.DEVNULL, check=False)
        if spec:
            subprocess.run(prefix + ["tc", "qdisc", "add", "dev", dev, "root", "netem"] + spec.split(),
                           check=True)


class End:
    def __init__(self, dev, gid_index, pd=None, ctx=None):
        self.ctx = ctx or Context(name=dev)
        self.gid_index = gid_index
        self.gid = self.ctx.query_gid(port_num=1, index=gid_index)
        self.pd = pd or PD(self.ctx)
        self.cq = CQ(self.ctx, 64)
        cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=1, max_recv_sge=1)
        self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=cap))
        self.mr = MR(self.pd, 1 << 16, ACCESS)

    def connect(self, peer, timeout=14, retry_cnt=7, rnr_retry=7, min_rnr_timer=12):
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
        a.min_rnr_timer = min_rnr_timer
        a.ah_attr = AHAttr(is_global=1, port_num=1,
                           gr=GlobalRoute(dgid=peer.gid, sgid_index=self.gid_index, hop_limit=64))
        self.qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN
                       | e.IBV_QP_RQ_PSN | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
        a = QPAttr(qp_state=e.IBV_QPS_RTS)
        a.timeout = timeout
        a.retry_cnt = retry_cnt
        a.rnr_retry = rnr_retry
        a.sq_psn = 0
        a.max_rd_atomic = 4
        self.qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT
                       | e.IBV_QP_RNR_RETRY | e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)

    def send(self, wr_id, size=64):
        self.qp.post_send(SendWR(wr_id=wr_id, opcode=e.IBV_WR_SEND, num_sge=1,
                                 sg=[SGE(self.mr.buf, size, self.mr.lkey)], send_flags=e.IBV_SEND_SIGNALED))


def completions(cq, want, deadline):
    got, end = [], time.time() + deadline
    while len(got) < want:
        n, wcs = cq.poll(want - len(got))
        got += wcs[:n]
        if time.time() > end:
            raise AssertionError("%d of %d completions after %d s" % (len(got), want, deadline))
        if not n:
            time.sleep(0.01)
    return got


def pair(dev_a, gid_a, dev_b, gid_b, **attrs):
    a, b = End(dev_a, gid_a), End(dev_b, gid_b)
    a.connect(b, **attrs)
    b.connect(a)
    return a, b


def case_retry_exhausted(args):
    # timeout 16: 268 ms; retry_cnt 1: two expiries before the error.
    a, b = pair(*args, timeout=16, retry_cnt=1)
    netem("loss 100%")
    try:
        start = time.time()
        for i in range(4):
            a.send(10 + i)
        wcs = completions(a.cq, 4, 30)
        took = time.time() - start
    finally:
        netem(None)
    statuses = [(wc.wr_id, wc.status) for wc in wcs]
    want = [(10, e.IBV_WC_RETRY_EXC_ERR)] + [(10 + i, e.IBV_WC_WR_FLUSH_ERR) for i in range(1, 4)]
    assert statuses == want, "completions %s, wanted %s" % (statuses, want)
    # (retry_cnt + 1) x 268 ms, plus slack for emulation.
    assert took < 2 * 0.268 + 5, "took %.1f s" % took
    return "RETRY_EXC_ERR then 3 flushed in %.2f s" % took


def case_rnr_exhausted(args):
    a, b = pair(*args, rnr_retry=0)
    start = time.time()
    a.send(20)
    (wc,) = completions(a.cq, 1, 30)
    assert wc.status == e.IBV_WC_RNR_RETRY_EXC_ERR, "status %d" % wc.status
    return "RNR_RETRY_EXC_ERR in %.2f s" % (time.time() - start)


def case_rnr_late_recv(args):
    # min_rnr_timer 1: 0.01 ms between RNR retries; rnr_retry 7: forever.
    a, b = End(args[0], args[1]), End(args[2], args[3])
    a.connect(b, rnr_retry=7)
    b.connect(a, min_rnr_timer=1)
    data = os.urandom(64)
    a.mr.write(data, 64, 0)
    a.send(30)
    time.sleep(0.5)
    n, _ = a.cq.poll(1)
    assert n == 0, "the SEND completed with no receive posted"
    b.qp.post_recv(RecvWR(wr_id=31, num_sge=1, sg=[SGE(b.mr.buf, 4096, b.mr.lkey)]))
    (sc,) = completions(a.cq, 1, 30)
    (rc,) = completions(b.cq, 1, 30)
    assert sc.status == e.IBV_WC_SUCCESS and rc.status == e.IBV_WC_SUCCESS, (sc.status, rc.status)
    assert b.mr.read(64, 0) == data
    return "SEND completed once the receive was posted"


def case_destroy_armed(args):
    for _ in range(2):
        # Connected first: modify_qp resolves the peer's MAC over the link.
        a, b = pair(*args, timeout=14)
        netem("loss 100%")
        try:
            for i in range(4):
                a.send(40 + i, 4000)
            time.sleep(0.05)
            a.qp.close()
            b.qp.close()
            a.cq.close()
            b.cq.close()
        finally:
            netem(None)
    return "2 pairs destroyed with their retry timers armed"


class Peer:
    """The far end of a QP as connect() needs it."""

    def __init__(self, qp_num, gid):
        self.qp = type("Q", (), {"qp_num": qp_num})()
        self.gid = gid


def atomic_worker(dev, gid_index, rkey, addr, count, cpu):
    """A worker process: its own context and QP on `dev`; prints its QP
    number, reads the responder's, then runs `count` FETCH_AND_ADD of 1 on
    (rkey, addr), at most 8 in flight."""
    os.sched_setaffinity(0, {cpu % os.cpu_count()})
    a = End(dev, gid_index)
    print(a.qp.qp_num, flush=True)
    peer_qpn = int(sys.stdin.readline())
    a.connect(Peer(peer_qpn, GID_OF_PEER[0]))
    posted = done = 0
    while done < count:
        while posted < count and posted - done < 8:
            wr = SendWR(wr_id=posted, opcode=e.IBV_WR_ATOMIC_FETCH_AND_ADD, num_sge=1,
                        sg=[SGE(a.mr.buf + 8 * (posted % 8), 8, a.mr.lkey)],
                        send_flags=e.IBV_SEND_SIGNALED)
            wr.set_wr_atomic(rkey=rkey, addr=addr, compare_add=1, swap=0)
            a.qp.post_send(wr)
            posted += 1
        for wc in completions(a.cq, 1, 60):
            assert wc.status == e.IBV_WC_SUCCESS, "atomic status %d" % wc.status
            done += 1
    print("done", flush=True)


def case_atomic_race(args):
    workers, adds = 2, 100
    b_ctx = Context(name=args[2])
    b_pd = PD(b_ctx)
    counter = MR(b_pd, 4096, ACCESS)
    counter.write(bytes(8), 8, 0)
    procs = []
    for w in range(workers):
        b = End(args[2], args[3], pd=b_pd, ctx=b_ctx)
        proc = subprocess.Popen([sys.executable, __file__, "--atomic-worker", args[0], str(args[1]),
                                 args[2], str(args[3]), str(counter.rkey), str(counter.buf),
                                 str(adds), str(w)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        worker_qpn = int(proc.stdout.readline())
        a_gid = Context(name=args[0]).query_gid(port_num=1, index=args[1])
        b.connect(Peer(worker_qpn, a_gid))
        proc.stdin.write("%d\n" % b.qp.qp_num)
        proc.stdin.flush()
        procs.append((proc, b))
    for proc, _ in procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0 and "done" in out, "a worker failed (%s)" % proc.returncode
    total = int.from_bytes(counter.read(8, 0), "little")
    assert total == workers * adds, "counter %d, expected %d" % (total, workers * adds)
    return "%d x %d FETCH_AND_ADD from two processes: counter %d" % (workers, adds, total)


def responder(dev, gid_index):
    """The far end of retry_peer_gone, in its own process (in namespace
    "peer"): prints its QP number, rkey, buffer address and GID, reads the
    requester's QP number and GID, connects, prints "ready" and waits to
    be killed."""
    b = End(dev, gid_index)
    print(b.qp.qp_num, b.mr.rkey, b.mr.buf, b.gid, flush=True)
    qpn, gid = sys.stdin.readline().split()
    b.connect(Peer(int(qpn), GID(gid)))
    print("ready", flush=True)
    sys.stdin.readline()


def case_retry_peer_gone(args):
    # timeout 16: 268 ms; retry_cnt 1: two expiries before the error.
    resp = subprocess.Popen(["ip", "netns", "exec", "peer", sys.executable, os.path.abspath(__file__),
                             "--responder", args[2], str(args[3])],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        qpn, rkey, addr, gid = resp.stdout.readline().split()
        a = End(args[0], args[1])
        a.connect(Peer(int(qpn), GID(gid)), timeout=16, retry_cnt=1)
        resp.stdin.write("%d %s\n" % (a.qp.qp_num, a.gid))
        resp.stdin.flush()
        assert resp.stdout.readline().strip() == "ready", "the responder did not connect"

        def write(i):
            wr = SendWR(wr_id=i, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                        sg=[SGE(a.mr.buf, 16384, a.mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
            wr.set_wr_rdma(int(rkey), int(addr))
            a.qp.post_send(wr)

        # 16 KB WRITEs, 4 in flight, until 8 have completed: the transfer runs.
        posted, wcs = 0, []
        while len(wcs) < 8:
            while posted - len(wcs) < 4:
                write(posted)
                posted += 1
            wcs += completions(a.cq, 1, 30)
        bad = [(wc.wr_id, wc.status) for wc in wcs if wc.status != e.IBV_WC_SUCCESS]
        assert not bad, "completions before the peer went: %s" % bad
        subprocess.run(["ip", "netns", "del", "peer"], check=True)
        resp.kill()
        resp.wait(timeout=30)
        # The responder's QP is gone with its process; the transfer goes on.
        start = time.time()
        for _ in range(4):
            write(posted)
            posted += 1
        rest = completions(a.cq, posted - len(wcs), 30)
        took = time.time() - start
    finally:
        if resp.poll() is None:
            resp.kill()
            resp.wait(timeout=30)
    got = [(wc.wr_id, wc.status) for wc in rest]
    ids = [i for i, _ in got]
    assert ids == list(range(len(wcs), posted)), "completions out of order: %s" % got
    ok = 0
    while ok < len(got) and got[ok][1] == e.IBV_WC_SUCCESS:
        ok += 1
    want = [e.IBV_WC_RETRY_EXC_ERR] + [e.IBV_WC_WR_FLUSH_ERR] * (len(got) - ok - 1)
    assert ok < len(got) and [st for _, st in got[ok:]] == want, \
        "completions after the peer went %s: wanted successes, one RETRY_EXC_ERR, then WR_FLUSH_ERR" % got
    assert took < 2 * 0.268 + 5, "took %.1f s" % took
    return "%d WRITEs done, then %d more succeeded, RETRY_EXC_ERR, %d flushed in %.2f s" % (
        len(wcs), ok, len(got) - ok - 1, took)


CASES = {"retry_exhausted": case_retry_exhausted, "rnr_exhausted": case_rnr_exhausted,
         "rnr_late_recv": case_rnr_late_recv, "destroy_armed": case_destroy_armed,
         "atomic_race": case_atomic_race, "retry_peer_gone": case_retry_peer_gone}
DEFAULT_CASES = ["retry_exhausted", "rnr_exhausted", "rnr_late_recv", "destroy_armed", "atomic_race"]


GID_OF_PEER = [None]


def main():
    if sys.argv[1] == "--atomic-worker":
        dev, gid_index, peer_dev, peer_gid_index, rkey, addr, count, cpu = sys.argv[2:10]
        GID_OF_PEER[0] = Context(name=peer_dev).query_gid(port_num=1, index=int(peer_gid_index))
        atomic_worker(dev, int(gid_index), int(rkey), int(addr), int(count), int(cpu))
        return
    if sys.argv[1] == "--responder":
        responder(sys.argv[2], int(sys.argv[3]))
        return
    args = (sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
    for name in sys.argv[5:] or DEFAULT_CASES:
        start = time.time()
        print("%s: ok, %s (%.1f s)" % (name, CASES[name](args), time.time() - start), flush=True)


main()
