#!/usr/bin/env bash
# tests/run.sh — installs what the tests need, builds with warnings as errors,
# and runs every test (unit, integration against a real gnome-keyring on a
# private D-Bus bus, conformance, and end to end with terraform when it is
# installed). Usage: tests/run.sh [BUILD_DIR]   (default: build-tests)
#   HOSTKEEPER_SANITIZE=1 tests/run.sh build-asan   also builds with ASan+UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-tests}

./packaging/deps.sh test

sanitize=OFF
[[ "${HOSTKEEPER_SANITIZE:-0}" == 1 ]] && sanitize=ON
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHOSTKEEPER_WERROR=ON \
    -DHOSTKEEPER_SANITIZE="$sanitize" >/dev/null
cmake --build "$build" -j"$(nproc)"
cd "$build"
ctest --output-on-failure -j2
