#!/usr/bin/env bash
# Object collectives against torch.distributed (gloo) on the same data, in one run on this
# machine: tests/bench/objects_bench under ranks run (2 gloo processes), mpirun (2 mpi processes)
# and ranks sim (8 simulated ranks), then reports/objects_torch.py (2 gloo processes). Installs
# Debian's python3-torch, a benchmark-only dependency (not part of tools/setup.sh).
#   reports/objects.sh [BUILD_DIR]          writes reports/objects.txt
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
out="$root/reports/objects.txt"

/usr/bin/python3 -c "import torch" 2>/dev/null ||
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-torch >/dev/null
cmake --build "$build" --target ranks_cli objects_bench >/dev/null
bench="$build/tests/bench/objects_bench"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"  # collect_results("cpu") makes ./.dist_test here

{
  echo "# object collectives: ranks vs torch.distributed on the same data; median per call of the slowest rank"
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  host: $(uname -n)  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) x $(nproc)  git: $(git -C "$root" rev-parse --short HEAD)"
  echo
  # One process set per measurement: each peak-RSS growth is that measurement's own.
  ops="metrics anchor collect-gpu collect-cpu"
  echo "## ranks, gloo, 2 processes (ranks run)"
  for op in $ops; do
    "$build/tools/ranks" run -n 2 --backend gloo -- "$bench" --op "$op" | sed 's/^\[rank 0\] //'
  done | awk '!/^#/ || !seen++'
  echo
  echo "## torch.distributed, gloo, 2 processes (reports/objects_torch.py)"
  for op in $ops; do
    /usr/bin/python3 "$root/reports/objects_torch.py" --op "$op"
  done | awk '!/^#/ || !seen++'
  echo
  echo "## ranks, mpi, 2 processes (mpirun)"
  for op in $ops; do
    RANKS_BACKEND=mpi mpirun --allow-run-as-root --oversubscribe -np 2 "$bench" --op "$op"
  done | awk '!/^#/ || !seen++'
  echo
  echo "## ranks sim, 8 simulated ranks in one process (all ranks' work on one core)"
  for op in $ops; do
    "$build/tools/ranks" sim -n 8 --backend gloo -- "$bench" --op "$op" | grep -v '^$\|^ranks sim\|^all 8'
  done | awk '!/^#/ || !seen++'
} | tee "$out"
