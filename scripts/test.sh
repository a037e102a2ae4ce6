#!/usr/bin/env bash
# Run every test: host protocol tests (cargo test, clippy), the module build
# (warnings are errors), and the VM suite against the C driver and ours.
# Sets the machine up first (idempotent). Prints phase timings and ends with
# the whole run's "N passed, N failed" (non-zero exit on any failure).
#
#   scripts/test.sh [PATTERN]   PATTERN limits the VM tests (a regex on names)
#
# The VM phase: the C driver's pass and ours run at once in two guests of
# one vCPU each (RXE_VM_PARALLEL=0: one after the other in one guest, as
# before), then the comparisons (cmp_*.sh, which only diff the two passes'
# outputs) run here. The C pass's verdicts and outputs are cached in
# $RXE_CACHE/c-pass/KEY, KEY a hash of tests/, scripts/vm.sh and
# check-dmesg.sh, the kernel build and the rdma-core packages: a C test
# with a cached PASS or SKIP under the same key is not run again, and says
# so (RXE_NO_CACHE=1 runs and caches them anew).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/lib.sh"
cd "$here"
pattern=${1:-.}
suite=$here/tests/vm/suite.sh

# A pattern that selects no test fails at once, before anything is built.
mapfile -t want < <(bash "$suite" --list "$pattern")
if [ ${#want[@]} = 0 ]; then
    echo "vm: the pattern '$pattern' selects no test (tests/vm/suite.sh --list shows them)"
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
phase_end host-tests

phase_start module
make --no-print-directory modules
phase_end module

phase_start vm-tests
logdir=${RXE_LOGDIR:-$here/logs/vm-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$logdir"
logdir=$(cd "$logdir" && pwd)
# The guest runs the host's userspace: build the test programs here, where
# gcc is not emulated (x_hostile_ring.sh looks for it in the log directory).
gcc -O1 -g -Wall -Werror -o "$logdir/hostile_ring" tests/vm/hostile_ring.c -libverbs
# The kernel-verbs test module (t_kverbs.sh), against the test kernel.
mkdir -p "$logdir/kmod"
cp tests/kmod/Kbuild tests/kmod/*.c "$logdir/kmod/"
make -s -C "$RXE_CACHE/kernel" LLVM=1 M="$logdir/kmod" W=1 KCFLAGS=-Werror modules

rm -f "$logdir"/results*.txt "$logdir"/guest*.status
# extra NAME WHY: failures found outside a test (a guest that did
# not finish, a problem in the kernel log that no test was blamed for).
: > "$logdir/results-extra.txt"
extra() { printf 'FAIL\t%s\t\t%s\n' "$1" "$2" >> "$logdir/results-extra.txt"; }

# The C pass's cache.
c_key=$( {
    (cd "$here" && find tests scripts/vm.sh scripts/check-dmesg.sh -name __pycache__ -prune -o -type f -print0 |
        sort -z | xargs -0 sha256sum)
    basename "$(readlink -f "$RXE_CACHE/kernel")"
    dpkg-query -W -f='${Package} ${Version}\n' rdma-core ibverbs-providers libibverbs1 \
        librdmacm1 ibverbs-utils rdmacm-utils perftest python3-pyverbs 2>/dev/null || true
    echo "slow=${RXE_SLOW_TESTS:-} cycles=${RXE_CYCLES:-} timeout=${RXE_TEST_TIMEOUT:-}"
} | sha256sum | cut -c1-16)
c_cache=$RXE_CACHE/c-pass/$c_key
: > "$logdir/results-c-cached.txt"
c_missing=()
c_cached=0
for n in "${want[@]}"; do
    [[ $n == c/* ]] || continue
    if [ -z "${RXE_NO_CACHE:-}" ] && [ -f "$c_cache/results.txt" ] &&
        line=$(grep -P "^(PASS|SKIP)\t\Q$n\E\t" "$c_cache/results.txt"); then
        printf '%s\t(cached)\n' "$line" >> "$logdir/results-c-cached.txt"
        c_cached=$((c_cached + 1))
    else
        c_missing+=("$n")
    fi
done
if [ $c_cached -gt 0 ]; then
    # The cached tests' logs and the outputs the comparisons read.
    cp -r "$c_cache/out/." "$logdir/"
    echo "vm: C pass: $c_cached result(s) CACHED from $(cat "$c_cache/stamp") (key $c_key; RXE_NO_CACHE=1 runs them again):"
    cut -f1,2 "$logdir/results-c-cached.txt" | sed 's/\t/ /; s/^/    /; s/$/ (cached)/'
fi

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

guests=()
run_c=false run_rust=false
[ ${#c_missing[@]} = 0 ] || run_c=true
for n in "${want[@]}"; do [[ $n != rust/* ]] || run_rust=true; done
rust_pattern=$pattern
if [ "${RXE_VM_PARALLEL:-1}" = 0 ] && $run_c && $run_rust; then
    # One guest, both drivers (each C test not cached, every Rust one).
    both=("${c_missing[@]}")
    for n in "${want[@]}"; do [[ $n != rust/* ]] || both+=("$n"); done
    guests=(both)
    timed RXE_VM_TAG=both "$here/scripts/vm.sh" "$logdir" "$suite" --only c --only rust \
        --results "$logdir/results-both.txt" "$(anchored "${both[@]}")" || true
else
    cpus=2
    if $run_c && $run_rust; then cpus=${RXE_VM_CPUS:-1}; fi
    pids=()
    if $run_c; then
        guests+=(c)
        echo "vm: C pass in a guest ($cpus vCPU): ${#c_missing[@]} test(s)"
        timed RXE_VM_QUIET=1 RXE_VM_CPUS=$cpus RXE_VM_TAG=c "$here/scripts/vm.sh" "$logdir" "$suite" \
            --only c --results "$logdir/results-c.txt" "$(anchored "${c_missing[@]}")" \
            > "$logdir/vm-c.out" 2>&1 &
        pids+=($!)
    fi
    if $run_rust; then
        guests+=(rust)
        echo "vm: Rust pass in a guest ($cpus vCPU)"
        timed RXE_VM_QUIET=1 RXE_VM_CPUS=$cpus RXE_VM_TAG=rust "$here/scripts/vm.sh" "$logdir" "$suite" \
            --only rust --results "$logdir/results-rust.txt" "$rust_pattern" \
            > "$logdir/vm-rust.out" 2>&1 &
        pids+=($!)
    fi
    echo "vm: progress in $logdir/guest-*.log"
    for p in "${pids[@]}"; do wait "$p" || true; done
    for g in "${guests[@]}"; do
        echo "---- guest $g (logs: $logdir/guest-$g.log, tests/$g/)"
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

# Cache the C pass if it ran clean.
if $run_c && [ -f "$logdir/guest-${guests[0]}.status" ]; then
    cres=$logdir/results-${guests[0]}.txt
    [ "${guests[0]}" = c ] || cres=$logdir/results-both.txt
    if ! grep -qP '^FAIL\tc/' "$cres" && ! grep -qP '^FAIL\tvm-(c|both)' "$logdir/results-extra.txt"; then
        mkdir -p "$c_cache/out/tests"
        cp -r "$logdir/tests/c" "$c_cache/out/tests/"
        # The C pass's outputs (devinfo-c.txt...), for the comparisons.
        for f in "$logdir"/*-c.txt; do
            [ -f "$f" ] || continue
            case ${f##*/} in results-*|dmesg-*|guest-*) ;; *) cp "$f" "$c_cache/out/" ;; esac
        done
        touch "$c_cache/results.txt"
        grep -P '^(PASS|SKIP)\tc/' "$cres" | cat - "$c_cache/results.txt" |
            sort -t$'\t' -k2,2 -u > "$c_cache/results.new"
        mv "$c_cache/results.new" "$c_cache/results.txt"
        echo "$(date -u '+%Y-%m-%d %H:%M UTC') ($logdir)" > "$c_cache/stamp"
        echo "vm: C pass cached in $c_cache"
    fi
