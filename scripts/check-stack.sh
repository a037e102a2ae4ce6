#!/usr/bin/env bash
# List the functions of a module whose stack frame is at least LIMIT bytes
# (default 4096), largest first, from the `sub $N, %rsp` of their prologue.
# Exits 1 if there is one. Rust has no -Wframe-larger-than: a value built
# on the stack before it is boxed can take kilobytes. x86_64 kernel stacks
# are 16 KiB, 32 KiB with KASAN, so the test kernel hides what overflows a
# production one (RcState::new's 17 KB frame double-faulted the benchmark
# kernel at the first RC QP).
#
#   scripts/check-stack.sh [MODULE.ko] [LIMIT]   (default rdma_rxe.ko)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
ko=${1:-$here/rdma_rxe.ko}
limit=${2:-4096}
/usr/lib/llvm-19/bin/llvm-objdump -d --no-show-raw-insn "$ko" | python3 -c '
import re, sys
limit = int(sys.argv[1])
fn, frames = None, {}
for line in sys.stdin:
    m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
    if m:
        fn = m.group(1)
        continue
    m = re.search(r"subq\s+\$0x([0-9a-f]+),\s*%rsp", line)
    if m and fn:
        frames[fn] = max(int(m.group(1), 16), frames.get(fn, 0))
big = sorted(((v, f) for f, v in frames.items() if v >= limit), reverse=True)
for v, f in big:
    print(f"{v:7d} {f}")
sys.exit(1 if big else 0)
' "$limit"
