# A namespace that holds an rxe device goes away while a QP is open on the
# device (issue 10, item 10): the device must not touch the dead namespace
# (its sockets, its per-namespace storage) when it is finally released;
# KASAN reports it if it does (scripts/check-dmesg.sh). Two orders:
#   1. the QP's process lives in the namespace: `ip netns del`, then the
#      process exits with its objects open (the namespace dies after it);
#   2. the QP's process lives outside (rdma devices are shared across
#      namespaces): the namespace dies at once, the device is unregistered
#      under the open QP, then the process exits.
# Each time the device must go and the module must unload at the end.
. "$(dirname "$0")/lib.sh"

need_pyverbs
rxe_load || fail "modprobe"

cat > /tmp/netns_hold.py <<'EOF'
import os, sys, time
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.qp import QP, QPCap, QPInitAttr, QPAttr
import pyverbs.enums as e

ctx = Context(name="rxe0")
pd = PD(ctx)
cq = CQ(ctx, 16)
mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq,
                       cap=QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)))
a = QPAttr(qp_state=e.IBV_QPS_INIT)
a.pkey_index = 0
a.port_num = 1
a.qp_access_flags = e.IBV_ACCESS_LOCAL_WRITE
qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
print("holding QP", qp.qp_num, flush=True)
open("/tmp/netns_ready", "w").close()
end = time.time() + 180
while not os.path.exists("/tmp/netns_go") and time.time() < end:
    time.sleep(0.2)
# Exit with every object open: the kernel cleans up.
os._exit(0)
EOF

# ns_device: namespace ns1 with veth-a (10.0.0.1) and rxe0 on it; veth-b
# (10.0.0.2) here.
ns_device() {
    ip netns add ns1 || return 1
    ip link add veth-a address 02:00:00:00:00:0a type veth peer name veth-b address 02:00:00:00:00:0b || return 1
    ip link set veth-a netns ns1
    ip -n ns1 addr add 10.0.0.1/24 dev veth-a
    ip addr add 10.0.0.2/24 dev veth-b
    ip -n ns1 link set lo up
    ip -n ns1 link set veth-a up
    ip link set veth-b up
    ip netns exec ns1 rdma link add rxe0 type rxe netdev veth-a || return 1
    wait_for 20 ip netns exec ns1 sh -c "rdma link show rxe0/1 | grep -q 'state ACTIVE '"
}

# hold_qp [ns1]: starts the QP holder (in ns1 if asked), waits until ready.
hold_qp() {
    rm -f /tmp/netns_ready /tmp/netns_go /tmp/netns_hold.rc
    local in=()
    [ "${1:-}" != ns1 ] || in=(ip netns exec ns1)
    ( "${in[@]}" /usr/bin/python3 /tmp/netns_hold.py > /tmp/netns_hold.out 2>&1
      echo $? > /tmp/netns_hold.rc ) &
    holder=$!
    # Python's start-up alone takes 15 s or more in a busy guest under TCG.
    wait_for 600 sh -c "test -e /tmp/netns_ready || test -s /tmp/netns_hold.rc"
    test -e /tmp/netns_ready || { cat /tmp/netns_hold.out >&2; fail "QP holder did not start"; }
    note "$(cat /tmp/netns_hold.out)"
}

release_qp() {
    touch /tmp/netns_go
    wait_for 60 test -s /tmp/netns_hold.rc || fail "QP holder did not exit"
    wait $holder
    [ "$(cat /tmp/netns_hold.rc)" = 0 ] || fail "QP holder failed"
}

device_gone() {
    wait_for 60 sh -c "! rdma link show rxe0/1 >/dev/null 2>&1 && ! ip link show veth-b >/dev/null 2>&1"
}

# 1.
ns_device || fail "namespace with rxe0"
hold_qp ns1
expect "delete ns1 while its process holds a QP" ip netns del ns1
release_qp
expect "1: device and veth gone once the namespace dies" device_gone

# 2.
ns_device || fail "namespace with rxe0"
hold_qp
expect "delete ns1 while a process outside holds a QP on its device" ip netns del ns1
expect "2: device and veth gone while the QP is open" device_gone
release_qp

expect "module unloads" wait_for 30 sh -c "modprobe -r rdma_rxe 2>/dev/null; ! lsmod | grep -q '^rdma_rxe '"
