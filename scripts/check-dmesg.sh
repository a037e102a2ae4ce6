#!/usr/bin/env bash
# Fail (and print the evidence) if a kernel log shows an oops, BUG, WARNING,
# KASAN or UBSAN report, lockdep splat, RCU stall, hung task, soft lockup or
# kmemleak finding.
#
#   check-dmesg.sh LOG
#
# Sourced, it only sets RXE_DMESG_PROBLEMS (an extended regex), which
# tests/vm/suite.sh uses to check the kernel log after every test.
RXE_DMESG_PROBLEMS='Oops|BUG:|kernel BUG|WARNING:|BUG: KASAN|UBSAN:|circular locking dependency|recursive locking detected|inconsistent lock state|INFO: trying to register non-static key|suspicious RCU usage|rcu_.*detected stall|self-detected stall|blocked for more than|soft lockup|hard LOCKUP|unreferenced object|Kernel panic|general protection fault|RIP: |DEBUG_LOCKS_WARN_ON|sleeping function called from invalid context|scheduling while atomic'
[ "${BASH_SOURCE[0]}" = "$0" ] || return 0
set -u
log=$1
if grep -nE "$RXE_DMESG_PROBLEMS" "$log" > /tmp/check-dmesg.$$; then
    echo "check-dmesg: problems in $log:"
    head -60 /tmp/check-dmesg.$$
    rm -f /tmp/check-dmesg.$$
    exit 1
fi
rm -f /tmp/check-dmesg.$$
exit 0
