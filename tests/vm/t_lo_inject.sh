# An unprivileged local process cannot inject RoCE packets (issue 10, item
# 11). Two RC QPs on rxe0 talk to each other at the host's own address
# (10.0.0.1), so their packets take the driver's loopback path. A process
# running as nobody sends, through a plain UDP socket to 10.0.0.1:4791, an
# RDMA WRITE ONLY to the target QP, at its expected PSN, with a correct
# ICRC, into a remotely writable MR. UDP receives it on lo; rxe looks its
# device up by skb->dev (lo: none) and drops it. The MR must stay untouched;
# a real WRITE from the peer QP at the same PSN must then land (had the
# forgery been taken, the PSN would have moved and the real WRITE would be
# a duplicate, not executed); the QP stays in RTS. Ours also counts the
# drop in debugfs (rdma_rxe/rcvd_drop_no_port); the C driver has no such
# counter.
. "$(dirname "$0")/lib.sh"

need_pyverbs
command -v setpriv >/dev/null || fail "setpriv missing"
one_device
ip link set lo up

counter=/sys/kernel/debug/rdma_rxe/rcvd_drop_no_port
before=$(cat "$counter" 2>/dev/null || echo none)

cat > /tmp/lo_inject.py <<'EOF'
import os, socket, struct, subprocess, sys, time, zlib
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.qp import QP, QPCap, QPInitAttr, QPAttr
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.wr import SendWR, SGE
import pyverbs.enums as e

ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
gid_index = int(sys.argv[1])
ctx = Context(name="rxe0")
gid = ctx.query_gid(port_num=1, index=gid_index)
pd = PD(ctx)
cq = CQ(ctx, 16)


def make_qp():
    cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)
    return QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))


def connect(qp, peer_qpn, sq_psn, rq_psn):
    a = QPAttr(qp_state=e.IBV_QPS_INIT)
    a.pkey_index = 0
    a.port_num = 1
    a.qp_access_flags = ACCESS
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
    a = QPAttr(qp_state=e.IBV_QPS_RTR)
    a.path_mtu = e.IBV_MTU_1024
    a.dest_qp_num = peer_qpn
    a.rq_psn = rq_psn
    a.max_dest_rd_atomic = 1
    a.min_rnr_timer = 12
    a.ah_attr = AHAttr(is_global=1, port_num=1,
                       gr=GlobalRoute(dgid=gid, sgid_index=gid_index, hop_limit=64))
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN
              | e.IBV_QP_RQ_PSN | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
    a = QPAttr(qp_state=e.IBV_QPS_RTS)
    a.timeout = 14
    a.retry_cnt = 7
    a.rnr_retry = 7
    a.sq_psn = sq_psn
    a.max_rd_atomic = 1
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT
              | e.IBV_QP_RNR_RETRY | e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)


a, b = make_qp(), make_qp()
PSN_A, PSN_B = 0x1000, 0x2000  # a sends from PSN_B, b's expected PSN
connect(a, b.qp_num, PSN_B, PSN_A)
connect(b, a.qp_num, PSN_A, PSN_B)
LEN = 64
target = MR(pd, 4096, ACCESS)
target.write(bytes(LEN), LEN, 0)
source = MR(pd, 4096, ACCESS)

# The forger: nobody, a plain UDP socket, the ICRC computed as rxe does
# (CRC-32 seeded with 8 bytes of ones, over the IPv4 header with TOS, TTL
# and checksum set to ones, the UDP header with its checksum set to ones,
# the BTH with byte 4 set to ones, then the rest of the packet).
FORGER = r'''
import socket, struct, sys, zlib
dst_qpn, psn, va, rkey, length = (int(x) for x in sys.argv[1:6])
payload = b"\xee" * length
bth = struct.pack(">BBHII", 0x0a, 0, 0xffff, dst_qpn & 0xffffff, psn & 0xffffff)  # RC WRITE ONLY
reth = struct.pack(">QII", va, rkey, length)
roce_len = len(bth) + len(reth) + len(payload) + 4
sport = 50000
udp = struct.pack(">HHHH", sport, 4791, 8 + roce_len, 0)
src = dst = socket.inet_aton("10.0.0.1")
# DF set, so Linux gives an unconnected socket's datagram the IP ID 0.
ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + 8 + roce_len, 0, 0x4000, 64, 17, 0, src, dst)
def ones(b, idx):
    b = bytearray(b)
    for i in idx:
        b[i] = 0xff
    return bytes(b)
masked = ones(ip, (1, 8, 10, 11)) + ones(udp, (6, 7)) + ones(bth, (4,))
icrc = zlib.crc32(b"\xff" * 8 + masked + reth + payload) & 0xffffffff
pkt = bth + reth + payload + struct.pack("<I", icrc)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, 10, 2)  # IP_MTU_DISCOVER = IP_PMTUDISC_DO
s.bind(("10.0.0.1", sport))
for _ in range(3):
    s.sendto(pkt, ("10.0.0.1", 4791))
print("forger: sent 3 packets as uid", __import__("os").getuid())
'''
forger = subprocess.run(
    ["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups",
     "/usr/bin/python3", "-c", FORGER, str(b.qp_num), str(PSN_B), str(target.buf),
     str(target.rkey), str(LEN)], capture_output=True, text=True, timeout=60)
print(forger.stdout.strip(), forger.stderr.strip())
assert forger.returncode == 0, "forger failed"
time.sleep(2)
got = target.read(LEN, 0)
assert got == bytes(LEN), "forged WRITE from an unprivileged process landed: %r" % got[:16]
print("ok: forged WRITE dropped, MR untouched")

# The real peer writes at the same PSN: it must land.
pattern = bytes(range(LEN))
source.write(pattern, LEN, 0)
wr = SendWR(wr_id=7, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
            sg=[SGE(source.buf, LEN, source.lkey)], send_flags=e.IBV_SEND_SIGNALED)
wr.set_wr_rdma(target.rkey, target.buf)
a.post_send(wr)
end = time.time() + 60
while True:
    n, wcs = cq.poll(1)
    if n:
        break
    assert time.time() < end, "real WRITE did not complete"
assert wcs[0].status == e.IBV_WC_SUCCESS and wcs[0].wr_id == 7, (wcs[0].status, wcs[0].wr_id)
got = target.read(LEN, 0)
assert got == pattern, "real WRITE at the expected PSN did not land (PSN moved?): %r" % got[:16]
print("ok: real WRITE at the expected PSN landed")
attr, _ = b.query(e.IBV_QP_STATE)
assert attr.qp_state == e.IBV_QPS_RTS, attr.qp_state
print("ok: target QP in RTS")
EOF
expect "forged packet from an unprivileged local socket is dropped" \
    "$PY" /tmp/lo_inject.py "$g0"
sed 's/^/    /' /tmp/expect.out

if [ "$RXE_DRIVER" = rust ]; then
    [ "$before" != none ] || fail "no debugfs counter $counter"
    after=$(cat "$counter")
    [ "$after" -ge $((before + 3)) ] || fail "drop not counted: $counter $before -> $after"
    note "ok: drops counted ($counter $before -> $after)"
else
    note "C driver: no debugfs drop counter; the drop itself was checked above"
fi
expect "device can be removed" rdma link del rxe0
