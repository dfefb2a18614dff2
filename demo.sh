#!/usr/bin/env bash
# The main job: builds libtmtrace and runs a short traced workload.
set -euo pipefail
cd "$(dirname "$0")"
. scripts/setup.sh
tmt_install_deps
tmt_configure build -Dbuildtype=release
ninja -C build >/dev/null
./build/tmbench/tmbench bank --threads 2 --duration 1
