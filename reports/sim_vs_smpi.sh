#!/usr/bin/env bash
# The simulator against SimGrid's SMPI on the same MPI_Allreduce loop, in one run, on this
# machine: N ranks x ITERS all_reduces of 8 B, each simulator as one whole process under
# /usr/bin/time. Needs the anchors harness (../shared/anchors by default) and libsimgrid-dev,
# which this script installs (it is a benchmark-only dependency, not part of tools/setup.sh).
#   reports/sim_vs_smpi.sh [ANCHORS_DIR] [BUILD_DIR]    writes reports/sim_vs_smpi.txt
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
anchors="$(cd "${1:-$root/../shared/anchors}" && pwd)"
build="$(cd "${2:-$root/build}" && pwd)"
out="$root/reports/sim_vs_smpi.txt"

command -v smpirun >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libsimgrid-dev time >/dev/null
cmake --build "$build" --target ranks_cli allreduce_loop >/dev/null
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cp -r "$anchors"/. "$scratch/anchors"
make -C "$scratch/anchors" smpi >/dev/null

rss_mib() { awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2/1024}' "$1"; }

{
  echo "# ranks sim vs SimGrid SMPI: N ranks x ITERS all_reduce(8 B float32, sum), whole process wall time (ours: median of 5)"
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  host: $(uname -n)  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)  git: $(git -C "$root" rev-parse --short HEAD)"
  printf "%-6s %-6s %12s %12s %10s %12s %12s\n" N ITERS ranks_sim_s smpi_s speedup ranks_MiB smpi_MiB
  for spec in "1024 100" "4096 10"; do
    read -r n iters <<<"$spec"
    # Ours takes milliseconds, so the median of 5 runs; SMPI's minute-long run is done once.
    for run in 1 2 3 4 5; do
      # The anchor is an MPI program, so the simulator emulates the mpi backend. A run that does
      # not end ok must not be timed: stop the whole script.
      # Wall time from the shell's nanosecond clock: /usr/bin/time reports 10 ms steps, a
      # seventh of a 4,096-rank run. It includes /usr/bin/time's own start (against us).
      start_ns=$(date +%s%N)
      if ! /usr/bin/time -v -o "$scratch/ours.time.$run" "$build/tools/ranks" sim -n "$n" \
        --backend mpi -- "$build/tests/bench/allreduce_loop" --bytes 8 --iters "$iters" \
        >"$scratch/ours.out.$run"; then
        echo "ranks sim failed (N=$n ITERS=$iters):" >&2
        tail -5 "$scratch/ours.out.$run" >&2
        exit 1
      fi
      echo "$start_ns $(date +%s%N)" | awk '{printf "%.4f\n", ($2 - $1) / 1e9}'
    done | sort -n | sed -n 3p >"$scratch/ours.median"
    "$scratch/anchors/smpi_run.sh" "$n" 8 "$iters" >"$scratch/smpi.line"
    smpi_s=$(tr ' ' '\n' <"$scratch/smpi.line" | awk -F= '$1=="wall_s" {print $2}')
    smpi_rss=$(tr ' ' '\n' <"$scratch/smpi.line" | awk -F= '$1=="maxrss_kib" {printf "%.1f", $2/1024}')
    ours_s=$(cat "$scratch/ours.median")
    printf "%-6s %-6s %12s %12s %9.0fx %12s %12s\n" "$n" "$iters" "$ours_s" "$smpi_s" \
      "$(echo "$smpi_s / $ours_s" | bc -l)" "$(rss_mib "$scratch/ours.time.1")" "$smpi_rss"
  done
} | tee "$out"
