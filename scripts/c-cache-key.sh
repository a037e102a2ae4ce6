#!/bin/bash
# The C pass's cache, one entry per test (sourced by scripts/test.sh).
#
# A C result may be reused while nothing it depends on changed: the
# harness every test runs in (tests/vm/lib.sh, suite.sh, pyz.c and
# pyzygote.py, scripts/vm.sh, scripts/check-dmesg.sh, the kernel build, the rdma-core packages, the
# knobs that change what a test does), the test's own script, and every
# file under tests/ that script names, and so on (a file is named by its
# name or, for a Python module, its name without .py; a false match only
# adds a dependency), with tests/kmod/Kbuild for a test that names a
# test module. Changing one test then reruns only that test's C
# pass, not all of them.

# c_test_deps NAME: the repository files test NAME depends on beyond the
# harness, one per line, sorted (none for the kernel's selftests and the
# suite's own checks).
c_test_deps() {
    local name=${1#*/} root
    case $name in
        selftest/*|driver-selected*|kmemleak*) return 0 ;;
    esac
    root=tests/vm/$name.sh
    [ -f "$root" ] || return 0
    local -A have=(["$root"]=1)
    local queue=("$root") f c base stem
    local candidates=()
    mapfile -t candidates < <(find tests/vm tests/kmod -name __pycache__ -prune -o -type f -print |
        grep -vxE 'tests/vm/(lib|suite)\.sh|tests/vm/pyz(\.c|zygote\.py)|tests/kmod/Kbuild' | sort)
    while [ ${#queue[@]} -gt 0 ]; do
        f=${queue[0]}; queue=("${queue[@]:1}")
        for c in "${candidates[@]}"; do
            [ -z "${have[$c]:-}" ] || continue
            base=${c##*/}
            case $base in *.py|*.c) stem=${base%.*} ;; *) stem=$base ;; esac
            if grep -qF -e "$base" -e "$stem" "$f" 2>/dev/null; then
                have[$c]=1; queue+=("$c")
            fi
        done
    done
    # A test module's build file goes with the modules (it lists them all).
    if printf '%s\n' "${!have[@]}" | grep -q '^tests/kmod/'; then
        have[tests/kmod/Kbuild]=1
    fi
    printf '%s\n' "${!have[@]}" | sort
}

# c_test_key COMMON NAME: the cache key of test NAME's C result, COMMON
# the hash of the harness.
c_test_key() {
    { echo "$1"; echo "$2"
      c_test_deps "$2" | tr '\n' '\0' | xargs -0 -r sha256sum; } | sha256sum | cut -c1-16
}

# c_test_outputs NAME LOGDIR: the files the comparisons read that test
# NAME wrote into LOGDIR (PREFIX-c*.txt, written by the test whose files
# name "PREFIX-").
c_test_outputs() {
    local f base prefix deps
    mapfile -t deps < <(c_test_deps "$1")
    [ ${#deps[@]} -gt 0 ] || return 0
    for f in "$2"/*-c.txt "$2"/*-c-*.txt; do
        [ -f "$f" ] || continue
        base=${f##*/}
        case $base in results-*|dmesg-*|guest-*) continue ;; esac
        prefix=${base%%-c[.-]*}
        if grep -qE "(^|[^a-z_])$prefix-" "${deps[@]}" 2>/dev/null; then
            echo "$f"
        fi
    done
}
