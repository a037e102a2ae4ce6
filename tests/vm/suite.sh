#!/bin/bash
# The guest side of the VM test run: every test in tests/vm/t_*.sh and the
# kernel's tools/testing/selftests/rdma scripts, first against the in-tree C
# rdma_rxe (to show each test is right), then against ours; then the
# comparisons between the two. Ends with "N passed, N failed".
#
#   suite.sh [--only c|rust|compare]... [--results FILE] [--list]
#            [--order FILE] [--claims DIR] [PATTERN]
#
# PATTERN (a regex on test names, default all) selects the tests; one that
# selects none fails the run. --only runs only the given phases (default:
# c, rust, compare): scripts/test.sh runs the two drivers in two guests and
# the comparisons, which only diff files, on the host. --results FILE gets
# one line per test: "PASS|FAIL|SKIP<tab>name<tab>seconds<tab>why"
# (scripts/test.sh adds NOTRUN: a pass the time budget left out).
# --list prints the names of the selected tests and runs nothing.
# --order FILE runs the selected tests named in FILE (one per line) first,
# in its order, then the others. --claims DIR shares the tests among
# guests that run the same selection: a guest runs a test only if it is
# the one that creates the file DIR/NAME (an exclusive create, atomic on
# the host's file system), so each guest takes the next unclaimed test when it is free
# and all end within about one test of each other.
#
# What fails a test, besides its exit status (0 passes, 4 is a skip: a skip
# on our driver fails): the kernel log written while it ran (from a marker
# written to /dev/kmsg before it, to after the clean-up) showing an oops,
# WARNING, KASAN report, lockdep splat, stall... (scripts/check-dmesg.sh),
# and the module not unloading after it. The phases run in the order
# of the --only options (scripts/test.sh: ours first, then the C pass). When the module cannot be unloaded
# or the loaded module is not the driver asked for (driver-selected), the
# driver's remaining tests are recorded as failed, not run on the wrong
# driver.
set -u
here=$(cd "$(dirname "$0")" && pwd)
RXE_REPO=${RXE_REPO:-$(cd "$here/../.." && pwd)}
export RXE_REPO RXE_LOGDIR

phases=() list=false results= order= claims=
while [ $# -gt 0 ]; do
    case $1 in
        --only) phases+=("$2"); shift 2 ;;
        --results) results=$2; shift 2 ;;
        --order) order=$2; shift 2 ;;
        --claims) claims=$2; shift 2 ;;
        --list) list=true; shift ;;
        --) shift; break ;;
        -*) echo "suite.sh: unknown option $1" >&2; exit 2 ;;
        *) break ;;
    esac
