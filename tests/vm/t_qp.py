"""Queue pairs on rxe0 through librxe (pyverbs): creation with the
capacities rxe reports (rounded queues, SQ area shared by SGEs and inline
data), QP numbers, the RC state machine RESET -> INIT -> RTR -> RTS -> ERR
-> RESET with the attributes each step sets read back by query_qp, and the
attribute checks (bad transitions, MTU, timeout, rd_atomic, access). The
queried values are written to $RXE_LOGDIR/qp-$RXE_DRIVER.txt for
cmp_qp.sh. Traffic needs the data path and is not tested here."""
import errno
import os
import sys
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.qp import QP, QPCap, QPInitAttr, QPAttr
from pyverbs.addr import AHAttr, GlobalRoute
import pyverbs.enums as e
from verbs_util import Record, expect_errno, rxe_capacity





ctx = Context(name="rxe0")
pd = PD(ctx)
cq = CQ(ctx, 64)


def rc_qp(send_wr=10, recv_wr=20, send_sge=3, recv_sge=5, inline=100):
    cap = QPCap(max_send_wr=send_wr, max_recv_wr=recv_wr, max_send_sge=send_sge,
                max_recv_sge=recv_sge, max_inline_data=inline)
    return QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))


if len(sys.argv) > 1 and sys.argv[1] == "--exit-with-open-qps":
    qps = [rc_qp() for _ in range(4)]
    qps[0].to_init(QPAttr(qp_state=e.IBV_QPS_INIT))
    # os._exit: the kernel, not pyverbs finalizers (whose order at
    # interpreter shutdown is arbitrary and has segfaulted), cleans up.
    os._exit(0)

# Not before the exit above: that run must not truncate the record.
record = Record("qp")

# Capacities: queues rounded to 2^k - 1, the SQ data area is
# max(16 * sge, inline) and both caps are raised to fill it.
for send_wr, recv_wr, send_sge, recv_sge, inline in (
        (10, 20, 3, 5, 100), (1, 1, 1, 1, 0), (100, 1, 32, 32, 0), (64, 64, 2, 2, 512)):
    qp = rc_qp(send_wr, recv_wr, send_sge, recv_sge, inline)
    _, init = qp.query(e.IBV_QP_CAP)
    area = max(16 * send_sge, inline)
    got = (init.max_send_wr, init.max_recv_wr, init.max_send_sge, init.max_recv_sge,
           init.max_inline_data)
    want = (rxe_capacity(send_wr), rxe_capacity(recv_wr), area // 16,
            recv_sge, area)
    assert got == want, (got, want)
    record("caps %s" % ((send_wr, recv_wr, send_sge, recv_sge, inline),), got)
    qp.close()

for bad in (dict(send_wr=(1 << 20) + 1), dict(recv_wr=(1 << 20) + 1), dict(send_sge=33),
            dict(recv_sge=33), dict(inline=513)):
    expect_errno("create with %s" % bad, errno.EINVAL, lambda: rc_qp(**bad))

# QP numbers: distinct, at least 16.
qps = [rc_qp() for _ in range(8)]
nums = [q.qp_num for q in qps]
assert len(set(nums)) == 8 and min(nums) >= 16, nums
for q in qps:
    q.close()


# UC QPs: both drivers create them (t_uc.sh runs traffic over them).
def uc_qp():
    cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)
    return QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UC, scq=cq, rcq=cq, cap=cap))


uc_qp().close()

# The RC state machine, with the attributes of each step read back.
qp = rc_qp()
peer = rc_qp()
attr, _ = qp.query(e.IBV_QP_STATE | e.IBV_QP_PATH_MTU)
record("new qp", (attr.qp_state, attr.path_mtu))
assert attr.qp_state == e.IBV_QPS_RESET

to_rtr_direct = QPAttr(qp_state=e.IBV_QPS_RTR)
expect_errno("RESET -> RTR", errno.EINVAL, lambda: qp.modify(to_rtr_direct, e.IBV_QP_STATE))

