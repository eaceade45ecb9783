#!/usr/bin/env bash
# Cache lines one simulated rank touches per rank-operation, counted exactly (deterministic,
# unlike timings): a steady-state round of 1,024 ranks doing an 8-byte all_reduce (or a barrier)
# runs under valgrind's lackey, and the distinct 64-byte lines of data it touched between two of
# rank 0's markers are divided by the ranks. Stack lines are those within the span of the ranks'
# stacks (each rank reports where a local of its body lies), heap lines those below the end of
# the heap or within the array of rank records (each rank reports where its context lies). One
# stack line per op is valgrind's own: it emulates `bt` on registers through memory 288 bytes
# below the stack pointer (in BackendCapabilities::allows), deeper than any frame of the op.
# Needs valgrind.
#   reports/lines_per_op.sh [BUILD_DIR] [barrier]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
op="${2:-all_reduce}"
command -v valgrind >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

cat >"$scratch/probe.cpp" <<'EOF'
#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <ranks/ranks.hpp>
#include <ranks/sim.hpp>
#include <string_view>

volatile long marker = 0;  // rank 0 stores to it between rounds: the trace's round boundaries
uintptr_t lowest_local = UINTPTR_MAX, highest_local = 0;
uintptr_t lowest_record = UINTPTR_MAX, highest_record = 0;  // the ranks' contexts

int main(int argc, char** argv) {
  const bool barrier = argc > 1 && std::string_view(argv[1]) == "barrier";
  ranks::sim::Options options;
  options.world_size = 1024;
  std::printf("marker %p\n", static_cast<void*>(const_cast<long*>(&marker)));
  auto report = ranks::sim::run(options, [&] {
    auto t = ranks::Tensor::of<double>({1.0});
    lowest_local = std::min(lowest_local, reinterpret_cast<uintptr_t>(&t));
    const auto record = reinterpret_cast<uintptr_t>(&ranks::current());
    lowest_record = std::min(lowest_record, record);
    highest_record = std::max(highest_record, record);
    highest_local = std::max(highest_local, reinterpret_cast<uintptr_t>(&t));
    for (int i = 0; i < 4; ++i) {
      if (ranks::get_rank() == 0) marker = i;
      if (barrier) {
        ranks::barrier();
      } else {
        ranks::all_reduce(t);
      }
    }
  });
  std::printf("heap_end %p stacks %#zx %#zx records %#zx %#zx\n", sbrk(0),
              static_cast<size_t>(lowest_local), static_cast<size_t>(highest_local),
              static_cast<size_t>(lowest_record), static_cast<size_t>(highest_record));
  return report.outcome == ranks::sim::Outcome::Ok ? 0 : 1;
}
EOF
g++ -std=c++20 -O2 -I"$root/runtime" -I"$root/sim" -I"$build/generated" "$scratch/probe.cpp" \
  -o "$scratch/probe" -L"$build/runtime" -lranks -Wl,-rpath,"$build/runtime"
valgrind --tool=lackey --trace-mem=yes --log-file="$scratch/trace" "$scratch/probe" "$op" \
  >"$scratch/out"

python3 - "$scratch/out" "$scratch/trace" <<'EOF'
import collections, sys
words = open(sys.argv[1]).read().split()
marker, heap_end, low, high, records_low, records_high = (
    int(words[i], 16) for i in (1, 3, 5, 6, 8, 9))
slot = 1 << 20  # more than a stack slot: the lines of the lowest and highest stacks count too
ranks, seen, lines = 1024, -1, set()
for line in open(sys.argv[2]):
    if line[0] in "I=":
        continue
    parts = line.split()
    if len(parts) != 2:
        continue
    address = int(parts[1].split(",")[0], 16)
    if parts[0] == "S" and address == marker:
        seen += 1
        if seen == 3:
            break
        continue
    if seen == 2:  # the round from rank 0's third op to its fourth
        lines.add(address >> 6)
kinds = collections.Counter(
    # The ranks' records (one array, which malloc may map next to the stacks) are heap.
    "heap" if records_low - 4096 <= (l << 6) < records_high + 4096 or (l << 6) < heap_end
    else "stack" if low - slot <= (l << 6) < high + slot else "other"
    for l in lines)
print("lines per rank-op: %.2f (stack %.2f, heap %.2f, other %.2f)" % (
    len(lines) / ranks, kinds["stack"] / ranks, kinds["heap"] / ranks, kinds["other"] / ranks))
EOF
