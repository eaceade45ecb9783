#!/usr/bin/env bash
# Builds the library and its tests with AddressSanitizer and UndefinedBehaviorSanitizer in
# build-asan/ and runs the tests that involve no fibers: stores, launchers, wire and object
# decoding, and the real gloo and mpi backends (each rank a process of its own). The simulator's
# fibers switch stacks where ASan cannot follow, so its tests are left out.
#   tools/sanitize.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-asan}
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" \
  -DCMAKE_SHARED_LINKER_FLAGS="$flags" -DRANKS_WITH_PYTHON=OFF -DRANKS_BUILD_BENCHMARKS=OFF
cmake --build "$build" -j "$(nproc --all)"
# Real processes and plain code only: every test parametrised by a real backend, the store,
# launcher, wire and object tests; none that runs a simulated rank.
# Open MPI's own allocations outlive MPI_Finalize: tools/lsan-openmpi.supp names its libraries,
# which only full unwinding (fast_unwind_on_malloc=0) sees under the frames of its unloaded plugins.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:fast_unwind_on_malloc=0
export LSAN_OPTIONS=suppressions=$root/tools/lsan-openmpi.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1
cd "$build"
ctest -j "$(nproc --all)" --output-on-failure \
  -R '/gloo|/mpi|Gloo|Mpi|Store|Tcp|Launch|Pytorch|Slurm|Hostlist|JobSecret|Wire|ObjectPayload|TorchStoreClient|FreePort|CpuBinding|Deadline' \
  -E '/sim|Sim|CrashAtTime|FailedWait'
