#!/usr/bin/env bash
# Run every test: host protocol tests (cargo test, clippy) and rustfmt
# --check, the module build (warnings are errors) and its clippy check, the
# VM suite against the C driver and ours, and the wire interop of the two
# drivers (scripts/interop.sh: two guests, one driver each).
# Sets the machine up first (idempotent). Prints phase timings and ends with
# the whole run's "N passed, N failed" (non-zero exit on any failure).
#
#   scripts/test.sh [PATTERN]   PATTERN limits the VM tests (a regex on
#                               names; interop/... selects interop cases)
#   RXE_KERNELS=prod scripts/test.sh [PATTERN]
#                               the production kernel's pass only: the
#                               quick loop while working (below)
#
# The VM phase runs on two kernels built from the same sources
# (scripts/build-kernel.sh):
#
# - the debug kernel (KASAN, lockdep, kmemleak; "test" flavour): our
#   driver's tests, spread over RXE_VM_GUESTS guests (default 2, of one
#   vCPU each; one guest gets 2), longest first by the durations of
#   earlier runs; the tests that need two CPUs (RXE_VM_SMP_TESTS) then run
#   in a guest of 2 vCPUs. Its debug checks cost 3 to 15 times the
#   tests' own time under TCG: this is most of the run.
# - the production kernel (the same options without the debug ones; the
#   "bench" flavour scripts/bench.sh uses): in one guest of 2 vCPUs, the
#   C driver's tests (which show each test is right) and ours again
#   ("prod/rust/..."), the comparisons of the two drivers' outputs from
#   that boot (cmp_*.sh, diffed here), then the wire interop of the two
#   drivers (scripts/interop.sh: two guests, one driver each).
#   This pass runs beside the debug kernel's, in the background: its
#   guests mostly wait (timers, sleeps, the peer), the debug guests are
#   busy, so it costs them little and they run at a lower priority than
#   its guests (RXE_VM_NICE=5); the production kernel is therefore built
#   (if not cached) before the debug pass starts. RXE_PROD_BESIDE=0 runs
#   it after the debug pass instead.
#
# The time budget: the whole run should end within RXE_TIME_BUDGET
# seconds of its start (default 4500; 0 means no budget), so that a CI
# job of 90 minutes passes with room to spare. The production kernel's
# pass is stopped (its guests time out, their unfinished tests fail) if it
# runs more than 5 minutes past the budget. Our debug-kernel tests always
# run, all of them. The production kernel is built (if not cached) in what
# is left of the budget less the longer pass's estimate; a build cut short
# resumes on the next run. If the build or the pass does not fit, their tests are NOTRUN:
# listed by name, neither passed nor failed.
set -euo pipefail
run_start=$(date +%s)
budget=${RXE_TIME_BUDGET:-4500}
# Which kernels' passes run: both (the default, and CI's), or one of
# them for a quicker loop while working: RXE_KERNELS=prod runs every
# test on the production kernel only (ours and the C driver's, the
# comparisons, the interop: 17 minutes on this machine, 8 with the C
# driver's pass cached), without the debug
# kernel's KASAN, lockdep and kmemleak checks; RXE_KERNELS=debug runs
# only our tests on the debug kernel.
kernels=${RXE_KERNELS:-both}
case $kernels in
    both|prod|debug) ;;
    *) echo "test.sh: RXE_KERNELS is both, prod or debug, not '$kernels'" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/lib.sh"
cd "$here"
pattern=${1:-.}
suite=$here/tests/vm/suite.sh

