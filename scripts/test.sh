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
#
# The VM phase: the tests to run (the C driver's, unless cached, and ours)
# are spread over RXE_VM_GUESTS guests (default 2, of one vCPU each; one
# guest gets 2), longest first by the durations of earlier runs; the
# tests that need two CPUs (RXE_VM_SMP_TESTS) then run in a guest of 2
# vCPUs; the comparisons (cmp_*.sh, which only diff the two drivers' outputs) run
# here afterwards. The C results are cached per test in
# $RXE_CACHE/c-pass/t/KEY, KEY a hash of the harness (tests/vm/lib.sh and
# suite.sh, scripts/vm.sh and check-dmesg.sh, the kernel build, the
# rdma-core packages) and of the test's own files (scripts/c-cache-key.sh):
# a C test with a cached PASS or SKIP under its key is not run again, and
# the run says so (RXE_NO_CACHE=1 runs and caches them anew). Results
# cached before, under one key for all of tests/ ($RXE_CACHE/c-pass/KEY),
# still count while tests/ is unchanged.
#
# The time budget: the whole run should end within RXE_TIME_BUDGET
# seconds of its start (default 4900; 0 means no budget), so that a CI
# job of 90 minutes passes on a fresh machine. Each guest runs our
# driver's tests first, all of them, whatever the budget; then the C
# tests that are not cached, each only if its estimated duration ends
# before the guest's deadline (the budget less what the 2-vCPU guest and
# the interop phase are estimated to take). A C test left out is NOTRUN:
# listed by name, neither passed nor failed, not cached, so the next run
# runs it; a comparison that needs its output is NOTRUN too. C results
# are cached as each passes, so successive runs complete the C pass.
# Interop runs both directions if the reserve is left, else one (the one
# run least recently; the other's cases NOTRUN), none under 600 s.
set -euo pipefail
run_start=$(date +%s)
budget=${RXE_TIME_BUDGET:-4900}
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/lib.sh"
cd "$here"
pattern=${1:-.}
suite=$here/tests/vm/suite.sh

# A pattern that selects no test fails at once, before anything is built.
mapfile -t want < <(bash "$suite" --list "$pattern")
# The wire interop cases (scripts/interop.sh), after the one-guest suite:
# its suite set unless RXE_INTEROP_SET=all.
export RXE_INTEROP_SET=${RXE_INTEROP_SET:-suite}
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
# No stack frame of 10 KiB or more: a production kernel's stack is 16 KiB
# (the test kernel's KASAN doubles it and would hide an overflow).
scripts/check-stack.sh rdma_rxe.ko 10240
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

