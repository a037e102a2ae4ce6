#!/usr/bin/env bash
# Fail (and print the evidence) if a kernel log shows an oops, BUG, WARNING,
# KASAN or UBSAN report, lockdep splat, RCU stall, hung task, soft lockup or
# kmemleak finding.
set -u
log=$1
pattern='Oops|BUG:|kernel BUG|WARNING:|BUG: KASAN|UBSAN:|circular locking dependency|recursive locking detected|inconsistent lock state|INFO: trying to register non-static key|suspicious RCU usage|rcu_.*detected stall|self-detected stall|blocked for more than|soft lockup|hard LOCKUP|unreferenced object|Kernel panic|general protection fault|RIP: |DEBUG_LOCKS_WARN_ON|sleeping function called from invalid context|scheduling while atomic'
if grep -nE "$pattern" "$log" > /tmp/check-dmesg.$$; then
    echo "check-dmesg: problems in $log:"
    head -60 /tmp/check-dmesg.$$
    rm -f /tmp/check-dmesg.$$
    exit 1
fi
rm -f /tmp/check-dmesg.$$
exit 0
