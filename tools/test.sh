#!/usr/bin/env bash
# Set up, build with warnings as errors, and run the whole test suite (ctest), including the
# scenarios under the simulator and an outside project built against the installed package;
# then pip-install the checkout into the project's Python environment and check it.
set -euo pipefail
cd "$(dirname "$0")/.."

tools/setup.sh
# The project's Python environment (tools/setup.sh): its python builds the extension, its
# torchrun and pytest run the tests, as in a user's activated environment.
venv=${RANKS_VENV:-$PWD/.venv}
export PATH=$venv/bin:$PATH
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPython3_EXECUTABLE="$venv/bin/python" \
  -DRANKS_WERROR=ON -DRANKS_BUILD_TESTS=ON -U'SKBUILD*' >/dev/null
cmake --build build
ctest --test-dir build --output-on-failure -j "$(nproc)" "$@"

# `pip install .` into the project's environment, as users install it: the wheel is built from
# this build tree with the same settings (nothing is compiled again), then the installed
# package, its command and torch's view of its backend are checked. The build tree then goes
# back to the plain build's install layout (pip's settings are dropped from its cache).
"$venv/bin/pip" install --no-build-isolation --no-deps -q -C build-dir=build \
  -C cmake.define.RANKS_BUILD_TESTS=ON -C cmake.define.RANKS_WERROR=ON .
cmake -S . -B build -U'SKBUILD*' >/dev/null
tests/consumer/pip.sh "$venv"
