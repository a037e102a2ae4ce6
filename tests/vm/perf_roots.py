#!/usr/bin/env python3
"""Where a code path spends its time: reads `perf script -F comm,tid,ip,sym[,symoff]`
output of a call-graph profile (perf record -g) on stdin and, for each ROOT
(a substring of a function name, e.g. ib_uverbs_post_send for the doorbell
path or udp_queue_rcv_one_skb for the receive path), prints the samples
whose stack passes through it: their leaf symbols (self time within the
path), the root's direct callees, every function under it by inclusive time (the
share of the path's samples whose stack holds it below the root: where a
path's time goes, function by function), its callers (for a lock's slow
path: whose lock it is), and the callers of memcpy/memset.

    perf script ... | perf_roots.py ROOT...
"""
import collections
import re
import sys

FRAME = re.compile(r"\s+[0-9a-f]+\s+(\S+)")


def stacks(lines):
    """Yields each sample's frames, leaf first, offsets stripped."""
    stack = []
    for line in lines:
        if line[:1] in ("\t", " ") and line.strip():
            m = FRAME.match(line)
            if m:
                stack.append(re.sub(r"\+0x[0-9a-f]+$", "", m.group(1)))
            continue
        if stack:
            yield stack
        stack = []
    if stack:
        yield stack


def report(root, samples, total, out):
    hits = [s for s in samples if any(root in f for f in s)]
    n = max(len(hits), 1)
    leaf, callee, inclusive, caller, copies = (collections.Counter() for _ in range(5))
    for s in hits:
        leaf[s[0]] += 1
        top = max(i for i, f in enumerate(s) if root in f)
        if top > 0:
            callee[s[top - 1]] += 1
        for sym in set(s[:top]):
            inclusive[sym] += 1
        low = min(i for i, f in enumerate(s) if root in f)
        caller[" <- ".join(f[-50:] for f in s[low + 1:low + 4])] += 1
        if "memcpy" in s[0] or "memset" in s[0]:
            copies[" <- ".join(f[-60:] for f in s[:4])] += 1
    out.write(f"== {root}: {len(hits)} of {total} samples\n-- leaf symbols\n")
    for sym, c in leaf.most_common(30):
        out.write(f"{100 * c / n:6.1f}% {sym[:110]}\n")
    out.write("-- direct callees of the root\n")
    for sym, c in callee.most_common(15):
        out.write(f"{100 * c / n:6.1f}% {sym[:110]}\n")
    out.write("-- inclusive: samples whose stack holds the function below the root\n")
    for sym, c in inclusive.most_common(40):
        out.write(f"{100 * c / n:6.1f}% {sym[:110]}\n")
    out.write("-- callers of the root (three frames up)\n")
    for chain, c in caller.most_common(12):
        out.write(f"{100 * c / n:6.1f}% {chain}\n")
    out.write("-- memcpy/memset and their callers\n")
    for chain, c in copies.most_common(10):
        out.write(f"{100 * c / n:6.1f}% {chain}\n")


def main():
    samples = list(stacks(sys.stdin))
    for root in sys.argv[1:]:
        report(root, samples, len(samples), sys.stdout)


if __name__ == "__main__":
    main()