done
pattern=${1:-.}
[ ${#phases[@]} -gt 0 ] || phases=(c rust compare)

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

# selected PHASE: the names of the phase's tests that PATTERN selects, in
# run order, into the array `sel`. A driver's driver-selected check comes
# first whenever any of its tests is selected.
selected() {
    local all=() n t s
    sel=()
    case $1 in
        c|rust)
            for t in "$here"/t_*.sh; do t=${t##*/}; all+=("$1/${t%.sh}"); done
            for s in "${selftests[@]}"; do all+=("$1/selftest/$s"); done ;;
        compare)
            for t in "$here"/cmp_*.sh; do t=${t##*/}; all+=("compare/${t%.sh}"); done ;;
        *) echo "suite.sh: unknown phase $1" >&2; exit 2 ;;
    esac
    if [ -n "$order" ]; then
        # The names FILE orders first, then the rest in their own order
        # (no process per name: a process costs about a second under TCG).
        local -A known=() placed=()
        local ordered=()
        for n in "${all[@]}"; do known[$n]=1; done
        while read -r n; do
            [ -n "${known[$n]:-}" ] && [ -z "${placed[$n]:-}" ] || continue
            ordered+=("$n"); placed[$n]=1
        done < "$order"
        for n in "${all[@]}"; do
            [ -n "${placed[$n]:-}" ] || ordered+=("$n")
        done
        all=("${ordered[@]}")
    fi
    for n in "${all[@]}"; do
        [[ $n =~ $pattern ]] && sel+=("$n")
    done
    if [ "$1" != compare ] && { [ ${#sel[@]} -gt 0 ] || [[ $1/driver-selected =~ $pattern ]]; }; then
        sel=("$1/driver-selected" "${sel[@]}")
    fi
}

if $list; then
    for p in "${phases[@]}"; do
        selected "$p"
        [ ${#sel[@]} = 0 ] || printf '%s\n' "${sel[@]}"
    done
    exit 0
fi

: "${RXE_LOGDIR:?}"
results=${results:-$RXE_LOGDIR/results.txt}
: > "$results"
passed=0 failed=0
failures=() skips=()

record() { # name verdict seconds why
    local line="$2 $1${3:+ $3 s}${4:+ ($4)}"
    last_verdict=$2
    case $2 in
        PASS) passed=$((passed + 1)) ;;
        SKIP) skips+=("$1") ;;
        FAIL) failed=$((failed + 1)); failures+=("$1") ;;
    esac
    echo "$line"
    printf '%s\t%s\t%s\t%s\n' "$2" "$1" "${3:-}" "${4:-}" >> "$results"
}

# kernel_log_since MARK FILE: write the kernel log after the last line
# containing MARK (all of it if MARK is gone) to FILE; print the first line
# that shows a problem and fail if there is one.
. "$RXE_REPO/scripts/check-dmesg.sh"
kernel_log_since() {
    dmesg > /tmp/suite.dmesg 2>&1 || { echo "cannot read the kernel log"; return 1; }
    awk -v mark="$1" -v pat="$RXE_DMESG_PROBLEMS" -v out="$2" '
        { l[NR] = $0 }
        mark != "" && index($0, mark) { s = NR }
        END {
            if (mark != "" && !s) print "(marker " mark " gone from the log: all of it checked)" > out
            for (i = s + 1; i <= NR; i++) {
                print l[i] > out
                if (first == "" && l[i] ~ pat) first = l[i]
            }
            if (first != "") { print first; exit 1 }
        }' /tmp/suite.dmesg
}

seq=0 unload_failed=false
run_one() { # name kind command... (kind: test, selftest, load or compare)
    local name=$1 kind=$2; shift 2
    local log="$RXE_LOGDIR/tests/$name.log" mark= why=() rc problem verdict
    mkdir -p "$(dirname "$log")"
    echo "== $name"
    local start=$SECONDS
    if [ "$kind" != compare ]; then
        seq=$((seq + 1))
        mark="rxe-suite: $seq begin $name"
        echo "$mark" > /dev/kmsg
    fi
    # timeout(1) signals the test's whole process group, background
    # processes it left (a server) included.
    local limit=${test_timeout:-${RXE_TEST_TIMEOUT:-1800}}
    timeout --kill-after=10 "$limit" "$@" > "$log" 2>&1
    rc=$?
    case $rc in
        0|4) ;;
        124|137) why+=("timed out after $limit s") ;;
        *) why+=("exit status $rc")
           # driver-selected says which driver it found
           [ "$kind" != load ] || why+=("$(tail -n1 "$log")") ;;
    esac
    if [ "$kind" != compare ]; then
        [ "$kind" != selftest ] || pkill -KILL rping 2>/dev/null
        if ! ( . "$here/lib.sh"; rxe_unload ) >/dev/null 2>&1; then
            why+=("rdma_rxe did not unload after the test")
            unload_failed=true
        fi
        # Only what is left (a process costs about a second under TCG).
        if [ "$kind" = selftest ]; then
            [ ! -e /sys/class/net/tun0 ] || ip link del tun0 2>/dev/null
        elif [ "$kind" = test ]; then
            local ns=(/run/netns/*)
            [ ! -e "${ns[0]}" ] || ip -all netns delete 2>/dev/null
            [ ! -e /sys/class/net/veth-a ] || ip link del veth-a 2>/dev/null
        fi
        if ! problem=$(kernel_log_since "$mark" "$RXE_LOGDIR/tests/$name.dmesg"); then
            why+=("kernel log: $problem")
        fi
    fi
    if [ ${#why[@]} -gt 0 ]; then
        verdict=FAIL
    elif [ $rc = 4 ]; then
        verdict=SKIP
        local said
        said=$(grep -m1 '^SKIP' "$log")
        why+=("skipped${said:+: ${said#SKIP: }}")
        # Our driver must run every test: a skip there hides a gap.
        if [ "${name%%/*}" = rust ]; then
            verdict=FAIL
            why+=("a skip on our driver is a failure")
        fi
    else
        verdict=PASS
    fi
    [ $verdict = PASS ] || sed 's/^/    /' "$log" | tail -25
    local IFS=';'
    record "$name" $verdict "$((SECONDS - start))" "${why[*]}"
}

# kmemleak_check DRIVER: after a driver's tests, a kmemleak scan; a report
# that involves RDMA (rdma_*, ib_*, uverbs, rxe frames or objects) fails
# "DRIVER/kmemleak" for ours, and is shown as a skip for the C driver.
# Reports from before the driver's tests were cleared when they began.
# A kernel built without kmemleak (the production kernel, whose pass
# checks behaviour; the debug kernel's pass checks leaks) has no check.
kmemleak=/sys/kernel/debug/kmemleak
kmemleak_check() {
    local driver=$1 name="$1/kmemleak${RXE_VM_TAG:+ [$RXE_VM_TAG]}" start=$SECONDS n
    local out=$RXE_LOGDIR/tests/$driver/kmemleak${RXE_VM_TAG:+-$RXE_VM_TAG}.log
    if [ -f "${RXE_KDIR:-}/.config" ] && ! grep -qx 'CONFIG_DEBUG_KMEMLEAK=y' "$RXE_KDIR/.config"; then
        return
    fi
    [ -w "$kmemleak" ] || { record "$name" FAIL "" "no $kmemleak"; return; }
    echo "== $name"
    echo scan > "$kmemleak" 2>/dev/null
    cat "$kmemleak" > "$out" 2>&1
    # One count per unreferenced object whose report mentions RDMA.
    n=$(awk '/^unreferenced object/ { hit = 0 }
             /rdma|ib_|uverbs|rxe/ { if (!hit) { hit = 1; c++ } }
             END { print c + 0 }' "$out")
    if [ "$n" = 0 ]; then
        record "$name" PASS "$((SECONDS - start))"
    elif [ "$driver" = c ]; then
        record "$name" SKIP "$((SECONDS - start))" "C driver: $n leak report(s) involving RDMA, see $out"
    else
        sed 's/^/    /' "$out" | head -40
        record "$name" FAIL "$((SECONDS - start))" "$n leak report(s) involving RDMA, see $out"
    fi
}

run_driver() { # driver
    local driver=$1 name blocked= s
    export RXE_DRIVER=$driver
    selected "$driver"
    [ ${#sel[@]} -gt 0 ] || return 0
    # No periodic scans (every 10 minutes, the first a minute after boot):
    # one takes 12-13 s of the debug guest under TCG, and the scan above,
    # after the driver's tests, is the one that is checked. (No kmemleak
    # on the production kernel.)
    if [ -e "$kmemleak" ]; then
        echo clear > "$kmemleak"
        echo scan=off > "$kmemleak"
    fi
    mkdir -p "$RXE_LOGDIR/tests/$driver"
    # shellcheck source=lib.sh
    if ! ( . "$here/lib.sh"; rxe_unload ) >/dev/null 2>&1; then
        blocked="rdma_rxe could not be unloaded before switching to the $driver driver"
    elif ! ( . "$here/lib.sh"; rxe_use_driver "$driver" ) > "$RXE_LOGDIR/tests/$driver/use-driver.log" 2>&1; then
        blocked="rxe_use_driver $driver failed"
    fi
    unload_failed=false
    for name in "${sel[@]}"; do
        # Another guest took it (--claims). The claim is the shell's own
        # exclusive create (noclobber: O_EXCL), not mkdir(1): a process
        # costs about a second under TCG, and every guest tries every test.
        if [ -n "$claims" ] && [[ $name != */driver-selected ]]; then
            set -C
            if ! { : > "$claims/${name//\//_}"; } 2>/dev/null; then
                set +C
                continue
            fi
            set +C
        fi
        if [ -n "$blocked" ]; then
            record "$name" FAIL "" "not run: $blocked"
            continue
        fi
        case $name in
            */driver-selected)
                run_one "$name" load bash -c ". '$here/lib.sh'; rxe_load_checked $driver"
                if [ "$last_verdict" = FAIL ] && ! $unload_failed; then
                    blocked="$name failed: $(tail -n1 "$RXE_LOGDIR/tests/$name.log")"
                fi ;;
            */selftest/*)
                s=${name##*/}
                test_timeout=
                # rxe_sent_rcvd_bytes.sh's rping client never exits if its
                # connection fails: bound it, so that this fails instead of hanging.
                [ "$s" != rxe_sent_rcvd_bytes.sh ] || test_timeout=300
                if [ -f "$selftests_dir/$s" ]; then
                    run_one "$name" selftest bash "$selftests_dir/$s"
                else
                    record "$name" FAIL "" "missing $selftests_dir/$s"
                fi
                test_timeout= ;;
            *)
                run_one "$name" test bash "$here/${name#*/}.sh" ;;
        esac
        if $unload_failed && [ -z "$blocked" ]; then
            blocked="rdma_rxe could not be unloaded after $name"
        fi
    done
    [ -n "$blocked" ] || kmemleak_check "$driver"
}

