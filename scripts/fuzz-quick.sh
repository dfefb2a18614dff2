#!/bin/sh
# fuzz-quick.sh - the short fuzzing pass of ./test.sh: every fuzz target for
# a fixed budget (FUZZ_SECONDS, default 20 s each), one at a time; fails on
# any finding. Needs only Debian's clang and libclang-rt-14-dev (both in
# scripts/setup.sh). Ends with the line "N passed, N failed".
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
if ! command -v clang >/dev/null 2>&1; then
    echo "fuzz-quick: clang not found; install clang libclang-rt-14-dev (scripts/setup.sh)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
exec "$root/test/fuzz/run" --seconds "${FUZZ_SECONDS:-20}" --jobs 1 "$@"
