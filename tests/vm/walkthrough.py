"""The seed chapter's walkthroughs replayed live on our driver, asserted
from the rdma_rxe trace events, the fault rules' counters and the data:

  gbn        a 4-packet RDMA WRITE whose second packet the responder's
             device drops: exactly one NAK naming it, the packets after it
             dropped without a second NAK, the requester goes back to it
             and resends three packets, one ACK completes the WQE, the
             remote memory is right;
  lost_ack   a one-packet SEND whose ACK is dropped: the retry timer
             expires, the SEND goes again, the responder sees a duplicate
             and ACKs it without consuming a second receive WQE; one send
             completion, one receive completion;
  dup_read   a READ whose response is dropped: answered again from the
             rkey, the data is right;
  dup_atomic a FETCH_AND_ADD whose atomic ACK is dropped: the duplicate is
             answered from the saved result, the remote value changes once;
  tx_nomem   a 16-packet RDMA WRITE whose first two builds fail (a `nomem`
             rule: no memory for the packet): the requester sends nothing
             past a failed packet, the retry timer resends (in a task),
             no NAK.

    walkthrough.py DEV_REQ GID_REQ DEV_RESP GID_RESP [CASE...]

The requester's QP is on DEV_REQ, the responder's on DEV_RESP (two devices
in two namespaces, one process). Needs the faults files in debugfs and the
trace events in tracefs."""
import os
import re
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

ACCESS = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
          | e.IBV_ACCESS_REMOTE_ATOMIC)
TRACING = "/sys/kernel/tracing"
MTU = 1024
START_PSN = 1000


def faults(dev, rules):
    with open("/sys/kernel/debug/rdma_rxe/%s/faults" % dev, "w") as f:
        f.write(rules)


def fault_counters(dev):
    """(matched, acted) of each rule, in order."""
    out = []
    with open("/sys/kernel/debug/rdma_rxe/%s/faults" % dev) as f:
        for line in f:
            tail = line.split("# ")[1].split()
            out.append(tuple(int(kv.split("=")[1]) for kv in tail))
    return out


def trace_start():
    with open(TRACING + "/events/rdma_rxe/enable", "w") as f:
        f.write("1")
    with open(TRACING + "/trace", "w") as f:
        f.write("")


def trace_events(qpns):
    """The rdma_rxe events of QPs `qpns`, in order, as (name, {field: value});
    a bare word (the PSN verdict) is the field "verdict"."""
    events = []
    with open(TRACING + "/trace") as f:
        for line in f:
            m = re.search(r" rxe_(\w+): (.*)$", line)
            if not m:
                continue
            fields = {}
            for word in m.group(2).split():
                if "=" in word:
                    k, v = word.split("=", 1)
                    fields[k] = v
                else:
                    fields["verdict"] = word
            if int(fields.get("qpn", "-1")) in qpns:
                events.append((m.group(1), fields))
    return events


class End:
    def __init__(self, dev, gid_index):
        self.dev = dev
        self.ctx = Context(name=dev)
        self.gid_index = gid_index
        self.gid = self.ctx.query_gid(port_num=1, index=gid_index)
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 64)
        cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=1, max_recv_sge=1)
        self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=cap))
        self.mr = MR(self.pd, 1 << 16, ACCESS)

    def connect(self, peer, timeout=14, retry_cnt=7):
        a = QPAttr(qp_state=e.IBV_QPS_INIT)
        a.pkey_index = 0
        a.port_num = 1
        a.qp_access_flags = ACCESS
        self.qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
        a = QPAttr(qp_state=e.IBV_QPS_RTR)
        a.path_mtu = e.IBV_MTU_1024
        a.dest_qp_num = peer.qp.qp_num
        a.rq_psn = START_PSN
        a.max_dest_rd_atomic = 4
        a.min_rnr_timer = 12
        a.ah_attr = AHAttr(is_global=1, port_num=1,
                           gr=GlobalRoute(dgid=peer.gid, sgid_index=self.gid_index, hop_limit=64))
        self.qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN
                       | e.IBV_QP_RQ_PSN | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
        a = QPAttr(qp_state=e.IBV_QPS_RTS)
        a.timeout = timeout
        a.retry_cnt = retry_cnt
        a.rnr_retry = 7
        a.sq_psn = START_PSN
        a.max_rd_atomic = 4
        self.qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT
                       | e.IBV_QP_RNR_RETRY | e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)


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


def nothing_more(cq, wait=1.0):
    end = time.time() + wait
    while time.time() < end:
        n, wcs = cq.poll(1)
        assert n == 0, "an extra completion (wr_id %d)" % wcs[0].wr_id
        time.sleep(0.05)


def psn_decisions(events, qpn):
    return [(int(f["psn"]), f["verdict"], f["reply"], int(f["reply_psn"]))
            for n, f in events if n == "resp_psn" and int(f["qpn"]) == qpn]


def go_backs(events, qpn):
    return [(int(f["from_psn"]), f["cause"]) for n, f in events
            if n == "req_go_back" and int(f["qpn"]) == qpn]