# A pattern that selects no test fails at once, before anything is built.
mapfile -t want < <(bash "$suite" --list "$pattern")
# The wire interop cases (scripts/interop.sh), after the one-guest suite:
# the whole matrix (RXE_INTEROP_SET=suite for the smaller set).
export RXE_INTEROP_SET=${RXE_INTEROP_SET:-all}
mapfile -t want_interop < <(bash "$here/scripts/interop.sh" --list "$pattern")
if [ ${#want[@]} = 0 ] && [ ${#want_interop[@]} = 0 ]; then
    echo "vm: the pattern '$pattern' selects no test (tests/vm/suite.sh --list and scripts/interop.sh --list show them)"
    echo "0 passed, 1 failed"
    exit 1
fi

"$here/scripts/setup.sh"

phase_start host-tests
# The C cross-checks of the uapi layout (abi_layout.rs, abi_values.rs)
# fail here, not skip, if cc or the headers are missing.
export RXE_REQUIRE_CC=1
(cd host && cargo test --quiet 2>&1 | tail -n 60)
(cd host && cargo clippy --quiet --all-targets -- -D warnings)
# Formatting, with the kernel tree's rustfmt configuration: a diff fails
# the run. rustfmt follows `mod` declarations, so these roots reach every
# file of src/ and host/.
mapfile -t rs_roots < <(find host/tests host/examples -name '*.rs' | sort)
if ! rustfmt --check --config-path "$RXE_CACHE/kernel/.rustfmt.toml" \
    src/rxe_main.rs host/src/lib.rs "${rs_roots[@]}"; then
    echo "host-tests: not formatted as the kernel's .rustfmt.toml wants (the diff is above)"
    echo "0 passed, 1 failed"
    exit 1
fi
phase_end host-tests

phase_start module
make --no-print-directory modules
# clippy with the kernel tree's .clippy.toml and lint set, -D warnings (see
# the Makefile's clippy target; it leaves the plain build's .ko).
make --no-print-directory clippy
# No stack frame of 5 KiB or more: a production kernel's stack is 16 KiB
# (the test kernel's KASAN doubles it and would hide an overflow), and a
# frame of 8 KiB under `rdma link add`'s device registration overflowed
# it when a timer interrupt came on top (boxed_reply_queue, 8328 bytes).
scripts/check-stack.sh rdma_rxe.ko 5120
phase_end module

phase_start vm-tests
logdir=${RXE_LOGDIR:-$here/logs/vm-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$logdir"
logdir=$(cd "$logdir" && pwd)
# The guest runs the host's userspace: build the test programs here, where
# gcc is not emulated (x_hostile_ring.sh looks for it in the log directory).
gcc -O1 -g -Wall -Werror -o "$logdir/hostile_ring" tests/vm/hostile_ring.c -libverbs
gcc -O1 -g -Wall -Werror -o "$logdir/rereg" tests/vm/rereg.c -libverbs
gcc -O1 -g -Wall -Werror -o "$logdir/mcast" tests/vm/mcast.c -libverbs
gcc -O1 -g -Wall -Werror -o "$logdir/advise" tests/vm/advise.c -libverbs
# pyz: the tests' python3, forking pyverbs scripts from a warm Python
# (tests/vm/lib.sh, PY); static, so that starting it costs the least.
gcc -O1 -g -Wall -Werror -static -o "$logdir/pyz" tests/vm/pyz.c
# The kernel-verbs test module (t_kverbs.sh), against the test kernel.
mkdir -p "$logdir/kmod"
cp tests/kmod/Kbuild tests/kmod/*.c "$logdir/kmod/"
make -s -C "$RXE_CACHE/kernel" LLVM=1 M="$logdir/kmod" W=1 KCFLAGS=-Werror modules

rm -f "$logdir"/results*.txt "$logdir"/guest*.status
# extra NAME WHY: failures found outside a test (a guest that did
# not finish, a problem in the kernel log that no test was blamed for).
: > "$logdir/results-extra.txt"
extra() { printf 'FAIL\t%s\t\t%s\n' "$1" "$2" >> "$logdir/results-extra.txt"; }

# anchored NAMES...: a pattern that selects exactly these names.
anchored() {
    local IFS='|'
    printf '^(%s)$' "$(printf '%s\n' "$@" | sed 's/[][\.*^$()+?{}|]/\\&/g' | paste -sd'|')"
}

# timed VAR=VALUE... COMMAND...: run it, then print its wall time.
timed() {
    local start=$SECONDS rc=0 a tag=
    for a in "$@"; do [[ $a != RXE_VM_TAG=* ]] || tag=${a#*=}; done
    env "$@" || rc=$?
    echo "vm: guest $tag: wall time $((SECONDS - start)) s (exit $rc)"
    return $rc
}

# estimate NAME: the test's duration in earlier runs (the durations
# files below; the other driver's duration of it; else 60 s).
estimate() {
    local n=$1 other v
    other=${n/#c\//rust/}; [ "$other" != "$n" ] || other=${n/#rust\//c/}
    v=$(cat "${durations[@]}" /dev/null | awk -F'\t' -v n="$n" -v o="$other" \
        '$1 == n { a = $2 } $1 == o { b = $2 } END { print (a != "" ? a : (b != "" ? b : 60)) }')
    echo "$v"
}
# The production kernel's pass: the C driver's tests and ours in one
# guest of 2 vCPUs, the comparisons of that boot's outputs, the interop.
# Its own log directory: its outputs (devinfo-rust.txt...) are not the
# debug pass's.
prod_want=() cmp_want=()
for n in "${want[@]}"; do
    case $n in
        c/*|rust/*) prod_want+=("$n") ;;
        compare/*) cmp_want+=("$n") ;;
    esac
done
# prod_name NAME: what a name from the production guest is reported as
# (ours are prod/rust/...; the C driver's and the comparisons run only
# there and keep their names).
prod_name() { case $1 in rust/*) echo "prod/$1" ;; *) echo "$1" ;; esac; }
# prod_notrun WHY: every name of the production pass is NOTRUN.
prod_notrun() {
    local n
    for n in "${prod_want[@]}" "${cmp_want[@]}" "${want_interop[@]}"; do
        printf 'NOTRUN\t%s\t\t%s\n' "$(prod_name "$n")" "$1" >> "$logdir/results-prod-notrun.txt"
    done
}
prod_dir=$logdir/prod
# The C driver's pass is the yardstick: it shows each test is right. What
# it depends on is the production kernel (its build key: sources, config,
# toolchain), the tests and what runs them, and the userspace the guest
# borrows from this machine (rdma-core, perftest, python3, gcc for the
# test programs, QEMU). Under one key its verdicts and outputs do not
# change (up to flakes), so a green full pass is kept in
# $RXE_CACHE/c-pass-<key> and later runs with that key reuse it: its
# verdicts are reported with "cached: <when>", its outputs (devinfo-c.txt...)
# are put back for the comparisons. RXE_C_CACHE=0 runs it anyway.
c_pass_key() {
    {
        "$here/scripts/build-kernel.sh" bench --key
        dpkg-query -W -f='${Package} ${Version}\n' rdma-core libibverbs1 ibverbs-providers librdmacm1t64 \
            librdmacm1 ibverbs-utils rdmacm-utils perftest python3-pyverbs qemu-system-x86 2>/dev/null | sort
        python3 --version; gcc --version | head -1
        (cd "$here" && find tests scripts/vm.sh scripts/lib.sh scripts/check-dmesg.sh -type f \
            ! -path '*/__pycache__/*' ! -name '*.pyc' -print0 | sort -z | xargs -0 sha256sum)
    } | sha256sum | cut -c1-16
}
c_cache=$RXE_CACHE/c-pass-$(c_pass_key)
# c_pass_cached NAMES...: a kept pass has a verdict for every one.
c_pass_cached() {
    local n
    [ "${RXE_C_CACHE:-1}" != 0 ] && [ -f "$c_cache/results.txt" ] && [ -f "$c_cache/outputs.tar" ] || return 1
    for n in "$@"; do
        cut -f2 "$c_cache/results.txt" | grep -qxF "$n" || return 1
    done
}
# c_pass_keep NAMES...: keep this run's C pass if it ran all of them
# (every C test, not a pattern's part) and none failed.
c_pass_keep() {
    local all n tmp
    mapfile -t all < <(bash "$suite" --only c --list .)
    [ "$#" = "${#all[@]}" ] || return 0
    awk -F'\t' '$2 ~ /^c\// && $1 != "PASS" && $1 != "SKIP" { bad = 1 } END { exit bad }' \
        "$prod_dir/results-prod.txt" || return 0
    for n in "$@"; do
        cut -f2 "$prod_dir/results-prod.txt" | grep -qxF "$n" || return 0
    done
    tmp=$c_cache.tmp
    rm -rf "$tmp"; mkdir -p "$tmp"
    awk -F'\t' '$2 ~ /^c\//' "$prod_dir/results-prod.txt" > "$tmp/results.txt"
    (cd "$prod_dir" && find . -maxdepth 1 \( -name '*-c' -o -name '*-c.*' \) -printf '%P\n'; \
        [ ! -d tests/c ] || echo tests/c) | (cd "$prod_dir" && tar -cf "$tmp/outputs.tar" -T -)
    echo "the run of $(date -u '+%Y-%m-%d %H:%M UTC') (logs: $prod_dir)" > "$tmp/when"
    for n in "$RXE_CACHE"/c-pass-*; do [ "$n" = "$tmp" ] || rm -rf "$n"; done
    mv "$tmp" "$c_cache"
    echo "vm: the C driver's pass is green: kept in $c_cache for later runs with the same key"
}
# Estimates: the last pass's wall time (guest and interop), else 15
# minutes (720 s on this machine, 2026-12-04).
prod_est=$(cat "$RXE_CACHE/prod-pass-seconds" 2>/dev/null || echo 900)
[[ $prod_est =~ ^[0-9]+$ ]] || prod_est=900
# prod_pass: the production kernel's pass (its guest: the C driver's tests
# and ours; the comparisons; the interop). Writes only files: it runs in
# the background beside the debug pass.
prod_pass() {
    prod_start=$(date +%s)
    # cap_timeout SECONDS: SECONDS, or less if that would end past
    # the budget's end plus 5 minutes.
    cap_timeout() {
        local t=$1 room
        if [ "$budget" != 0 ]; then
            room=$((run_start + budget + 300 - $(date +%s)))
            [ "$room" -gt 60 ] || room=60
            [ "$t" -le "$room" ] || t=$room
        fi
        echo "$t"
    }
    rm -rf "$prod_dir"
    # The tree of this run's key (build-kernel.sh points the
    # kernel-bench link at it when it is cached): the link alone may
    # still name an older tree, built before this key's was.
    prod_kdir=$("$here/scripts/build-kernel.sh" bench | tail -n 1)
    mkdir -p "$prod_dir/kmod"
    cp "$logdir"/hostile_ring "$logdir"/rereg "$logdir"/mcast "$logdir"/advise "$logdir"/pyz "$prod_dir/"
    cp tests/kmod/Kbuild tests/kmod/*.c "$prod_dir/kmod/"
    make -s -C "$prod_kdir" LLVM=1 M="$prod_dir/kmod" W=1 KCFLAGS=-Werror modules
    prod_ko=$("$here/scripts/build-module.sh" bench 2> "$logdir/module-bench.log") ||
        { cat "$logdir/module-bench.log"; exit 1; }
    # The C driver's pass, from the cache when nothing it depends on
    # changed (c_pass_cached above); else it runs, and a green full
    # pass is kept for the next run.
    c_want=() guest_want=() guest_only=(--only rust --only c) c_cached=false
    for n in "${prod_want[@]}"; do [[ $n != c/* ]] || c_want+=("$n"); done
    if [ ${#c_want[@]} -gt 0 ] && c_pass_cached "${c_want[@]}"; then
        c_cached=true
        guest_only=(--only rust)
        for n in "${prod_want[@]}"; do [[ $n == c/* ]] || guest_want+=("$n"); done
        echo "vm: the C driver's pass is cached ($c_cache, $(cat "$c_cache/when")): its ${#c_want[@]} verdicts and outputs are that run's, it does not run now (RXE_C_CACHE=0 runs it)"
        tar -xf "$c_cache/outputs.tar" -C "$prod_dir"
    else
        guest_want=("${prod_want[@]}")
    fi
    : > "$prod_dir/results-prod.txt"
    if [ ${#guest_want[@]} -gt 0 ]; then
        timed KDIR="$prod_kdir" RXE_KO="$prod_ko" RXE_VM_QUIET=1 RXE_VM_CPUS=2 RXE_VM_TAG=prod \
            RXE_VM_TIMEOUT="${RXE_VM_TIMEOUT:-$(cap_timeout $((prod_est * 3 + 600)))}" "$here/scripts/vm.sh" "$prod_dir" "$suite" \
            "${guest_only[@]}" --results "$prod_dir/results-prod.txt" "$(anchored "${guest_want[@]}")" \
            > "$prod_dir/vm-prod.out" 2>&1 || true
        cat "$prod_dir/guest-prod.log" "$prod_dir/vm-prod.out" 2>/dev/null || true
        if [ ! -f "$prod_dir/guest-prod.status" ]; then
            extra "vm-prod" "the guest did not finish: see $prod_dir/console-prod.log"
        elif ! "$here/scripts/check-dmesg.sh" "$prod_dir/dmesg-prod.txt" > /dev/null &&
            ! grep -q 'kernel log: ' "$prod_dir/results-prod.txt" 2>/dev/null; then
            extra "vm-prod/kernel-log" "a problem in $prod_dir/dmesg-prod.txt that no test was blamed for"
        fi
    fi
    if $c_cached; then
        # The cached verdicts, each saying so.
        for n in "${c_want[@]}"; do
            awk -F'\t' -v OFS='\t' -v n="$n" -v w="cached: $(cat "$c_cache/when")" \
                '$2 == n { $4 = ($4 != "" ? $4 "; " w : w); print }' "$c_cache/results.txt"
        done >> "$prod_dir/results-prod.txt"
    elif [ ${#c_want[@]} -gt 0 ]; then
        c_pass_keep "${c_want[@]}"
    fi
    awk -F'\t' -v OFS='\t' '$2 ~ /^rust\// { $2 = "prod/" $2 } { print }' \
        "$prod_dir/results-prod.txt" > "$logdir/results-prod.txt" 2>/dev/null || true
    # The comparisons only diff the two drivers' outputs: run them here.
    if [ ${#cmp_want[@]} -gt 0 ]; then
        echo "---- comparisons"
        RXE_LOGDIR=$prod_dir bash "$suite" --only compare --results "$logdir/results-compare.txt" \
            "$(anchored "${cmp_want[@]}")" || true
    fi
    # Wire interop: a guest with the C driver and one with ours on a
    # virtual wire, each side in turn the server.
    if [ ${#want_interop[@]} -gt 0 ]; then
        echo "---- interop (scripts/interop.sh: ${#want_interop[@]} cases)"
        KDIR="$prod_kdir" RXE_KO="$prod_ko" RXE_VM_TIMEOUT="${RXE_VM_TIMEOUT:-$(cap_timeout $((prod_est * 2 + 600)))}" \
            "$here/scripts/interop.sh" --pattern "$pattern" --results "$logdir/results-interop.txt" \
            "$logdir/interop" || true
    fi
    # The whole pass's time, for the next run's estimate (only from a
    # run that ran all of it, the C driver's pass included).
    if [ "$pattern" = . ] && ! $c_cached; then
        echo $(($(date +%s) - prod_start)) > "$RXE_CACHE/prod-pass-seconds"
    fi
}
# prod_start_bg: start prod_pass in the background, its output kept for
# prod_wait.
prod_start_bg() {
    prod_pass > "$logdir/prod-pass.out" 2>&1 &
    prod_pid=$!
    # Stopped with the run (its guests are under timeout(1) and end too).
    trap 'if [ -n "$prod_pid" ]; then kill "$prod_pid" 2>/dev/null || true; fi' EXIT
}
# prod_wait: wait for prod_pass, print its output; a pass that stopped
# on an error (a build of its test module, say) fails the run by name.
prod_wait() {
    local rc=0
    wait "$prod_pid" || rc=$?
    prod_pid=
    cat "$logdir/prod-pass.out"
    [ "$rc" = 0 ] || extra "vm-prod/pass" "the production pass stopped (status $rc): see $logdir/prod-pass.out"
}

# What runs on the debug kernel: our tests (none with RXE_KERNELS=prod).
torun=()
if [ "$kernels" != prod ]; then
    for n in "${want[@]}"; do [[ $n != rust/* ]] || torun+=("$n"); done
fi
# The tests whose races need a second CPU, or that test spreading work
# over two (RXE_VM_SMP_TESTS, a regex on
# names) run in a guest of 2 vCPUs of their own, after the others (it
# takes both cores): one-vCPU guests never run two contexts of the driver
# at once. With one guest of 2 vCPUs anyway, they run in it.
smp_pattern=${RXE_VM_SMP_TESTS:-'^(c|rust)/t_(last_ack|srq_race|spread|post_cpu|kverbs_handler)$'}
smp_run=()
if [ "${RXE_VM_GUESTS:-2}" -gt 1 ] || [ "${RXE_VM_CPUS:-2}" -lt 2 ]; then
    rest=()
    for n in "${torun[@]}"; do
        if [[ $n =~ $smp_pattern ]]; then smp_run+=("$n"); else rest+=("$n"); fi
    done
    torun=("${rest[@]}")
fi
# Share them among RXE_VM_GUESTS guests (default 2, one per core of this
# machine) of one vCPU each: every guest is given all of them, longest
# first by the durations of earlier runs ($RXE_CACHE/durations.txt, else
# scripts/vm-durations.txt as measured here; else the other driver's
# duration of the same test, else 60 s), and takes the next one no other
# guest has claimed (suite.sh --claims) whenever it is free: the guests
# end within about one test of each other whatever the estimates say,
# and a guest that dies leaves the tests it did not reach to the others.
durations=()
for f in "$here/scripts/vm-durations.txt" "$RXE_CACHE/durations.txt"; do
    [ ! -f "$f" ] || durations+=("$f")
done
nguests=${RXE_VM_GUESTS:-2}
[ ${#torun[@]} -gt 0 ] || nguests=0
# No more guests than tests to share (each guest runs driver-selected).
ntests=0
for n in "${torun[@]}"; do [[ $n == */driver-selected ]] || ntests=$((ntests + 1)); done
[ "$ntests" -gt 0 ] || ntests=1
[ "$nguests" -le "$ntests" ] || nguests=$ntests
guests=()
if [ "$nguests" -gt 0 ]; then
    # NAME<tab>ESTIMATE, longest first (ties in run order).
    order=$(for n in "${torun[@]}"; do printf '%s\t%s\n' "$n" "$(estimate "$n")"; done | sort -s -t$'\t' -k2,2nr)
    cut -f1 <<< "$order" > "$logdir/order.txt"
    est=$(awk -F'\t' -v n="$nguests" '{ s += $2 } END { print int(s / n) }' <<< "$order")
    rm -rf "$logdir/claims"
    mkdir -p "$logdir/claims"
    cpus=1
    [ "$nguests" -gt 1 ] || cpus=2
    cpus=${RXE_VM_CPUS:-$cpus}
    # A guest that runs far over its estimate is stopped (a hang fails by
    # name instead of the job timing out).
    vm_timeout=${RXE_VM_TIMEOUT:-$((est * 3 / 2 + 900))}
    echo "vm: $ntests tests shared by $nguests guest(s) of $cpus vCPU, longest first, estimate $((est / 60)) min each (earlier runs; 60 s if unmeasured)"
    debug_est=$est
fi

# The production kernel's pass runs beside the debug kernel's: its guests
# (the C driver's and our tests, then the interop) wait on timers, sleeps
# and each other most of the time (over 90% of the machine idle while
# they run alone), where the debug guests are busy all the time (KASAN,
# lockdep, under TCG). So the production kernel is built first (a fresh
# machine or a new key), its pass is started in the background, and the
# debug guests run at a lower priority (RXE_VM_NICE) than its guests,
# whose tests time retransmissions. RXE_PROD_BESIDE=0 runs it after the
# debug pass instead.
bench_key=$("$here/scripts/build-kernel.sh" bench --key)
bench_built=false
[ ! -f "$RXE_CACHE/kernel-bench-$bench_key/.rxe-built" ] || bench_built=true
left=999999
[ "$budget" = 0 ] || left=$((run_start + budget - $(date +%s)))
# What must fit after the build: the longer of the two passes.
after=$prod_est
[ "${debug_est:-0}" -le "$after" ] || after=$debug_est
prod_run=false
if [ $((${#prod_want[@]} + ${#cmp_want[@]} + ${#want_interop[@]})) -eq 0 ]; then
    :
elif [ "$kernels" = debug ]; then
    echo "vm: RXE_KERNELS=debug: the production kernel's pass is not run"
    prod_notrun "RXE_KERNELS=debug leaves the production kernel's pass out"
elif [ "$left" -lt "$after" ]; then
    echo "vm: $left s of the budget left, the passes take about $after s: the production kernel's pass is not run"
    prod_notrun "the time budget ($left s left) had no room for the production kernel's pass (about $prod_est s)"
elif ! $bench_built; then
    # What the budget leaves after the passes; a build cut short resumes
    # where it stopped on the next run (the tree is kept), and its pass
    # runs then.
    slice=$((left - after - 300))
    [ "$budget" != 0 ] || slice=0
    if [ "$budget" != 0 ] && [ "$slice" -lt 600 ]; then
        echo "vm: production kernel not built and $left s of the budget left: not built now"
        prod_notrun "the production kernel: not built yet, and the time budget ($left s left) had no room to build it"
    else
        echo "vm: building the production kernel (scripts/build-kernel.sh bench$([ "$slice" = 0 ] || echo ", at most $slice s"))"
        build_rc=0
        if [ "$slice" -gt 0 ]; then
            timeout "$slice" "$here/scripts/build-kernel.sh" bench > "$logdir/build-kernel-bench.log" 2>&1 || build_rc=$?
        else
            "$here/scripts/build-kernel.sh" bench > "$logdir/build-kernel-bench.log" 2>&1 || build_rc=$?
        fi
        tail -3 "$logdir/build-kernel-bench.log"
        if [ "$build_rc" = 124 ]; then
            prod_notrun "the production kernel's build did not fit the time budget: it resumes on the next run"
        elif [ "$build_rc" != 0 ]; then
            for n in "${prod_want[@]}" "${cmp_want[@]}" "${want_interop[@]}"; do
                printf 'FAIL\t%s\t\t%s\n' "$(prod_name "$n")" "the production kernel did not build: $logdir/build-kernel-bench.log" \
                    >> "$logdir/results-prod-notrun.txt"
            done
        else
            prod_run=true
        fi
    fi
else
    prod_run=true
fi
prod_pid= debug_nice=0
if $prod_run && [ "${RXE_PROD_BESIDE:-1}" = 1 ] && [ "$nguests" -gt 0 ]; then
    echo "---- production kernel: C driver and ours, beside the debug pass (its output after the debug pass's; log: $prod_dir/guest-prod.log)"
    debug_nice=${RXE_VM_NICE:-5}
    prod_start_bg
fi

if [ "$nguests" -gt 0 ]; then
    pids=()
    for g in $(seq 1 "$nguests"); do
        guests+=("g$g")
        timed RXE_VM_QUIET=1 RXE_VM_NICE="$debug_nice" RXE_VM_CPUS=$cpus RXE_VM_TAG="g$g" RXE_VM_TIMEOUT="$vm_timeout" "$here/scripts/vm.sh" "$logdir" "$suite" \
            --only rust --results "$logdir/results-g$g.txt" --order "$logdir/order.txt" --claims "$logdir/claims" \
            "$(anchored "${torun[@]}")" > "$logdir/vm-g$g.out" 2>&1 &
        pids+=($!)
    done
    echo "vm: progress in $logdir/guest-g*.log"
    for p in "${pids[@]}"; do wait "$p" || true; done
fi
if [ ${#smp_run[@]} -gt 0 ]; then
    guests+=(smp)
    echo "vm: guest smp (2 vCPU, after the others): ${smp_run[*]}"
    smp_est=240
    for n in "${smp_run[@]}"; do smp_est=$((smp_est + $(estimate "$n"))); done
    vm_timeout=${RXE_VM_TIMEOUT:-$((smp_est * 3 / 2 + 900))}
    timed RXE_VM_QUIET=1 RXE_VM_NICE="$debug_nice" RXE_VM_CPUS=2 RXE_VM_TAG=smp RXE_VM_TIMEOUT="$vm_timeout" "$here/scripts/vm.sh" "$logdir" "$suite" \
        --only rust --results "$logdir/results-smp.txt" "$(anchored "${smp_run[@]}")" \
        > "$logdir/vm-smp.out" 2>&1 || true
fi
if [ ${#guests[@]} -gt 0 ]; then
    for g in "${guests[@]}"; do
        echo "---- guest $g (log: $logdir/guest-$g.log)"
        cat "$logdir/guest-$g.log" 2>/dev/null || true
        cat "$logdir/vm-$g.out"
    done
fi
for g in "${guests[@]}"; do
    if [ ! -f "$logdir/guest-$g.status" ]; then
        extra "vm-$g" "the guest did not finish: see $logdir/console-$g.log"
    elif ! "$here/scripts/check-dmesg.sh" "$logdir/dmesg-$g.txt" > /dev/null &&
        ! grep -q 'kernel log: ' "$logdir/results-$g.txt" 2>/dev/null; then
        extra "vm-$g/kernel-log" "a problem in $logdir/dmesg-$g.txt that no test was blamed for"
    fi
done
# Known upstream kernel reports: a test failed only on its kernel log,
# and that log holds one report, a lockdep cycle between two locks
# outside this driver that upstream's own CI meets too, with no frame of
# rdma_rxe in it. It passes, with the report named in the summary.
# nvmet-rdma: configfs unlink holds nvmet_config_sem and takes an rdma_cm
# handler_mutex (rdma_destroy_id); a connect command that arrives before
# the target saw ESTABLISHED runs inside the cm handler (handler_mutex)
# and takes nvmet_config_sem (blktests meets the same cycle over TCP:
# linux-nvme/nvme-cli#3113). It depends on timing, not on the driver.
known_upstream_reports=(
    'nvmet_config_sem+&id_priv->handler_mutex'
)
: > "$logdir/known-upstream.txt"
for f in "$logdir"/results-[gs]*.txt; do
    [ -f "$f" ] || continue
    while IFS=$'\t' read -r verdict n secs why; do
        [ "$verdict" = FAIL ] && [[ $why == "kernel log: "* ]] || continue
        log=$logdir/tests/$n.dmesg
        [ -f "$log" ] || continue
        # One report, a circular dependency, and nothing else wrong.
        problems=$(grep -cE "$(. "$here/scripts/check-dmesg.sh" /dev/null; echo "$RXE_DMESG_PROBLEMS")" "$log" || true)
        grep -q 'WARNING: possible circular locking dependency detected' "$log" || continue
        [ "$problems" -le 2 ] || continue
        report=$(sed -n '/possible circular locking dependency/,/stack backtrace:/p' "$log")
        ! grep -qE 'rdma_rxe|\brxe_' <<< "$report" || continue
        for k in "${known_upstream_reports[@]}"; do
            l1=${k%%+*} l2=${k#*+}
            if grep -qF "($l1)" <<< "$report" && grep -qF "($l2)" <<< "$report"; then
                printf '%s\t%s\n' "$n" "lockdep cycle $l1 / $l2 (upstream, no rdma_rxe frame)" >> "$logdir/known-upstream.txt"
                awk -F'\t' -v OFS='\t' -v n="$n" -v k="$k" \
                    '$1 == "FAIL" && $2 == n { $1 = "PASS"; $4 = "known upstream report in its kernel log: " k } { print }' \
                    "$f" > "$f.new" && mv "$f.new" "$f"
                break
            fi
        done
    done < <(cat "$f")
done

# A test is one guest's (suite.sh --claims): one run by two guests means
# the claims did not hold, and fails the run by name.
if [ ${#guests[@]} -gt 1 ]; then
    { awk -F'\t' '$2 !~ /\/driver-selected$/ { n[$2]++ } END { for (t in n) if (n[t] > 1) print t }' \
        "$logdir"/results-[gs]*.txt 2>/dev/null || true; } | while read -r t; do
        extra "vm-claims/$t" "run by more than one guest: the claims of suite.sh --claims did not hold"
    done
fi
# Each guest checks the driver it loads: name all but the first check of
# a driver by its guest, so that every name is one verdict.
if [ ${#guests[@]} -gt 1 ]; then
    awk -F'\t' -v OFS='\t' '
        FNR == 1 { g = FILENAME; sub(/.*results-/, "", g); sub(/\.txt$/, "", g) }
        $2 ~ /\/driver-selected$/ { if ($2 in have) $2 = $2 " [" g "]"; else have[$2] = 1 }
        { print > (FILENAME ".new") }' "$logdir"/results-[gs]*.txt
    for f in "$logdir"/results-[gs]*.txt.new; do mv "$f" "${f%.new}"; done
fi

# Keep every test's duration for the next run's plan.
if [ ${#guests[@]} -gt 0 ]; then
    touch "$RXE_CACHE/durations.txt"
    { cat "$logdir"/results-[gs]*.txt 2>/dev/null | awk -F'\t' '$3 != "" && $2 !~ / / { print $2 "\t" $3 }'
      cat "$RXE_CACHE/durations.txt"; } | sort -s -t$'\t' -k1,1 -u > "$RXE_CACHE/durations.new" || true
    mv "$RXE_CACHE/durations.new" "$RXE_CACHE/durations.txt"
fi

# The production kernel's pass: its output, after the debug pass's (or
# the pass itself now, when it did not run beside it).
if [ -n "$prod_pid" ]; then
    prod_wait
elif $prod_run; then
    echo "---- production kernel: C driver and ours (log: $prod_dir/guest-prod.log)"
    prod_start_bg
    prod_wait
fi

# RXE_KERNELS=prod: our tests' debug-kernel names are NOTRUN.
if [ "$kernels" = prod ]; then
    for n in "${want[@]}"; do
        [[ $n != rust/* ]] || printf 'NOTRUN\t%s\t\t%s\n' "$n" "RXE_KERNELS=prod leaves the debug kernel's pass out" \
            >> "$logdir/results-debug-notrun.txt"
    done
fi
# Every selected test must have a verdict.
cat "$logdir"/results-*.txt > "$logdir/results.txt"
for n in "${want[@]}" "${want_interop[@]}" $(for m in "${prod_want[@]}"; do [[ $m != rust/* ]] || echo "prod/$m"; done); do
    cut -f2 "$logdir/results.txt" | grep -qxF "$n" ||
        printf 'FAIL\t%s\t\t%s\n' "$n" "no result (its guest did not finish?)" >> "$logdir/results.txt"
done

echo
passed=$(grep -c '^PASS' "$logdir/results.txt" || true)
failed=$(grep -c '^FAIL' "$logdir/results.txt" || true)
if [ "$failed" -gt 0 ]; then
    echo "failed:"
    awk -F'\t' '$1 == "FAIL" { print "    " $2 ($4 != "" ? " (" $4 ")" : "") }' "$logdir/results.txt"
    # A kernel-log failure: the report's gist (what it is, the locks of a
    # lockdep chain, the driver's frames), here at the end of the output,
    # which is the part a CI summary keeps.
    # (No such failure is no match: not an error, which under pipefail
    # and set -e ended the run here, before its summary.)
    { grep -oP '^FAIL\t[^\t]*\t[^\t]*\t.*kernel log: \[\s*\K[0-9.]+(?=\])' "$logdir/results.txt" || true; } | sort -u |
        while read -r stamp; do
            for f in "$logdir"/dmesg-*.txt; do
                grep -q "^\[ *$stamp\]" "$f" 2>/dev/null || continue
                echo "kernel log report at $stamp ($f):"
                sed -n "/^\[ *$stamp\]/,+150p" "$f" |
                    grep -E 'WARNING|BUG|is trying to acquire|already holding|-> #[0-9]|\] +(#[0-9]+: )?[0-9a-f]+ \(|lock\(|rdma_rxe|rxe_|nvme|Workqueue|Comm:' |
                    head -n 45 | sed 's/^/    /'
            done
        done
fi
if [ -s "$logdir/known-upstream.txt" ]; then
    echo "known upstream kernel reports (passed, not this driver's; Documentation/testing.md):"
    sed 's/\t/: /; s/^/    /' "$logdir/known-upstream.txt"
fi
skipped=$(grep -c '^SKIP' "$logdir/results.txt" || true)
echo "skipped: $skipped"
awk -F'\t' '$1 == "SKIP" { print "    " $2 ($4 != "" ? " (" $4 ")" : "") }' "$logdir/results.txt"
notrun=$(grep -c '^NOTRUN' "$logdir/results.txt" || true)
if [ "$notrun" -gt 0 ]; then
    if [ "$kernels" = both ]; then
        echo "not run: $notrun (the production kernel's pass, which the time budget left out; it runs on a later run; RXE_TIME_BUDGET=0 runs all):"
    else
        echo "not run: $notrun (RXE_KERNELS=$kernels; the README's test command runs both kernels):"
    fi
    awk -F'\t' '$1 == "NOTRUN" { print "    " $2 }' "$logdir/results.txt"
fi
echo "logs: $logdir"
phase_end vm-tests
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
