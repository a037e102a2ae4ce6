"""A process that exits while packets lent from its pages are on the way.

    zero_copy_exit.py DEV_A GID_INDEX_A DEV_B GID_INDEX_B

Connects a QP of DEV_A to one of DEV_B (one process, buffers of 1 MiB,
as tests/vm/integrity.py), fills both buffers, has A WRITE the first
half of its buffer to B and B READ the second half of A's (A's READ
replies), and exits at once, polling nothing: with a netem delay on A's
side of the link, the packets, whose payload is the process's own pages
(zero-copy transmit), are still queued when the process's memory goes
(QPs destroyed, regions deregistered, pages unmapped). Each packet holds
its own reference on its page: the pages are freed only with the
packets, and the receiver reads live memory (KASAN, in the test kernel,
reports otherwise; the suite fails a test that leaves such a report)."""
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from integrity import BUF, End, connect  # noqa: E402
from pyverbs.wr import SendWR  # noqa: E402
import pyverbs.enums as e  # noqa: E402


def main():
    dev_a, gid_a, dev_b, gid_b = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    rng = random.Random(4791)
    a, b = End(dev_a, gid_a), End(dev_b, gid_b)
    connect(a, b, rng)
    half = BUF // 2
    a.write(0, rng.randbytes(BUF))
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=a.sges([(0, half)]),
                send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_rdma(b.rkey, b.buf)
    a.qp.post_send(wr)
    wr = SendWR(wr_id=2, opcode=e.IBV_WR_RDMA_READ, num_sge=1, sg=b.sges([(half, half)]),
                send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_rdma(a.rkey, a.buf + half)
    b.qp.post_send(wr)
    # Long enough for B's READ request to reach A (B's side of the link
    # has no delay) and A's replies to be queued behind its WRITE's.
    time.sleep(0.5)
    print("posted", flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
