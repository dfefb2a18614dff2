#!/usr/bin/env bash
# Shared by demo.sh, test.sh and .ci/run: installs what the project needs (on
# Debian, as root, only when something is missing) and configures build/.
set -euo pipefail

TMT_PACKAGES=(meson ninja-build gcc g++ clang pkg-config zlib1g-dev liblz4-dev libcmocka-dev
              libcsv-dev gnuplot-nox python3 libclang-rt-14-dev libdw-dev libelf-dev man-db)

tmt_install_deps() {
    local missing=()
    for p in "${TMT_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "error: missing packages: ${missing[*]} (run as root, or install them with apt-get)" >&2
        return 1
    fi
    echo "installing: ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# tmt_configure DIR [meson options...]: configure (or reconfigure) a build directory.
tmt_configure() {
    local dir=$1; shift
    if [ -f "$dir/build.ninja" ]; then
        meson configure "$dir" "$@" >/dev/null
    else
        meson setup "$dir" "$@" >/dev/null
    fi
}