init_attr = QPAttr(qp_state=e.IBV_QPS_INIT)
init_attr.pkey_index = 0
init_attr.port_num = 1
init_attr.qp_access_flags = e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
bad_access = QPAttr(qp_state=e.IBV_QPS_INIT)
bad_access.pkey_index = 0
bad_access.port_num = 1
bad_access.qp_access_flags = e.IBV_ACCESS_ZERO_BASED
init_mask = e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS
expect_errno("INIT with zero-based access", errno.EINVAL, lambda: qp.modify(bad_access, init_mask))
bad_port = QPAttr(qp_state=e.IBV_QPS_INIT)
bad_port.port_num = 2
expect_errno("INIT on port 2", errno.EINVAL, lambda: qp.modify(bad_port, init_mask))
qp.modify(init_attr, init_mask)
attr, _ = qp.query(e.IBV_QP_STATE | e.IBV_QP_ACCESS_FLAGS | e.IBV_QP_PORT)
record("init", (attr.qp_state, attr.qp_access_flags, attr.port_num, attr.pkey_index))
assert attr.qp_state == e.IBV_QPS_INIT

gid = ctx.query_gid(port_num=1, index=0)
rtr = QPAttr(qp_state=e.IBV_QPS_RTR)
rtr.path_mtu = e.IBV_MTU_1024
rtr.dest_qp_num = peer.qp_num
rtr.rq_psn = 0x123456
rtr.max_dest_rd_atomic = 5
rtr.min_rnr_timer = 12
rtr.ah_attr = AHAttr(is_global=1, port_num=1,
                     gr=GlobalRoute(dgid=gid, sgid_index=0, hop_limit=64, traffic_class=0x20,
                                    flow_label=0x1234))
rtr_mask = (e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN
            | e.IBV_QP_RQ_PSN | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
expect_errno("RTR without the required attributes", errno.EINVAL,
             lambda: qp.modify(rtr, e.IBV_QP_STATE | e.IBV_QP_PATH_MTU))
rtr.path_mtu = 6
expect_errno("path MTU beyond 4096", errno.EINVAL, lambda: qp.modify(rtr, rtr_mask))
rtr.path_mtu = e.IBV_MTU_1024
qp.modify(rtr, rtr_mask)
attr, _ = qp.query(rtr_mask)
record("rtr", (attr.qp_state, attr.path_mtu, attr.dest_qp_num == peer.qp_num, hex(attr.rq_psn),
               attr.max_dest_rd_atomic, attr.min_rnr_timer))
record("rtr av", (attr.ah_attr.sgid_index, attr.ah_attr.hop_limit, attr.ah_attr.traffic_class,
                  hex(attr.ah_attr.flow_label), attr.ah_attr.is_global, attr.ah_attr.port_num,
                  str(attr.ah_attr.dgid) == str(gid)))
assert attr.qp_state == e.IBV_QPS_RTR and attr.path_mtu == e.IBV_MTU_1024
assert attr.rq_psn == 0x123456 and attr.max_dest_rd_atomic == 8

rts = QPAttr(qp_state=e.IBV_QPS_RTS)
rts.timeout = 32
rts.retry_cnt = 7
rts.rnr_retry = 7
rts.sq_psn = 0xabcdef
rts.max_rd_atomic = 3
rts_mask = (e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY
            | e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)
expect_errno("timeout 32", errno.EINVAL, lambda: qp.modify(rts, rts_mask))
rts.timeout = 14
rts.max_rd_atomic = 129
expect_errno("max_rd_atomic 129", errno.EINVAL, lambda: qp.modify(rts, rts_mask))
rts.max_rd_atomic = 3
qp.modify(rts, rts_mask)
attr, _ = qp.query(rts_mask)
record("rts", (attr.qp_state, attr.timeout, attr.retry_cnt, attr.rnr_retry, hex(attr.sq_psn),
               attr.max_rd_atomic))
assert attr.qp_state == e.IBV_QPS_RTS and attr.max_rd_atomic == 4 and attr.sq_psn == 0xabcdef

err = QPAttr(qp_state=e.IBV_QPS_ERR)
qp.modify(err, e.IBV_QP_STATE)
assert qp.query(e.IBV_QP_STATE)[0].qp_state == e.IBV_QPS_ERR
expect_errno("ERR -> RTS", errno.EINVAL, lambda: qp.modify(QPAttr(qp_state=e.IBV_QPS_RTS), e.IBV_QP_STATE))
qp.modify(QPAttr(qp_state=e.IBV_QPS_RESET), e.IBV_QP_STATE)
qp.modify(init_attr, init_mask)
record("after reset", qp.query(e.IBV_QP_STATE)[0].qp_state)
qp.close()
peer.close()
print("queue pairs: ok")
