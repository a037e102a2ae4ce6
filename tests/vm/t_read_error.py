"""A huge RDMA READ, then a request that moves the responder to ERROR: the
responder must enter ERROR at once and abandon the READ reply, not build
the rest of it (hundreds of thousands of packets) in one softirq.

    t_read_error.py REQ_DEV REQ_GID_INDEX RESP_DEV RESP_GID_INDEX REQ_IP RESP_IP [MIB]

One process, one RC QP on each device (path MTU 256, the most packets per
byte). The responder's QP grants remote READ only. One buffer of MIB MiB
(default 256) is registered on both devices; the requester READs all of it
and, once the reply is under way, a WRITE the responder refuses (NAK,
ERROR) arrives at the PSN it expects next. The requester's own QP would
hold such a WRITE back until nearly all the READ reply is in (its window of
unacknowledged PSNs, as rxe's), so the WRITE is forged: one packet from a
plain UDP socket at the requester's address.

Prints one line: "error after S s, SENT packets sent by the responder,
READ packets in the READ", and exits 0 if the responder's QP is in ERROR
within BOUND seconds of the WRITE having been posted, having sent less
than 1/64 of the READ. Exit 2: not in ERROR in time, while the responder
is still sending the READ reply; exit 3: in ERROR, but only after sending
more of the READ reply than that (the C driver serves a READ to its end
before it looks at the next request; the shell side decides whether that
is acceptable). On one vCPU this also fails when the reply starves the
tasks of its CPU, this one included, so the WRITE goes out late: a
transmit path in softirq let 251189 of the million packets out first.
Exit 1: anything else."""
import ctypes
import mmap
import os
import socket
import struct
import sys
import time
import zlib

from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SendWR, SGE
import pyverbs.enums as e

BOUND = 60
MTU = 256


def sent_pkts(dev):
    path = "/sys/class/infiniband/%s/ports/1/hw_counters/sent_pkts" % dev
    try:
        with open(path) as f:
            return int(f.read())
    except OSError:
        return None


class End:
    def __init__(self, dev, gid_index, access, addr, size):
        self.dev = dev
        self.ctx = Context(name=dev)
        self.gid_index = gid_index
        self.gid = self.ctx.query_gid(port_num=1, index=gid_index)
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 16)
        cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)
        self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=cap))
        self.access = access
        self.mr = MR(self.pd, size, access | e.IBV_ACCESS_LOCAL_WRITE, address=addr)

    def connect(self, peer):
        a = QPAttr(qp_state=e.IBV_QPS_INIT)
        a.pkey_index = 0
        a.port_num = 1
        a.qp_access_flags = self.access
        self.qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
        a = QPAttr(qp_state=e.IBV_QPS_RTR)
        a.path_mtu = e.IBV_MTU_256
        a.dest_qp_num = peer.qp.qp_num
        a.rq_psn = 0
        a.max_dest_rd_atomic = 1
        a.min_rnr_timer = 1
        a.ah_attr = AHAttr(is_global=1, port_num=1,
                           gr=GlobalRoute(dgid=peer.gid, sgid_index=self.gid_index, hop_limit=64))
        self.qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN
                       | e.IBV_QP_RQ_PSN | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
        a = QPAttr(qp_state=e.IBV_QPS_RTS)
        a.timeout = 14
        a.retry_cnt = 1
        a.rnr_retry = 1
        a.sq_psn = 0
        a.max_rd_atomic = 1
        self.qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT
                       | e.IBV_QP_RNR_RETRY | e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)

    def state(self):
        attr, _ = self.qp.query(e.IBV_QP_STATE)
        return attr.qp_state


