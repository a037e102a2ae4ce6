# Destroying a QP whose packets the stack holds (issue 10, item 8). rxe0
# (veth-a, here) and rxe1 (veth-b, namespace "peer") carry an RC
# connection; after one WRITE completes, the peer stops answering ARP (its
# address is removed), veth-a's neighbour entry is flushed and its ARP
# retransmit time set to 100 s: the next packets wait in the neighbour's
# queue (which, unlike netem or tun, does not orphan them: their
# destructor still points into the driver) for minutes. Eight WRITEs are
# posted; destroying the QP must return within a bounded time (the driver
# waits a moment, then lets the packets go: they point at a
# reference-counted link, not at the QP), and so must `rdma link del`.
# While the packets are held the module refuses to unload (each holds a
# module reference, so that its destructor's code stays), in bounded time;
# once veth-a goes down its neighbour queue is purged, the packets are
# freed (their destructors run after the QP is gone: KASAN would see a use
# after free) and the module unloads.
#
# The C driver is not run: its destroy waits 50 s for the packets, then
# WARNs (which fails the kernel-log check of the whole run) and frees the
# QP, whose memory the packets' destructor then writes.
. "$(dirname "$0")/lib.sh"

if [ "$RXE_DRIVER" = c ]; then
    note "C driver: known failure, not run: destroy_qp waits 50 s for the held packets, then WARNs and frees the QP their destructor still uses"
    exit 0
fi
need_pyverbs
rxe_load || fail "modprobe"
two_namespaces || fail "two-namespace set-up"

cat > /tmp/destroy_wait.py <<'EOF'
import subprocess, sys, time
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.qp import QP, QPCap, QPInitAttr, QPAttr
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.wr import SendWR, SGE
import pyverbs.enums as e

ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE


class End:
    def __init__(self, dev, gid_index):
        self.ctx = Context(name=dev)
        self.gid_index = gid_index
        self.gid = self.ctx.query_gid(port_num=1, index=gid_index)
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 32)
        cap = QPCap(max_send_wr=16, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)
        self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=cap))
        self.mr = MR(self.pd, 65536, ACCESS)

    def connect(self, peer, psn):
        a = QPAttr(qp_state=e.IBV_QPS_INIT)
        a.pkey_index = 0
        a.port_num = 1
        a.qp_access_flags = ACCESS
        self.qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
        a = QPAttr(qp_state=e.IBV_QPS_RTR)
        a.path_mtu = e.IBV_MTU_1024
        a.dest_qp_num = peer.qp.qp_num
        a.rq_psn = psn
        a.max_dest_rd_atomic = 1
        a.min_rnr_timer = 12
        a.ah_attr = AHAttr(is_global=1, port_num=1,
                           gr=GlobalRoute(dgid=peer.gid, sgid_index=self.gid_index, hop_limit=64))
        self.qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN
                       | e.IBV_QP_RQ_PSN | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
        a = QPAttr(qp_state=e.IBV_QPS_RTS)
        a.timeout = 14
        a.retry_cnt = 7
        a.rnr_retry = 7
        a.sq_psn = psn
        a.max_rd_atomic = 1
        self.qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT
                       | e.IBV_QP_RNR_RETRY | e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)

    def write(self, peer, wr_id):
        wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                    sg=[SGE(self.mr.buf, 4096, self.mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_rdma(peer.mr.rkey, peer.mr.buf)
        self.qp.post_send(wr)


a, b = End("rxe0", int(sys.argv[1])), End("rxe1", int(sys.argv[2]))
a.connect(b, 100)
b.connect(a, 100)
a.write(b, 1)
end = time.time() + 60
while True:
    n, wcs = a.cq.poll(1)
    if n:
        break
    assert time.time() < end, "first WRITE did not complete"
assert wcs[0].status == e.IBV_WC_SUCCESS, wcs[0].status
print("first WRITE completed")
for cmd in (["sysctl", "-qw", "net.ipv4.neigh.veth-a.retrans_time_ms=100000",
             "net.ipv4.neigh.veth-a.mcast_solicit=3", "net.ipv4.neigh.veth-a.ucast_solicit=3",
             "net.ipv4.neigh.veth-a.app_solicit=0"],
            ["ip", "-n", "peer", "addr", "del", "10.0.0.2/24", "dev", "veth-b"],
            ["ip", "neigh", "flush", "dev", "veth-a"]):
    subprocess.run(cmd, check=True)
for i in range(8):
    a.write(b, 10 + i)
time.sleep(2)
print(subprocess.run(["ip", "neigh", "show", "dev", "veth-a"], capture_output=True, text=True).stdout.strip())
print("8 WRITEs posted, their packets wait for ARP", flush=True)
start = time.monotonic()
a.qp.close()
took = time.monotonic() - start
print("destroy_qp took %.1f s" % took, flush=True)
assert took < 30, "destroy_qp took %.1f s" % took
for end_ in (a, b):
    end_.ctx.close()
print("contexts closed", flush=True)
EOF

rm -f /tmp/destroy_wait.rc
( /usr/bin/python3 /tmp/destroy_wait.py "$g0" "$g1" > /tmp/destroy_wait.out 2>&1
  echo $? > /tmp/destroy_wait.rc ) &
py=$!
# Only the destroy is bounded, not Python's start-up and the set-up before
# it (minutes when the machine is busy, under emulation). A destroy that
# waits for the packets without bound never returns (D state, SIGKILL does
# not help): then free the packets, so that the test fails instead of
# hanging the suite.
posted() { grep -q "WRITEs posted" /tmp/destroy_wait.out || test -s /tmp/destroy_wait.rc; }
if ! wait_for 900 posted; then
    cat /tmp/destroy_wait.out >&2
    ip link set veth-a down
    kill $py 2>/dev/null
    fail "the set-up before the destroy did not finish in 900 s"
fi
if ! wait_for 90 test -s /tmp/destroy_wait.rc; then
    cat /tmp/destroy_wait.out >&2
    ip link set veth-a down
    wait $py
    fail "destroy_qp did not return within 90 s while the neighbour queue held its packets"
fi
wait $py
rc=$(cat /tmp/destroy_wait.rc)
sed 's/^/    /' /tmp/destroy_wait.out
[ $rc = 0 ] || fail "destroy test process failed ($rc)"
note "ok: destroy_qp returned while the neighbour queue held the packets"

start=$SECONDS
expect "rdma link del rxe0 returns while packets are held" timeout 60 rdma link del rxe0
expect "rdma link del rxe1" timeout 60 ip netns exec peer rdma link del rxe1
note "link del took $((SECONDS - start)) s"
start=$SECONDS
if timeout 60 modprobe -r rdma_rxe 2>/tmp/rmmod.err; then
    note "module unloaded at once (no packet was left held)"
else
    [ $((SECONDS - start)) -lt 60 ] || fail "modprobe -r did not return within 60 s"
    note "ok: module refused to unload while the neighbour queue holds its packets ($(head -1 /tmp/rmmod.err))"
fi
expect "veth-a down (its neighbour queue is purged)" ip link set veth-a down
sleep 1
expect "module unloads once the packets are freed" wait_for 30 sh -c \
    "modprobe -r rdma_rxe 2>/dev/null; ! lsmod | grep -q '^rdma_rxe '"
two_namespaces_down