total=0
for p in "${phases[@]}"; do
    selected "$p"
    total=$((total + ${#sel[@]}))
done
if [ $total = 0 ]; then
    record "pattern '$pattern'" FAIL "" "it selects no test"
fi

drivers=false
for p in "${phases[@]}"; do [ "$p" = compare ] || drivers=true; done
if $drivers && [ $total -gt 0 ]; then
    mount -t debugfs none /sys/kernel/debug 2>/dev/null || true
    # kmemleak's periodic scan takes most of a minute under TCG every ten
    # minutes; t_cycles.sh scans explicitly when it needs to.
    [ ! -e "$kmemleak" ] || echo scan=off > "$kmemleak"
    # The Python the tests' "$PY" forks its scripts from (lib.sh): it
    # imports pyverbs while the first tests run; until it listens, pyz
    # runs python3 itself.
    if [ -x "$RXE_LOGDIR/pyz" ]; then
        /usr/bin/python3 "$here/pyzygote.py" /tmp/rxe-pyz.sock \
            > "$RXE_LOGDIR/pyzygote${RXE_VM_TAG:+-$RXE_VM_TAG}.log" 2>&1 &
    fi
    # A problem in the kernel log before the first test fails the boot.
    if ! problem=$(kernel_log_since "" "$RXE_LOGDIR/boot-${phases[0]}.dmesg"); then
        record "${phases[0]}/boot" FAIL "" "kernel log: $problem"
    fi
fi

for p in "${phases[@]}"; do
    case $p in
        c|rust) run_driver "$p" ;;
        compare)
            # Comparisons need both drivers' outputs (of this run, or of
            # scripts/test.sh's production-kernel guest).
            export RXE_DRIVER=rust # lib.sh wants one; the comparisons read both
            selected compare
            for name in "${sel[@]}"; do
                run_one "$name" compare bash "$here/${name#*/}.sh"
            done ;;
    esac
done

echo
[ ${#failures[@]} = 0 ] || echo "failed: ${failures[*]}"
echo "skipped: ${#skips[@]}${skips[*]:+ (${skips[*]})}"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