def timer_resends(events, qpn):
    """The contexts (task or softirq) the requester of QP `qpn` built its
    resent packets in. A go-back-N the retry timer starts is sent by the
    QP's transmit work, in a task: the timer's softirq only decides (and
    builds a tail-loss probe, two packets at most), since building a
    window of packets there, timer after timer, can keep a CPU in softirq
    for as long as each expiry's work outlasts the next expiry."""
    return [f["ctx"] for n, f in events
            if n == "req_tx" and int(f["qpn"]) == qpn and f["retransmit"] == "1"]


def write_through(req, resp, packets, dev, rule):
    """Sets fault `rule` on device `dev`, then sends `packets` MTUs of
    random data by one signaled RDMA WRITE from `req` to `resp`, waits for
    its completion (and no other) and checks the remote memory."""
    data = os.urandom(packets * MTU)
    req.mr.write(data, len(data), 0)
    resp.mr.write(bytes(len(data)), len(data), 0)
    faults(dev, rule)
    trace_start()
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                sg=[SGE(req.mr.buf, len(data), req.mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_rdma(resp.mr.rkey, resp.mr.buf)
    req.qp.post_send(wr)
    poll(req.cq, 1)
    nothing_more(req.cq)
    assert resp.mr.read(len(data), 0) == data, "remote memory differs"


def case_gbn(req, resp):
    write_through(req, resp, 4, resp.dev, "drop dir=rx class=request qpn=%d psn=%d count=1\n"
                  % (resp.qp.qp_num, START_PSN + 1))
    assert fault_counters(resp.dev) == [(2, 1)], fault_counters(resp.dev)
    ev = trace_events({req.qp.qp_num, resp.qp.qp_num})
    d = psn_decisions(ev, resp.qp.qp_num)
    p = START_PSN
    # 1000 in order; 1001 lost; 1002 a gap: one NAK naming 1001; 1003 (if
    # it comes before the resent packets) dropped without a second NAK;
    # then 1001-1003 again, in order, and the ACK of the last completes the
    # WQE. A first 1003 overtaken by the resent ones is a duplicate, ACKed
    # again.
    assert d[0] == (p, "in_order", "none", p), d
    assert d[1] == (p + 2, "out_of_sequence", "nak_psn_seq", p + 1), d
    assert [x[0] for x in d if x[1] == "in_order"] == [p, p + 1, p + 2, p + 3], d
    assert [x for x in d if x[1] == "in_order"][-1][2] == "ack", d
    assert all(x[2] == "none" for x in d[2:] if x[1] == "out_of_sequence"), d
    assert all(x[2] == "ack" for x in d if x[1] == "duplicate"), d
    assert sum(x[2] == "nak_psn_seq" for x in d) == 1, d
    g = go_backs(ev, req.qp.qp_num)
    assert g == [(p + 1, "nak")], g
    acks = [(int(f["psn"]), f["syndrome"]) for n, f in ev
            if n == "comp_ack" and int(f["qpn"]) == req.qp.qp_num]
    # The NAK, then the ACK of 1003 (again for a first 1003 that came late).
    assert acks[0] == (p + 1, "0x60") and acks[1:] and all(a == (p + 3, acks[1][1]) for a in acks[1:]), acks
    assert int(acks[1][1], 16) >> 5 == 0, "not an ACK: %s" % acks
    return "one NAK naming %d, three resent, one ACK" % (p + 1)


def case_lost_ack(req, resp):
    data = os.urandom(100)
    req.mr.write(data, len(data), 0)
    for i in range(2):
        resp.qp.post_recv(RecvWR(wr_id=10 + i, num_sge=1, sg=[SGE(resp.mr.buf + 4096 * i, 4096, resp.mr.lkey)]))
    faults(req.dev, "drop dir=rx class=ack qpn=%d nth=1\n" % req.qp.qp_num)
    trace_start()
    req.qp.post_send(SendWR(wr_id=2, opcode=e.IBV_WR_SEND, num_sge=1,
                            sg=[SGE(req.mr.buf, len(data), req.mr.lkey)], send_flags=e.IBV_SEND_SIGNALED))
    poll(req.cq, 1)
    (rc,) = poll(resp.cq, 1)
    assert rc.wr_id == 10 and rc.byte_len == len(data), (rc.wr_id, rc.byte_len)
    assert resp.mr.read(len(data), 0) == data
    nothing_more(resp.cq)
    nothing_more(req.cq)
    assert fault_counters(req.dev)[0][1] == 1, fault_counters(req.dev)
    ev = trace_events({req.qp.qp_num, resp.qp.qp_num})
    d = psn_decisions(ev, resp.qp.qp_num)
    psn = d[0][0]
    assert d[0] == (psn, "in_order", "ack", psn), d
    assert (psn, "duplicate", "ack", psn) in d[1:], d
    assert all(x[1] == "duplicate" for x in d[1:]), d
    g = go_backs(ev, req.qp.qp_num)
    # The retry timer's first step is a tail-loss probe (issue 12), not the
    # QP timeout: the packet goes again with AckReq, retry_cnt untouched.
    assert g and g[0] == (psn, "probe"), g
    return "probe timer expired, resent, duplicate re-ACKed; one receive completion"


def case_dup_read(req, resp):
    data = os.urandom(3000)
    resp.mr.write(data, len(data), 0)
    faults(req.dev, "drop dir=rx class=read_resp qpn=%d nth=1\n" % req.qp.qp_num)
    trace_start()
    wr = SendWR(wr_id=3, opcode=e.IBV_WR_RDMA_READ, num_sge=1,
                sg=[SGE(req.mr.buf, len(data), req.mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_rdma(resp.mr.rkey, resp.mr.buf)
    req.qp.post_send(wr)
    poll(req.cq, 1)
    nothing_more(req.cq)
    assert req.mr.read(len(data), 0) == data, "READ data differs"
    ev = trace_events({req.qp.qp_num, resp.qp.qp_num})
    d = psn_decisions(ev, resp.qp.qp_num)
    assert d[0][1:3] == ("in_order", "read_response"), d
    assert any(x[1:3] == ("duplicate", "read_response") for x in d[1:]), d
    return "READ answered again from the rkey"


def case_dup_atomic(req, resp):
    resp.mr.write((1000).to_bytes(8, "little"), 8, 64)
    faults(req.dev, "drop dir=rx class=atomic_ack qpn=%d nth=1\n" % req.qp.qp_num)
    trace_start()
    wr = SendWR(wr_id=4, opcode=e.IBV_WR_ATOMIC_FETCH_AND_ADD, num_sge=1,
                sg=[SGE(req.mr.buf + 128, 8, req.mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_atomic(rkey=resp.mr.rkey, addr=resp.mr.buf + 64, compare_add=5, swap=0)
    req.qp.post_send(wr)
    poll(req.cq, 1)
    nothing_more(req.cq)
    value = int.from_bytes(resp.mr.read(8, 64), "little")
    orig = int.from_bytes(req.mr.read(8, 128), "little")
    assert value == 1005, "remote value %d: the add ran %s times" % (value, (value - 1000) / 5)
    assert orig == 1000, "original value returned %d" % orig
    ev = trace_events({req.qp.qp_num, resp.qp.qp_num})
    d = psn_decisions(ev, resp.qp.qp_num)
    assert d[0][1:3] == ("in_order", "atomic_ack"), d
    assert any(x[1:3] == ("duplicate", "atomic_ack") for x in d[1:]), d
    return "duplicate FETCH_AND_ADD replayed, remote value changed once"


def case_tx_nomem(req, resp):
    """A packet that cannot be built (no memory for its buffer) stops the
    requester's transmit round: it does not go on to send the PSNs after
    the lost one, which would only arrive out of sequence and cost a NAK
    and a resend; and under real memory pressure each failed packet is one
    more allocation in a loop with bottom halves off. The retry timer sends
    again from the lost PSN."""
    write_through(req, resp, 16, req.dev,
                  "nomem dir=tx class=request qpn=%d count=2\n" % resp.qp.qp_num)
    (matched, acted), = fault_counters(req.dev)
    assert acted == 2, (matched, acted)
    ev = trace_events({req.qp.qp_num, resp.qp.qp_num})
    d = psn_decisions(ev, resp.qp.qp_num)
    p = START_PSN
    assert [x[0] for x in d if x[1] == "in_order"] == list(range(p, p + 16)), d
    # Nothing was sent past a packet that failed: no gap, no NAK.
    assert all(x[1] == "in_order" for x in d), d
    g = go_backs(ev, req.qp.qp_num)
    assert g and all(c != "nak" for _, c in g), g
    ctx = timer_resends(ev, req.qp.qp_num)
    assert len(ctx) >= 16 and all(c == "task" for c in ctx), ctx
    return "two builds failed, no packet sent past them, %d resends by timer (from a task), no NAK" % len(g)


CASES = {"gbn": case_gbn, "lost_ack": case_lost_ack, "dup_read": case_dup_read,
         "dup_atomic": case_dup_atomic, "tx_nomem": case_tx_nomem}


def main():
    dev_req, gid_req, dev_resp, gid_resp = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    names = sys.argv[5:] or list(CASES)
    failed = []
    for name in names:
        req, resp = End(dev_req, gid_req), End(dev_resp, gid_resp)
        # timeout 18 (1.07 s): no spurious timeout under emulation; the lost
        # ACK costs one.
        req.connect(resp, timeout=18)
        resp.connect(req)
        try:
            print("%s: ok, %s" % (name, CASES[name](req, resp)), flush=True)
        except AssertionError as err:
            print("%s: FAILED: %s" % (name, err), flush=True)
            failed.append(name)
        finally:
            faults(req.dev, "\n")
            faults(resp.dev, "\n")
    if failed:
        sys.exit("failed: " + " ".join(failed))


main()
