#!/usr/bin/env bash
# Runs the whole test suite: the plain build (every test), every test again
# under ASan+UBSan, the runtime, tracer and format tests and the TL2 layer
# (compat/tl2) under TSan, then each fuzz target for a short budget
# (FUZZ_SECONDS, default 20). Ends with one summary line "N passed, N failed"
# over all of them.
# Usage: ./test.sh [--quick]   (--quick: plain build only)
set -euo pipefail
cd "$(dirname "$0")"
# The tests set the TMTRACE_* variables they need; one left in the caller's
# environment (TMTRACE_EVENTS=off, say) would change what they run.
for v in $(compgen -e | grep '^TMTRACE_' || true); do unset "$v"; done
. scripts/setup.sh
tmt_install_deps

quick=0
[ "${1:-}" = "--quick" ] && quick=1
jobs=$(nproc)
status=0
summary=()

run_suite() { # name dir
    local name=$1 dir=$2 log rc=0
    log=$(mktemp)
    meson test -C "$dir" --num-processes "$jobs" --print-errorlogs >"$log" 2>&1 || rc=1
    [ $rc -eq 0 ] || status=1
    grep -E "^(Ok|Fail|Expected Fail|Unexpected Pass|Skipped|Timeout):" "$log" | sed "s/^/[$name] /" || true
    if [ $rc -ne 0 ]; then
        # What failed and why, so that a CI log says it without the build tree.
        grep -E '\[  (FAILED|ERROR) +\]|[Ee]rror:|Assert|Sanitizer|runtime error|Timeout' "$log" |
            grep -v -E '^(Fail|Timeout):' | head -40 | sed "s/^/[$name] /" || true
        sed -n '/^Summary of Failures/,$p' "$log" | head -80
    fi
    # A test that timed out failed too (meson counts it apart).
    local passed failed timedout
    passed=$(grep -E '^Ok:' "$log" | awk '{print $2}')
    failed=$(grep -E '^Fail:' "$log" | awk '{print $2}')
    timedout=$(grep -E '^Timeout:' "$log" | awk '{print $2}')
    summary+=("$name: ${passed:-0} ok, $((${failed:-0} + ${timedout:-0})) failed")
    rm -f "$log"
}

build_ok() { # name dir: builds dir; a build failure counts as one failed test
    local name=$1 dir=$2 log
    log=$(mktemp)
    if ninja -C "$dir" >"$log" 2>&1; then rm -f "$log"; return 0; fi
    echo "[$name] build failed:"; grep -E "error|FAILED" "$log" | head -20
    rm -f "$log"
    status=1
    summary+=("$name: 0 ok, 1 failed")
    return 1
}

tmt_configure build -Dbuildtype=release
build_ok plain build && run_suite plain build

if [ $quick -eq 0 ]; then
    # The whole suite under ASan+UBSan (the tools and workloads too); the
    # runtime, tracer and TL2 tests again under TSan (-Dsanitize_only builds
    # the library and compat/tl2, not the tools).
    tmt_configure build-asan -Dbuildtype=debugoptimized -Db_sanitize=address,undefined \
        -Db_lundef=false -Dsanitize_only=false
    build_ok asan-ubsan build-asan &&
        UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 run_suite asan-ubsan build-asan

    tmt_configure build-tsan -Dbuildtype=debugoptimized -Db_sanitize=thread -Db_lundef=false \
        -Dsanitize_only=true
    build_ok tsan build-tsan &&
        TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 run_suite tsan build-tsan

    # Every fuzz target for a short fixed budget; any finding fails the run.
    log=$(mktemp)
    fuzz_rc=0
    FUZZ_SECONDS=${FUZZ_SECONDS:-20} scripts/fuzz-quick.sh >"$log" 2>&1 || fuzz_rc=1
    [ $fuzz_rc -eq 0 ] || status=1
    grep -E "^(fuzz|  )|passed, .* failed" "$log" | sed "s/^/[fuzz] /" || true
    [ $fuzz_rc -eq 0 ] || tail -40 "$log"
    line=$(grep -E "^[0-9]+ passed, [0-9]+ failed" "$log" | tail -1)
    summary+=("fuzz: $(echo "${line:-0 passed, 1 failed}" | sed -E 's/([0-9]+) passed, ([0-9]+) failed.*/\1 ok, \2 failed/')")
    rm -f "$log"
fi

for s in "${summary[@]}"; do echo "$s"; done
ok=0; failed=0
for s in "${summary[@]}"; do
    o=$(echo "$s" | sed -E 's/.*: ([0-9]*) ok.*/\1/'); f=$(echo "$s" | sed -E 's/.* ([0-9]*) failed/\1/')
    ok=$((ok + ${o:-0})); failed=$((failed + ${f:-0}))
done
echo "$ok passed, $failed failed"
exit $status
