"""Memory regions on rxe0 through librxe (pyverbs, Debian's python3-pyverbs).
Without a QP there is no traffic: what is checked is registration, the keys
(lkey == rkey, index << 8 | key byte with the index in rxe's MR range, all
distinct), the access rules, and pinning (read-only or unmapped memory)."""
import errno
import os
import sys
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.mr import MR
import pyverbs.mem_alloc as mem
import pyverbs.enums as e
from verbs_util import expect_errno

LW = e.IBV_ACCESS_LOCAL_WRITE
RW = e.IBV_ACCESS_REMOTE_WRITE
RR = e.IBV_ACCESS_REMOTE_READ
RA = e.IBV_ACCESS_REMOTE_ATOMIC
MR_INDEX_MAX = (1 << 20) >> 1
PAGE = 4096



def check_keys(mr, keys):
    assert mr.lkey == mr.rkey, (hex(mr.lkey), hex(mr.rkey))
    index = mr.lkey >> 8
    assert 1 <= index <= MR_INDEX_MAX, hex(mr.lkey)
    assert mr.lkey not in keys, hex(mr.lkey)
    keys.add(mr.lkey)


ctx = Context(name="rxe0")
attr = ctx.query_device()
assert attr.max_mr == MR_INDEX_MAX - 1, attr.max_mr
pd = PD(ctx)

if len(sys.argv) > 1 and sys.argv[1] == "--exit-with-open-mrs":
    mrs = [MR(pd, n, LW | RW | RR) for n in (1, PAGE, 3 * PAGE + 5, 1 << 20)]
    # os._exit: the kernel, not pyverbs finalizers (whose order at
    # interpreter shutdown is arbitrary and has segfaulted), cleans up.
    os._exit(0)

keys = set()
mrs = []
# Sizes, allocated by pyverbs (page aligned), with every access combination
# the spec allows.
for size in (1, 100, PAGE, PAGE + 1, 1 << 20, 5 << 20):
    for access in (0, LW, RR, LW | RW, LW | RW | RR, LW | RW | RR | RA):
        mr = MR(pd, size, access)
        check_keys(mr, keys)
        mr.write(b"x" * min(size, 64), min(size, 64))
        assert mr.read(min(size, 64), 0) == b"x" * min(size, 64)
        mrs.append(mr)
for mr in mrs:
    mr.close()
mrs.clear()

# Unaligned starts and lengths that end mid-page, on our own buffer.
buf = mem.malloc(8 * PAGE)
for off, length in ((1, 10), (PAGE - 1, 2), (123, 3 * PAGE), (PAGE, PAGE)):
    mr = MR(pd, length, LW | RR, address=buf + off)
    check_keys(mr, keys)
    mrs.append(mr)
for mr in mrs:
    mr.close()
mrs.clear()

# Remote write or atomic needs local write (IBTA o10-37.2.30).
expect_errno("remote write without local write", errno.EINVAL, lambda: MR(pd, PAGE, RW))
expect_errno("remote atomic without local write", errno.EINVAL, lambda: MR(pd, PAGE, RA | RR))

# Read-only memory: fine for remote read, refused for any write access.
ro = mem.mmap(length=2 * PAGE, prot=mem.PROT_READ_,
              flags=mem.MAP_PRIVATE_ | mem.MAP_ANONYMOUS_ | mem.MAP_POPULATE_)
mr = MR(pd, 2 * PAGE, RR, address=ro)
check_keys(mr, keys)
mr.close()
expect_errno("local write on read-only memory", errno.EFAULT,
             lambda: MR(pd, 2 * PAGE, LW, address=ro))

# Unmapped memory.
gone = mem.mmap(length=4 * PAGE, prot=mem.PROT_READ_ | mem.PROT_WRITE_,
                flags=mem.MAP_PRIVATE_ | mem.MAP_ANONYMOUS_)
mem.munmap(gone, 4 * PAGE)
expect_errno("unmapped memory", errno.EFAULT, lambda: MR(pd, 4 * PAGE, LW, address=gone))

# Many regions at once, then all gone; indices are not reused at once, so
# a fresh registration does not get a key seen before.
many = [MR(pd, 64, LW) for _ in range(2000)]
for mr in many:
    check_keys(mr, keys)
for mr in many:
    mr.close()
mr = MR(pd, 64, LW)
check_keys(mr, keys)
mr.close()

# A PD with a registered MR cannot be freed first (ib_core keeps count).
pd2 = PD(ctx)
mr = MR(pd2, 64, LW)
mr.close()
pd2.close()
print(f"memory regions: ok, {len(keys)} distinct keys")