def forge_write(src_ip, dst_ip, dst_qpn, psn, va, rkey, length=8):
    """Sends one RC RDMA WRITE ONLY packet from a plain UDP socket, its
    ICRC computed as rxe does: CRC-32 seeded with 8 bytes of ones, over the
    IPv4 header with TOS, TTL and checksum set to ones, the UDP header with
    its checksum set to ones, the BTH with byte 4 set to ones, then the
    rest of the packet."""
    payload = b"\xee" * length
    bth = struct.pack(">BBHII", 0x0a, 0, 0xffff, dst_qpn & 0xffffff,
                      0x80000000 | (psn & 0xffffff))
    reth = struct.pack(">QII", va, rkey, length)
    roce_len = len(bth) + len(reth) + len(payload) + 4
    sport = 50000
    udp = struct.pack(">HHHH", sport, 4791, 8 + roce_len, 0)
    # DF set, so Linux gives an unconnected socket's datagram the IP ID 0.
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + 8 + roce_len, 0, 0x4000, 64, 17, 0,
                     socket.inet_aton(src_ip), socket.inet_aton(dst_ip))

    def ones(header, at):
        header = bytearray(header)
        for i in at:
            header[i] = 0xff
        return bytes(header)

    masked = ones(ip, (1, 8, 10, 11)) + ones(udp, (6, 7)) + ones(bth, (4,))
    icrc = zlib.crc32(b"\xff" * 8 + masked + reth + payload) & 0xffffffff
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, 10, 2)  # IP_MTU_DISCOVER = IP_PMTUDISC_DO
    s.bind((src_ip, sport))
    s.sendto(bth + reth + payload + struct.pack("<I", icrc), (dst_ip, 4791))
    s.close()


def main():
    req_dev, req_gid = sys.argv[1], int(sys.argv[2])
    resp_dev, resp_gid = sys.argv[3], int(sys.argv[4])
    req_ip, resp_ip = sys.argv[5], sys.argv[6]
    size = (int(sys.argv[7]) if len(sys.argv) > 7 else 256) << 20
    buf = mmap.mmap(-1, size)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    req = End(req_dev, req_gid, e.IBV_ACCESS_LOCAL_WRITE, addr, size)
    resp = End(resp_dev, resp_gid, e.IBV_ACCESS_REMOTE_READ, addr, size)
    req.connect(resp)
    resp.connect(req)

    packets = size // MTU
    before = sent_pkts(resp_dev)
    read = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_READ, num_sge=1,
                  sg=[SGE(addr, size, req.mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
    read.set_wr_rdma(resp.mr.rkey, addr)
    req.qp.post_send(read)
    # The reply is under way: the responder has sent some of it.
    deadline = time.time() + 60
    while (sent_pkts(resp_dev) or 0) - (before or 0) < 256 and time.time() < deadline:
        time.sleep(0.01)
    # The invalid request: a WRITE the responder's QP does not grant, at
    # the PSN it expects next (the READ took PSNs 0 .. packets - 1). Our
    # requester would not send it before the READ reply is nearly all in
    # (its window of unacknowledged PSNs), so it is forged.
    forge_write(req_ip, resp_ip, resp.qp.qp_num, packets, addr, resp.mr.rkey)
    start = time.time()
    state = resp.state()
    while state != e.IBV_QPS_ERR and time.time() - start < BOUND:
        time.sleep(0.05)
        state = resp.state()
    elapsed = time.time() - start
    after = sent_pkts(resp_dev)
    sent = None if before is None or after is None else after - before
    if state == e.IBV_QPS_ERR:
        # Packets built under the lock may still be on their way out.
        time.sleep(2)
        later = sent_pkts(resp_dev)
        sent = None if before is None or later is None else later - before
        print("error after %.1f s, %s packets sent by the responder, %d packets in the READ"
              % (elapsed, sent, packets))
        # In ERROR, but only once much of the READ reply was out (the
        # forged WRITE is sent once 256 packets were): 3.
        status = 3 if sent is not None and sent >= packets // 64 else 0
    else:
        time.sleep(2)
        later = sent_pkts(resp_dev)
        still = later is not None and after is not None and later > after
        print("responder QP in state %d, not ERROR, after %.1f s; %s packets sent, %s in the "
              "next 2 s; %d packets in the READ" % (state, elapsed, sent,
                                                    None if later is None else later - after, packets))
        status = 2 if still else 1
    sys.stdout.flush()
    # The kernel, not pyverbs finalizers, cleans up (the READ may still
    # be running).
    os._exit(status)


main()
