#!/usr/bin/env bash
# The figures of reports/hazards.md.
#   reports/hazards.sh OLD_BUILD [BUILD_DIR]
# OLD_BUILD: a build of the commit before the hazard checks (its sim_bench and allreduce_loop),
# e.g. git worktree add /tmp/old b35163f && cmake -S /tmp/old -B /tmp/old/build -G Ninja \
#      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRANKS_WITH_PYTHON=OFF && \
#      ninja -C /tmp/old/build sim_bench allreduce_loop
# 1. The simulator's hazard checks on the happy path: sim_bench before and after, taking turns
#    (reports/sim_bench_ab.py), and `ranks sim -n 1024 -- allreduce_loop` before, after, and after
#    with --accept buffer_in_flight (no hashing), each best of 5.
# 2. What comparing every collective's call costs a real run (RANKS_DEBUG=detail): allreduce_loop
#    of 8 B on 2 ranks of gloo and of mpi, with and without, best of 3; per call = the difference
#    over the iterations.
set -euo pipefail
old=${1:?usage: reports/hazards.sh OLD_BUILD [BUILD_DIR]}
build=${2:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
ranks="$build/tools/ranks"

best_of() {  # n command... -> the fastest wall time in seconds
  local n=$1 best=
  shift
  for _ in $(seq "$n"); do
    local start end t
    start=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    end=$(date +%s.%N)
    t=$(echo "$end - $start" | bc)
    if [[ -z $best ]] || (($(echo "$t < $best" | bc))); then best=$t; fi
  done
  echo "$best"
}

echo "== sim_bench, before (A) and after (B)"
python3 "$root/reports/sim_bench_ab.py" "$old/tests/bench/sim_bench" "$build/tests/bench/sim_bench" \
  "(Barrier|AllReduce8B)/(1024|16384)" 6

echo "== ranks sim -n 1024 -- allreduce_loop --iters 1000 (best of 5, seconds)"
iters=1000
for side in before after accepted; do
  case $side in
    before) t=$(best_of 5 "$ranks" sim -n 1024 --backend gloo -- "$old/tests/bench/allreduce_loop" --iters $iters) ;;
    after) t=$(best_of 5 "$ranks" sim -n 1024 --backend gloo -- "$build/tests/bench/allreduce_loop" --iters $iters) ;;
    accepted) t=$(best_of 5 "$ranks" sim -n 1024 --backend gloo --accept buffer_in_flight -- \
                    "$build/tests/bench/allreduce_loop" --iters $iters) ;;
  esac
  echo "$side: $t s"
done

echo "== RANKS_DEBUG=detail on real runs: allreduce_loop 8 B, 2 ranks (best of 3, seconds)"
for backend in gloo mpi; do
  # Enough calls that the difference dwarfs the launch's own noise (gloo's calls cost more).
  iters=$([[ $backend == gloo ]] && echo 20000 || echo 400000)
  plain=$(best_of 3 "$ranks" run -n 2 --backend $backend -- "$build/tests/bench/allreduce_loop" --iters $iters)
  detail=$(best_of 3 env RANKS_DEBUG=detail "$ranks" run -n 2 --backend $backend -- \
             "$build/tests/bench/allreduce_loop" --iters $iters)
  per_call=$(echo "($detail - $plain) * 1000000 / $iters" | bc -l)
  printf "%s: plain %s s, detail %s s, %.1f us more per call\n" $backend "$plain" "$detail" "$per_call"
done