# The C pass's cache: per test (c_test_key), and the older one for all
# of tests/ at once.
. "$here/scripts/c-cache-key.sh"
# c_environment: what both keys hash besides files: the kernel build, the
# rdma-core packages, the knobs that change what a test does.
c_environment() {
    basename "$(readlink -f "$RXE_CACHE/kernel")"
    dpkg-query -W -f='${Package} ${Version}\n' rdma-core ibverbs-providers libibverbs1 \
        librdmacm1 ibverbs-utils rdmacm-utils perftest python3-pyverbs 2>/dev/null || true
    echo "slow=${RXE_SLOW_TESTS:-} cycles=${RXE_CYCLES:-} timeout=${RXE_TEST_TIMEOUT:-}"
}
c_common=$( {
    (cd "$here" && sha256sum tests/vm/lib.sh tests/vm/suite.sh tests/vm/pyz.c tests/vm/pyzygote.py \
        scripts/vm.sh scripts/check-dmesg.sh)
    c_environment
} | sha256sum | cut -c1-16)
declare -A c_keys=()
c_key=$( {
    (cd "$here" && find tests scripts/vm.sh scripts/check-dmesg.sh -name __pycache__ -prune -o -type f -print0 |
        sort -z | xargs -0 sha256sum)
    c_environment
} | sha256sum | cut -c1-16)
c_cache=$RXE_CACHE/c-pass/$c_key
: > "$logdir/results-c-cached.txt"
c_missing=()
c_cached=0
c_legacy=false c_entries=()
for n in "${want[@]}"; do
    [[ $n == c/* ]] || continue
    c_keys[$n]=$(c_test_key "$c_common" "$n")
    entry=$RXE_CACHE/c-pass/t/${c_keys[$n]}
    if [ -z "${RXE_NO_CACHE:-}" ] && [ -f "$entry/result.txt" ]; then
        printf '%s\t(cached)\n' "$(cat "$entry/result.txt")" >> "$logdir/results-c-cached.txt"
        c_entries+=("$entry")
        c_cached=$((c_cached + 1))
    elif [ -z "${RXE_NO_CACHE:-}" ] && [ -f "$c_cache/results.txt" ] &&
        line=$(grep -P "^(PASS|SKIP)\t\Q$n\E\t" "$c_cache/results.txt"); then
        printf '%s\t(cached)\n' "$line" >> "$logdir/results-c-cached.txt"
        c_legacy=true
        # Carry it over into the per-test cache.
        rm -rf "$entry.new"; mkdir -p "$entry.new/out"
        (cd "$c_cache/out" && find tests -path "tests/$n.*" -type f -exec cp --parents {} "$entry.new/out/" \;)
        c_test_outputs "$n" "$c_cache/out" | while read -r f; do cp "$f" "$entry.new/out/"; done
        printf '%s\n' "$line" | cut -f1-4 > "$entry.new/result.txt"
        cp "$c_cache/stamp" "$entry.new/stamp"
        rm -rf "$entry"; mv "$entry.new" "$entry"
        c_cached=$((c_cached + 1))
    else
        c_missing+=("$n")
    fi
done
# The cached tests' logs and the outputs the comparisons read: the older
# cache's, then the per-test entries, oldest first (an output two entries
# hold, the newer one's).
! $c_legacy || cp -r "$c_cache/out/." "$logdir/"
if [ ${#c_entries[@]} -gt 0 ]; then
    while read -r entry; do
        cp -r "$entry/out/." "$logdir/"
    done < <(for e in "${c_entries[@]}"; do printf '%s %s\n' "$(stat -c %Y "$e/result.txt")" "$e"; done |
        sort -n | cut -d' ' -f2-)
fi
if [ $c_cached -gt 0 ]; then
    echo "vm: C pass: $c_cached result(s) CACHED (RXE_NO_CACHE=1 runs them again):"
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

# estimate NAME: the test's duration in earlier runs (the durations
# files below; the other driver's duration of it; else 60 s).
estimate() {
    local n=$1 other v
    other=${n/#c\//rust/}; [ "$other" != "$n" ] || other=${n/#rust\//c/}
    v=$(cat "${durations[@]}" /dev/null | awk -F'\t' -v n="$n" -v o="$other" \
        '$1 == n { a = $2 } $1 == o { b = $2 } END { print (a != "" ? a : (b != "" ? b : 60)) }')
    echo "$v"
}
# write_budget TAG DEADLINE NAMES...: the file the guest's suite.sh reads
# its C tests' deadline and estimates from (c_out_of_budget).
write_budget() {
    local tag=$1 dl=$2 n; shift 2
    { printf 'deadline %s\n' "$dl"
      for n in "$@"; do printf '%s\t%s\n' "$n" "$(estimate "$n")"; done
    } > "$logdir/budget-$tag.txt"
}
# What the interop phase is reserved (its suite set took about 20 minutes
# on this machine, a retried case included).
interop_reserve=0
[ ${#want_interop[@]} = 0 ] || interop_reserve=${RXE_INTEROP_RESERVE:-1500}

# What runs in a guest: the C tests not cached, and ours.
torun=("${c_missing[@]}")
for n in "${want[@]}"; do [[ $n != rust/* ]] || torun+=("$n"); done
# The tests whose races need a second CPU (RXE_VM_SMP_TESTS, a regex on
# names) run in a guest of 2 vCPUs of their own, after the others (it
# takes both cores): one-vCPU guests never run two contexts of the driver
# at once. With one guest of 2 vCPUs anyway, they run in it.
smp_pattern=${RXE_VM_SMP_TESTS:-'^(c|rust)/t_(last_ack|srq_race)$'}
smp_run=()
if [ "${RXE_VM_GUESTS:-2}" -gt 1 ] || [ "${RXE_VM_CPUS:-2}" -lt 2 ]; then
    rest=()
    for n in "${torun[@]}"; do
        if [[ $n =~ $smp_pattern ]]; then smp_run+=("$n"); else rest+=("$n"); fi
    done
    torun=("${rest[@]}")
fi
# Spread them over RXE_VM_GUESTS guests (default 2, one per core of this
# machine) of one vCPU each, longest first onto the least loaded guest,
# by the durations of earlier runs ($RXE_CACHE/durations.txt, else
# scripts/vm-durations.txt as measured here; else the other driver's
# duration of the same test, else 60 s; with nothing measured yet, the C
# tests in one guest and ours in the other). One guest gets 2 vCPUs.
durations=()
for f in "$here/scripts/vm-durations.txt" "$RXE_CACHE/durations.txt"; do
    [ ! -f "$f" ] || durations+=("$f")
done
nguests=${RXE_VM_GUESTS:-2}
[ ${#torun[@]} -gt 0 ] || nguests=0
[ "$nguests" -le ${#torun[@]} ] || nguests=${#torun[@]}
guests=()
if [ "$nguests" -gt 0 ]; then
    plan=$(for i in "${!torun[@]}"; do printf '%s\t%s\n' "$i" "${torun[$i]}"; done |
        awk -F'\t' -v n="$nguests" '
            FILENAME != "-" { d[$1] = $2; next }
            {
                name = $2; est = d[name]
                if (est == "") { other = name; if (sub(/^c\//, "rust/", other) == 0) sub(/^rust\//, "c/", other); est = d[other] }
                if (est == "") est = 60; else known++
                if (name ~ /^c\//) hasc = 1; else hasrust = 1
                count++; idx[count] = $1; nm[count] = name; e[count] = est
            }
            END {
                # ours first (all of them run), then the C tests (the
                # budget may leave some out); each longest first, ties in
                # run order
                for (i = 1; i <= count; i++) { ord[i] = i; c[i] = (nm[i] ~ /^c\//) }
                for (i = 2; i <= count; i++) for (j = i; j > 1 && (c[ord[j]] < c[ord[j-1]] || (c[ord[j]] == c[ord[j-1]] && e[ord[j]] > e[ord[j-1]])); j--) { t = ord[j]; ord[j] = ord[j-1]; ord[j-1] = t }
                for (g = 1; g <= n; g++) load[g] = 0
                if (!known && n == 2 && hasc && hasrust) {
                    # Nothing measured yet: the two drivers take about as long.
                    for (i = 1; i <= count; i++) print (nm[i] ~ /^c\// ? 1 : 2) "\t" idx[i] "\t" nm[i] "\t" e[i]
                    exit
                }
                for (k = 1; k <= count; k++) {
                    i = ord[k]; best = 1
                    for (g = 2; g <= n; g++) if (load[g] < load[best]) best = g
                    load[best] += e[i]; print best "\t" idx[i] "\t" nm[i] "\t" e[i]
                }
            }' "${durations[@]}" - | sort -t$'\t' -k1,1n -k2,2n)
    cpus=1
    [ "$nguests" -gt 1 ] || cpus=2
    cpus=${RXE_VM_CPUS:-$cpus}
    # The one-vCPU guests' deadline for starting C tests: the budget less
    # the 2-vCPU guest's tests (estimates) and the interop phase.
    if [ "$budget" -gt 0 ]; then
        smp_est=0
        for n in "${smp_run[@]}"; do smp_est=$((smp_est + $(estimate "$n"))); done
        [ ${#smp_run[@]} = 0 ] || smp_est=$((smp_est + 240))
        deadline=$((run_start + budget - interop_reserve - smp_est))
        echo "vm: time budget $budget s: C tests start in these guests only if they end by $(date -u -d "@$deadline" +%H:%M:%S) UTC (estimates: 2-vCPU guest $smp_est s, interop $interop_reserve s)"
    fi
    pids=()
    for g in $(seq 1 "$nguests"); do
        mapfile -t mine < <(awk -F'\t' -v g="$g" '$1 == g { print $3 }' <<< "$plan")
        [ ${#mine[@]} -gt 0 ] || continue
        est=$(awk -F'\t' -v g="$g" '$1 == g { s += $4 } END { print s }' <<< "$plan")
        guests+=("g$g")
        echo "vm: guest g$g ($cpus vCPU): ${#mine[@]} tests, estimate $((est / 60)) min (earlier runs; 60 s if unmeasured): ${mine[*]}"
        vm_timeout=${RXE_VM_TIMEOUT:-5200}
        if [ "$budget" -gt 0 ]; then
            write_budget "g$g" "$deadline" "${mine[@]}"
            # A guest still running well past its deadline is stopped:
            # the interop phase keeps its time.
            # (never before its share of our tests could end: those are
            # not the budget's).
            vm_timeout=$((deadline - $(date +%s) + 900))
            est_rust=$(awk -F'\t' -v g="$g" '$1 == g && $3 ~ /^rust\// { s += $4 } END { print s + 0 }' <<< "$plan")
            [ "$vm_timeout" -ge $((est_rust * 3 / 2 + 600)) ] || vm_timeout=$((est_rust * 3 / 2 + 600))
            vm_timeout=${RXE_VM_TIMEOUT:-$vm_timeout}
        fi
        timed RXE_VM_QUIET=1 RXE_VM_CPUS=$cpus RXE_VM_TAG="g$g" RXE_VM_TIMEOUT="$vm_timeout" "$here/scripts/vm.sh" "$logdir" "$suite" \
            --only rust --only c --results "$logdir/results-g$g.txt" "$(anchored "${mine[@]}")" \
            > "$logdir/vm-g$g.out" 2>&1 &
        pids+=($!)
    done
    echo "vm: progress in $logdir/guest-g*.log"
    for p in "${pids[@]}"; do wait "$p" || true; done
fi
if [ ${#smp_run[@]} -gt 0 ]; then
    guests+=(smp)
    echo "vm: guest smp (2 vCPU, after the others): ${smp_run[*]}"
    vm_timeout=${RXE_VM_TIMEOUT:-5200}
    if [ "$budget" -gt 0 ]; then
        deadline=$((run_start + budget - interop_reserve))
        write_budget smp "$deadline" "${smp_run[@]}"
        vm_timeout=${RXE_VM_TIMEOUT:-$((deadline - $(date +%s) + 600))}
        [ "$vm_timeout" -ge 1200 ] || vm_timeout=1200
    fi
    timed RXE_VM_QUIET=1 RXE_VM_CPUS=2 RXE_VM_TAG=smp RXE_VM_TIMEOUT="$vm_timeout" "$here/scripts/vm.sh" "$logdir" "$suite" \
        --only rust --only c --results "$logdir/results-smp.txt" "$(anchored "${smp_run[@]}")" \
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

# Each guest checks the driver it loads: name all but the first check of
# a driver by its guest, so that every name is one verdict.
if [ ${#guests[@]} -gt 1 ]; then
    awk -F'\t' -v OFS='\t' '
        FNR == 1 { g = FILENAME; sub(/.*results-/, "", g); sub(/\.txt$/, "", g) }
        $2 ~ /\/driver-selected$/ { if ($2 in have) $2 = $2 " [" g "]"; else have[$2] = 1 }
        { print > (FILENAME ".new") }' "$logdir"/results-[gs]*.txt
    for f in "$logdir"/results-[gs]*.txt.new; do mv "$f" "${f%.new}"; done
fi

# Cache each C result that passed (or skipped), its own kernel log
# clean, even when a guest was cut short later (a failing C test is not
# cached: it runs again next time, nor one the budget left out); keep
# every test's duration for the next run's plan.
if [ ${#c_missing[@]} -gt 0 ]; then
    stored=0
    while IFS=$'\t' read -r verdict n _; do
        [ -n "${c_keys[$n]:-}" ] || continue
        entry=$RXE_CACHE/c-pass/t/${c_keys[$n]}
        rm -rf "$entry.new"; mkdir -p "$entry.new/out/tests/c"
        # Its log and kernel log, and the outputs it wrote (devinfo-c.txt...)
        # for the comparisons.
        for f in "$logdir/tests/$n".*; do
            [ -f "$f" ] || continue
            mkdir -p "$entry.new/out/$(dirname "${f#"$logdir"/}")"
            cp "$f" "$entry.new/out/${f#"$logdir"/}"
        done
        c_test_outputs "$n" "$logdir" | while read -r f; do cp "$f" "$entry.new/out/"; done
        grep -hP "^$verdict\t\Q$n\E\t" "$logdir"/results-[gs]*.txt | head -n1 | cut -f1-4 > "$entry.new/result.txt"
        echo "$(date -u '+%Y-%m-%d %H:%M UTC') ($logdir)" > "$entry.new/stamp"
        rm -rf "$entry"; mv "$entry.new" "$entry"
        stored=$((stored + 1))
    done < <(cat "$logdir"/results-[gs]*.txt | grep -P '^(PASS|SKIP)\tc/[^\t]*\t' | grep -v ' \[[a-z0-9]*\]')
    echo "vm: $stored C result(s) cached in $RXE_CACHE/c-pass/t"
fi
if [ ${#guests[@]} -gt 0 ]; then
    touch "$RXE_CACHE/durations.txt"
    { cat "$logdir"/results-[gs]*.txt 2>/dev/null | awk -F'\t' '$3 != "" && $2 !~ / / { print $2 "\t" $3 }'
      cat "$RXE_CACHE/durations.txt"; } | sort -s -t$'\t' -k1,1 -u > "$RXE_CACHE/durations.new" || true
    mv "$RXE_CACHE/durations.new" "$RXE_CACHE/durations.txt"
fi

# The comparisons only diff files: run them here.
# A comparison whose C output comes from a C test the budget left out
# is NOTRUN too (cmp_X reads X-c.txt, written by the C test whose files
# name "X-").
mapfile -t c_notrun < <(cat "$logdir"/results-[gs]*.txt 2>/dev/null | awk -F'\t' '$1 == "NOTRUN" { print $2 }')
cmp_run=() cmp_notrun=()
for n in "${want[@]}"; do
    [[ $n == compare/* ]] || continue
    prefix=${n#compare/cmp_} producer=
    if [ ! -s "$logdir/$prefix-c.txt" ]; then
        for m in "${c_notrun[@]}"; do
            mapfile -t deps < <(c_test_deps "$m")
            [ ${#deps[@]} -gt 0 ] || continue
            if grep -qE "(^|[^a-z_])$prefix-" "${deps[@]}" 2>/dev/null; then producer=$m; break; fi
        done
    fi
    if [ -n "$producer" ]; then
        cmp_notrun+=("$n")
        printf 'NOTRUN\t%s\t\t%s\n' "$n" "its C output $prefix-c.txt comes from $producer, which the time budget left out" \
            >> "$logdir/results-extra.txt"
    else
        cmp_run+=("$n")
    fi
done
if [ ${#cmp_run[@]} -gt 0 ]; then
    echo "---- comparisons"
    RXE_LOGDIR=$logdir bash "$suite" --only compare --results "$logdir/results-compare.txt" \
        "$(anchored "${cmp_run[@]}")" || true
fi

# Wire interop: a guest with the C driver and one with ours on a virtual
# wire, each side in turn the server (one boot of two 1-vCPU guests).
if [ ${#want_interop[@]} -gt 0 ]; then
    echo "---- interop (scripts/interop.sh: ${#want_interop[@]} cases)"
    # Both directions need the interop reserve. With less of the budget
    # left, one direction runs, the one run least recently (stamps in
    # $RXE_CACHE), and the other's cases are NOTRUN; with under 600 s
    # left, none runs. The guests end by the budget's end (at least half
    # the reserve from now): a stalled case then fails by name instead of
    # the whole job timing out.
    interop_pairs="c:rust rust:c"
    interop_timeout=${RXE_VM_TIMEOUT:-5200}
    if [ "$budget" -gt 0 ]; then
        left=$((run_start + budget - $(date +%s)))
        if [ "$left" -lt 600 ]; then
            interop_pairs=
        elif [ "$left" -lt "$interop_reserve" ]; then
            older=$RXE_CACHE/interop-last-c-rust newer=$RXE_CACHE/interop-last-rust-c
            if [ ! -e "$older" ] || { [ -e "$newer" ] && [ "$older" -ot "$newer" ]; }; then
                interop_pairs=c:rust
            else
                interop_pairs=rust:c
            fi
        fi
        if [ "$interop_pairs" != "c:rust rust:c" ]; then
            echo "vm: interop: $left s of the budget left, less than the $interop_reserve s both directions take: running ${interop_pairs:-none}"
            for n in "${want_interop[@]}"; do
                pair=${n#interop/}; pair=${pair%%/*}; pair=${pair/-/:}
                [[ " $interop_pairs " == *" $pair "* ]] ||
                    printf 'NOTRUN\t%s\t\t%s\n' "$n" "the time budget ($left s left) ran ${interop_pairs:-no direction}${interop_pairs:+ only} this time" \
                        >> "$logdir/results-interop-notrun.txt"
            done
        fi
        interop_timeout=$((left + 300))
        [ "$interop_timeout" -ge $((interop_reserve / 2)) ] || interop_timeout=$((interop_reserve / 2))
    fi
    if [ -n "$interop_pairs" ]; then
        RXE_INTEROP_PAIRS=$interop_pairs RXE_VM_TIMEOUT=$interop_timeout "$here/scripts/interop.sh" \
            --pattern "$pattern" --results "$logdir/results-interop.txt" "$logdir/interop" || true
        for pair in $interop_pairs; do touch "$RXE_CACHE/interop-last-${pair/:/-}"; done
    fi
fi

# Every selected test must have a verdict.
cat "$logdir"/results-*.txt > "$logdir/results.txt"
for n in "${want[@]}" "${want_interop[@]}"; do
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
    grep -oP '^FAIL\t[^\t]*\t[^\t]*\t.*kernel log: \[\s*\K[0-9.]+(?=\])' "$logdir/results.txt" | sort -u |
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
    echo "not run: $notrun (C tests, comparisons and interop cases the time budget left out; they run on a later run; RXE_TIME_BUDGET=0 runs all):"
    awk -F'\t' '$1 == "NOTRUN" { print "    " $2 }' "$logdir/results.txt"
fi
[ $c_cached = 0 ] || echo "cached: $c_cached C result(s), not run in this boot (key $c_key)"
echo "logs: $logdir"
phase_end vm-tests
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
