#!/usr/bin/env bash
# Fail (and print the evidence) if a kernel log shows an oops, BUG, WARNING,
# KASAN or UBSAN report, lockdep splat, RCU stall, hung task, soft lockup or
# kmemleak finding.
set -u
log=$1
pattern='Oops|BUG:|BUG |kernel BUG|WARNING:|KASAN|UBSAN|possible circular locking|possible recursive locking|inconsistent lock state|lockdep|suspicious RCU usage|rcu_.*stall|hung_task|blocked for more than|soft lockup|unreferenced object|Kernel panic|general protection fault|RIP: '
if grep -nE "$pattern" "$log" | grep -vE 'kmemleak: Kernel memory leak detector|Lockdep is disabled|lockdep: .*self-test' > /tmp/check-dmesg.$$; then
    echo "check-dmesg: problems in $log:"
    head -60 /tmp/check-dmesg.$$
    rm -f /tmp/check-dmesg.$$
    exit 1
fi
rm -f /tmp/check-dmesg.$$
exit 0