fi

# The comparisons only diff files: run them here.
if printf '%s\n' "${want[@]}" | grep -q '^compare/'; then
    echo "---- comparisons"
    RXE_LOGDIR=$logdir bash "$suite" --only compare --results "$logdir/results-compare.txt" "$pattern" || true
fi

# Every selected test must have a verdict.
cat "$logdir"/results-*.txt > "$logdir/results.txt"
for n in "${want[@]}"; do
    cut -f2 "$logdir/results.txt" | grep -qxF "$n" ||
        printf 'FAIL\t%s\t\t%s\n' "$n" "no result (its guest did not finish?)" >> "$logdir/results.txt"
done

echo
passed=$(grep -c '^PASS' "$logdir/results.txt" || true)
failed=$(grep -c '^FAIL' "$logdir/results.txt" || true)
if [ "$failed" -gt 0 ]; then
    echo "failed:"
    awk -F'\t' '$1 == "FAIL" { print "    " $2 ($4 != "" ? " (" $4 ")" : "") }' "$logdir/results.txt"
fi
skipped=$(grep -c '^SKIP' "$logdir/results.txt" || true)
echo "skipped: $skipped"
awk -F'\t' '$1 == "SKIP" { print "    " $2 ($4 != "" ? " (" $4 ")" : "") }' "$logdir/results.txt"
[ $c_cached = 0 ] || echo "cached: $c_cached C result(s), not run in this boot (key $c_key)"
echo "logs: $logdir"
phase_end vm-tests
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
