"""On-demand paging (IBV_ACCESS_ON_DEMAND) through stock librxe (pyverbs),
between two devices in two namespaces, A the requester and B the
responder, on both drivers:

- query_device_ex reports the C driver's ODP capabilities (no implicit ODP);
- the whole data-integrity suite (tests/vm/integrity.py: SEND, WRITE,
  READ with and without immediate, many SGEs, atomics, requests in flight)
  with both ends' buffers registered on demand, no page touched first;
- the process's mappings change under registered regions and the data
  follows them: pages dropped with MADV_DONTNEED (new, zeroed pages) and
  written again by the CPU are what a remote READ returns, and a remote
  WRITE lands where the CPU then reads; write protection taken away and
  given back (mprotect) before atomics;
- a remote READ of a page the process unmapped fails with
  REM_ACCESS_ERR, as one of a range never mapped;
- implicit ODP (the whole address space) is refused.

    t_odp.py DRIVER DEV_A GID_INDEX_A DEV_B GID_INDEX_B"""
import ctypes
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import integrity  # noqa: E402
from pyverbs.mr import MR  # noqa: E402
from pyverbs.wr import SendWR, SGE  # noqa: E402
from pyverbs.pyverbs_error import PyverbsRDMAError  # noqa: E402
import pyverbs.enums as e  # noqa: E402

ODP = e.IBV_ACCESS_ON_DEMAND
PAGE = 4096
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
PROT_READ, PROT_WRITE = 1, 2
MAP_PRIVATE, MAP_ANONYMOUS = 0x02, 0x20
MADV_DONTNEED = 4


