#!/bin/sh
# Regenerates reports/bench/ on this machine: measures gloo and mpi with 2 and 4 processes,
# fits a cost model per backend, predicts the same sweeps on the simulator with those models,
# and writes the report (summary.md + plots). About five minutes on a 2-core machine.
#
# usage: [MEASURE=0] [PASSES=2] reports/bench/run.sh [BUILD_DIR]      (default: build)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
ranks="$build/tools/ranks"
sweep="-o all -b 8 -e 2M -f 2 -w 3 -n 3 -R 30"
passes=${PASSES:-2}  # the report keeps the fastest of the passes at each point
data="$here/data"
measure=${MEASURE:-1}  # MEASURE=0: refit and re-predict the measurements already in data/
# Build what runs here (the build writes the git revision every row carries).
cmake --build "$build" --target ranks_cli ranks_bench >/dev/null
mkdir -p "$data"
rm -f "$data"/sim-*
if [ "$measure" = 1 ]; then
  rm -f "$data"/*.jsonl "$data"/*.txt
  { date -u +%Y-%m-%dT%H:%M:%SZ; uname -srm; grep -m1 'model name' /proc/cpuinfo; nproc
    git -C "$here" rev-parse --short HEAD; uptime; } > "$data/machine.txt"
fi

for backend in gloo mpi; do
  [ "$measure" = 1 ] && for pass in $(seq "$passes"); do
    for n in 2 4; do
      # Each rank on one core (in turn): unbound ranks share and swap the two cores at random,
      # which moved gloo's two-rank points by 2-3x between launches.
      "$ranks" bench -n "$n" --backend "$backend" --bind-to core -- $sweep \
        --json "$data/$backend-pass$pass.jsonl" > "$data/$backend-n$n-pass$pass.txt"
    done
  done
  [ "$measure" = 1 ] && cat "$data/$backend"-pass*.jsonl > "$data/$backend.jsonl"
  "$ranks" calibrate "$data/$backend.jsonl" -o "$here/$backend-model.json" \
    --name "$backend-$(hostname)" 2> "$data/$backend-calibration.txt"
  cat "$data/$backend-calibration.txt"
  # Held out: fitted to the odd passes, judged on the even ones (other launches): what the
  # in-sample table cannot say, whether the size ranges follow the library or one launch's noise.
  if [ -f "$data/$backend-pass2.jsonl" ]; then
    "$ranks" calibrate $(ls "$data/$backend"-pass*.jsonl | awk 'NR % 2 == 1') -o /dev/null \
      --check $(ls "$data/$backend"-pass*.jsonl | awk 'NR % 2 == 0') \
      2> "$data/$backend-heldout.txt"
  fi
  # The simulator's prediction of the same sweep, through the virtual clock.
  for n in 2 4; do
    "$ranks" bench --sim -n "$n" --backend "$backend" --model "$here/$backend-model.json" -- \
      $sweep --json "$data/sim-$backend.jsonl" > "$data/sim-$backend-n$n.txt"
  done
done

"$ranks" report "$data"/gloo.jsonl "$data"/mpi.jsonl "$data"/sim-gloo.jsonl "$data"/sim-mpi.jsonl \
  --model "gloo=$here/gloo-model.json" --model "mpi=$here/mpi-model.json" -o "$here" \
  --title "ranks bench on $(hostname): gloo and Open MPI, measured and predicted"
if [ "$measure" = 1 ]; then uptime >> "$data/machine.txt"; fi
