"""Open a user context on rxe0 through librxe and allocate protection
domains (pyverbs, Debian's python3-pyverbs)."""
import sys
from pyverbs.device import Context
from pyverbs.pd import PD

ctx = Context(name="rxe0")
attr = ctx.query_device()
assert attr.vendor_id == 0xFFFFFF, attr.vendor_id
assert attr.phys_port_cnt == 1
port = ctx.query_port(1)
assert port.gid_tbl_len == 1024, port.gid_tbl_len
pds = [PD(ctx) for _ in range(64)]
for pd in pds:
    pd.close()
# A second context at the same time.
ctx2 = Context(name="rxe0")
pd2 = PD(ctx2)
pd2.close()
ctx2.close()
ctx.close()
print("ok: context, query_device, query_port, 64 PDs, two contexts")
