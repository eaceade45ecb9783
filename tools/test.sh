#!/usr/bin/env bash
# Set up, build with warnings as errors, and run the whole test suite (ctest), including the
# scenarios under the simulator and an outside project built against the installed package.
set -euo pipefail
cd "$(dirname "$0")/.."

tools/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRANKS_WERROR=ON >/dev/null
cmake --build build
ctest --test-dir build --output-on-failure -j "$(nproc)" "$@"
