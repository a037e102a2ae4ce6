#!/bin/bash
# The guest side of the VM test run: every test in tests/vm/t_*.sh and the
# kernel's tools/testing/selftests/rdma scripts, first against the in-tree C
# rdma_rxe (to show each test is right), then against ours; then the
# comparisons between the two. Ends with "N passed, N failed".
#
#   suite.sh [PATTERN]     run only tests whose name matches PATTERN
set -u
pattern=${1:-.}
here=$(cd "$(dirname "$0")" && pwd)
export RXE_REPO RXE_LOGDIR
passed=0 failed=0 skipped=0
failures=()

mount -t debugfs none /sys/kernel/debug 2>/dev/null || true
# kmemleak's periodic scan takes most of a minute under TCG every ten
# minutes; t_cycles.sh scans explicitly when it needs to.
echo scan=off > /sys/kernel/debug/kmemleak 2>/dev/null || true

record() { # name status [duration]
    case $2 in
        0) passed=$((passed + 1)); echo "PASS $1 ${3:-}" ;;
        4) skipped=$((skipped + 1)); echo "SKIP $1 ${3:-}" ;;
        *) failed=$((failed + 1)); failures+=("$1"); echo "FAIL $1 ${3:-}" ;;
    esac
}

run_one() { # name command...
    local name=$1; shift
    local log="$RXE_LOGDIR/tests/$name.log"
    mkdir -p "$(dirname "$log")"
    echo "== $name"
    local start=$SECONDS
    # timeout(1) signals the test's whole process group, background
    # processes it left (a server) included.
    timeout --kill-after=10 "${test_timeout:-${RXE_TEST_TIMEOUT:-1800}}" "$@" > "$log" 2>&1
    local rc=$?
    [ $rc = 0 ] || sed 's/^/    /' "$log" | tail -25
    record "$name" $rc "$((SECONDS - start)) s"
}

selftests_dir=${RXE_KDIR:-}/tools/testing/selftests/rdma
# rxe_sent_rcvd_bytes.sh compares the PMA port counters around an rping;
# rxe has no process_mad, so neither driver has ports/1/counters/ and the
# comparison is of two empty readings: it checks that a link on a tun
# device (no MAC address) comes up, carries an rping (rdma_cm over the
# GSI QP, then RC) and goes away.
selftests=(rxe_socket_with_netns.sh rxe_test_NETDEV_UNREGISTER.sh rxe_ipv6.sh rxe_sent_rcvd_bytes.sh)
# rxe_netns_names.sh takes about half an hour per driver under TCG with this
# debug kernel (five minutes per subtest); run it with RXE_SLOW_TESTS=1.
[ -z "${RXE_SLOW_TESTS:-}" ] || selftests+=(rxe_netns_names.sh)

for driver in c rust; do
    export RXE_DRIVER=$driver
    # shellcheck source=lib.sh
    ( . "$here/lib.sh"; rxe_unload; rxe_use_driver "$driver" )
    run_one "$driver/driver-selected" bash -c ". '$here/lib.sh'; rxe_driver_is $driver"
    for t in "$here"/t_*.sh; do
        name=$driver/$(basename "$t" .sh)
        [[ $name =~ $pattern ]] || continue
        run_one "$name" bash "$t"
        ( . "$here/lib.sh"; rxe_unload ) >/dev/null 2>&1
        ip -all netns delete 2>/dev/null
        ip link del veth-a 2>/dev/null
    done
    for s in "${selftests[@]}"; do
        name=$driver/selftest/$s
        [[ $name =~ $pattern ]] || continue
        test_timeout=
        # rxe_sent_rcvd_bytes.sh's rping client never exits if its
        # connection fails: bound it, so that this fails instead of hanging.
        [ "$s" != rxe_sent_rcvd_bytes.sh ] || test_timeout=300
        if [ -x "$selftests_dir/$s" ] || [ -f "$selftests_dir/$s" ]; then
            run_one "$name" bash "$selftests_dir/$s"
        else
            record "$name" 1
        fi
        test_timeout=
        pkill -KILL rping 2>/dev/null
        ( . "$here/lib.sh"; rxe_unload ) >/dev/null 2>&1
        ip link del tun0 2>/dev/null
    done
done

# Comparisons need both drivers' outputs from this boot.
for t in "$here"/cmp_*.sh; do
    name=compare/$(basename "$t" .sh)
    [[ $name =~ $pattern ]] || continue
    run_one "$name" bash "$t"
done

echo
if [ ${#failures[@]} -gt 0 ]; then
    echo "failed: ${failures[*]}"
fi
echo "skipped: $skipped"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
