"""Address handles on rxe0 through librxe (pyverbs): creation for the
port's RoCE v2 GIDs (IPv6 link-local, IPv4-mapped), many at once, an
invalid source GID index, and a process that exits with AHs open."""
import errno
import os
import sys
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.addr import AH, AHAttr, GlobalRoute
from pyverbs.pyverbs_error import PyverbsRDMAError

ctx = Context(name="rxe0")
pd = PD(ctx)


def gid_indices():
    """Indices of the populated GIDs of port 1 (sysfs: empty ones read as
    all zeros or fail)."""
    found = []
    for i in range(16):
        try:
            with open("/sys/class/infiniband/rxe0/ports/1/gids/%d" % i) as f:
                g = f.read().strip()
        except OSError:
            continue
        if g and g.replace("0", "").replace(":", ""):
            found.append(i)
    return found


def ah_for(index, dgid=None):
    gid = ctx.query_gid(port_num=1, index=index)
    gr = GlobalRoute(dgid=dgid or gid, sgid_index=index, hop_limit=64)
    return AH(pd, attr=AHAttr(is_global=1, port_num=1, gr=gr))


indices = gid_indices()
assert 0 in indices and len(indices) >= 2, indices  # link-local + 10.0.0.1

if len(sys.argv) > 1 and sys.argv[1] == "--exit-with-open-ahs":
    ahs = [ah_for(i) for i in indices for _ in range(3)]
    # os._exit: the kernel, not pyverbs finalizers (whose order at
    # interpreter shutdown is arbitrary and has segfaulted), cleans up.
    os._exit(0)

ahs = [ah_for(i) for i in indices]
many = [ah_for(indices[j % len(indices)]) for j in range(500)]
for ah in many:
    ah.close()
for ah in ahs:
    ah.close()

try:
    ah_for(indices[-1] + 5)
except PyverbsRDMAError as err:
    assert err.error_code in (errno.EINVAL, errno.ENOENT, errno.ENODATA), err.error_code
else:
    raise AssertionError("AH with an empty source GID succeeded")
print("address handles: ok (%d GIDs)" % len(indices))