def anon(length):
    """A fresh private anonymous mapping of `length` bytes (no page yet)."""
    addr = libc.mmap(None, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
    assert addr not in (None, ctypes.c_void_p(-1).value), os.strerror(ctypes.get_errno())
    return addr


def ok(rc, what):
    assert rc == 0, "%s: %s" % (what, os.strerror(ctypes.get_errno()))


class OdpEnd(integrity.End):
    """integrity.End whose buffer is registered on demand, in memory of
    its own (so that the test can change its mappings)."""

    def __init__(self, dev, gid_index):
        super().__init__(dev, gid_index)
        self.mr.close()
        self.addr = anon(integrity.BUF)
        self.mr = MR(self.pd, integrity.BUF, integrity.ACCESS | ODP, address=self.addr)
        self.buf = self.mr.buf
        self.rkey = self.mr.rkey


def completion(end, what, deadline=60):
    stop = time.time() + deadline
    while True:
        n, wcs = end.cq.poll(1)
        if n:
            return wcs[0]
        assert time.time() < stop, "%s: no completion in %d s" % (what, deadline)


def rdma(a, opcode, rkey, addr, off, n, what, status=e.IBV_WC_SUCCESS):
    wr = SendWR(wr_id=9, opcode=opcode, num_sge=1, sg=[SGE(a.buf + off, n, a.mr.lkey)],
                send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_rdma(rkey, addr)
    a.qp.post_send(wr)
    wc = completion(a, what)
    assert wc.status == status, (what, "status", wc.status, "wanted", status)


def caps(ctx):
    odp = ctx.query_device_ex().odp_caps
    want_rc = (e.IBV_ODP_SUPPORT_SEND | e.IBV_ODP_SUPPORT_RECV | e.IBV_ODP_SUPPORT_WRITE
               | e.IBV_ODP_SUPPORT_READ | e.IBV_ODP_SUPPORT_ATOMIC | e.IBV_ODP_SUPPORT_SRQ_RECV)
    want_ud = e.IBV_ODP_SUPPORT_SEND | e.IBV_ODP_SUPPORT_RECV | e.IBV_ODP_SUPPORT_SRQ_RECV
    assert odp.general_caps & e.IBV_ODP_SUPPORT, odp.general_caps
    assert not odp.general_caps & e.IBV_ODP_SUPPORT_IMPLICIT, odp.general_caps
    assert odp.rc_odp_caps & want_rc == want_rc, hex(odp.rc_odp_caps)
    assert odp.ud_odp_caps & want_ud == want_ud, hex(odp.ud_odp_caps)
    return "odp caps general %#x rc %#x ud %#x" % (odp.general_caps, odp.rc_odp_caps,
                                                  odp.ud_odp_caps)


def mappings_change(a, b, rng):
    """The data follows the process's mappings (module docstring)."""
    n = 3 * PAGE + 100
    off = 5 * PAGE
    for rnd in range(3):
        first = bytes(rng.randrange(256) for _ in range(n))
        b.write(off, first)
        rdma(a, e.IBV_WR_RDMA_READ, b.rkey, b.buf + off, 0, n, "READ %d" % rnd)
        assert a.read(0, n) == first, "READ %d: first pattern" % rnd
        # B's pages go; the CPU then writes a second pattern into new ones.
        ok(libc.madvise(b.addr + off - off % PAGE, 4 * PAGE + PAGE, MADV_DONTNEED), "madvise")
        assert b.read(off, n) == bytes(n), "DONTNEED gives zeroed pages"
        second = bytes(rng.randrange(256) for _ in range(n))
        b.write(off, second)
        rdma(a, e.IBV_WR_RDMA_READ, b.rkey, b.buf + off, 0, n, "READ %d again" % rnd)
        assert a.read(0, n) == second, "READ after DONTNEED returned stale bytes"
        # A WRITE into pages that were dropped lands where the CPU reads.
        ok(libc.madvise(b.addr + off - off % PAGE, 4 * PAGE + PAGE, MADV_DONTNEED), "madvise")
        third = bytes(rng.randrange(256) for _ in range(n))
        a.write(0, third)
        rdma(a, e.IBV_WR_RDMA_WRITE, b.rkey, b.buf + off, 0, n, "WRITE %d" % rnd)
        assert b.read(off, n) == third, "WRITE after DONTNEED went elsewhere"
        # A's own (requester) pages dropped too: READ lands in new ones.
        ok(libc.madvise(a.addr, 4 * PAGE, MADV_DONTNEED), "madvise A")
        rdma(a, e.IBV_WR_RDMA_READ, b.rkey, b.buf + off, 0, n, "READ into dropped pages")
        assert a.read(0, n) == third, "READ into A's dropped pages"
    # Write protection away and back (an invalidation that keeps the
    # pages), then atomics on them.
    ok(libc.mprotect(b.addr, integrity.BUF, PROT_READ), "mprotect ro")
    ok(libc.mprotect(b.addr, integrity.BUF, PROT_READ | PROT_WRITE), "mprotect rw")
    integrity.atomics(a, b, rng)
    return "mappings: 3 rounds of DONTNEED under READ and WRITE, mprotect then atomics"


def unmapped(a, b):
    """A remote READ of a page B's process unmapped: REM_ACCESS_ERR. The
    QP pair is then in ERROR; this check comes last."""
    addr = anon(4 * PAGE)
    mr = MR(b.pd, 4 * PAGE, integrity.ACCESS | ODP, address=addr)
    ok(libc.munmap(addr + 2 * PAGE, PAGE), "munmap")
    rdma(a, e.IBV_WR_RDMA_READ, mr.rkey, addr, 0, 2 * PAGE, "READ of mapped pages")
    rdma(a, e.IBV_WR_RDMA_READ, mr.rkey, addr + 2 * PAGE, 0, 100, "READ of an unmapped page",
         status=e.IBV_WC_REM_ACCESS_ERR)
    return "unmapped page: REM_ACCESS_ERR"


def implicit(pd):
    try:
        MR(pd, 0, integrity.ACCESS | ODP, implicit=True)
    except PyverbsRDMAError as ex:
        return "implicit ODP refused (%s)" % os.strerror(ex.error_code)
    raise AssertionError("implicit ODP registered")


def main():
    """Each part on a pair of its own, so that one part's failure (the C
    driver's, see t_odp.sh) does not hide the others' results. One line
    per part; exit status 1 if any failed."""
    args = sys.argv[2:]
    rng = random.Random(int(os.environ.get("RXE_SEED", "6011")))
    ends = []

    def pair():
        a = OdpEnd(args[0], int(args[1]))
        b = OdpEnd(args[2], int(args[3]))
        ends.append((a, b))
        integrity.connect(a, b, rng)
        return a, b

    def integrity_part():
        a, b = pair()
        return "integrity, both ends on demand: " + integrity.run_checks(a, b, rng)

    parts = [
        ("caps", lambda: caps(pair()[0].ctx)),
        ("integrity", integrity_part),
        ("mappings", lambda: mappings_change(*pair(), rng)),
        ("implicit", lambda: implicit(pair()[0].pd)),
        ("unmapped", lambda: unmapped(*pair())),
    ]
    failed = 0
    for name, part in parts:
        try:
            print(part(), flush=True)
        except Exception as ex:  # reported, and the next part runs
            print("FAILED: %s: %s: %s" % (name, type(ex).__name__, ex), flush=True)
            failed = 1
    sys.stdout.flush()
    # The kernel, not pyverbs finalizers, cleans up (see t_mw.py's close).
    os._exit(failed)


main()
