#!/usr/bin/env bash
# torch.distributed programs under the simulator, in one run on this machine: an 8-byte
# all_reduce loop on rank threads against the bare thread hand-over and against torch's own
# in-process multi-threaded process group, and a 3-step DDP training at 64 and 1,024 ranks.
#   reports/torch_sim.sh [BUILD_DIR]          writes reports/torch_sim.txt
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
out="$root/reports/torch_sim.txt"
python="$root/.venv/bin/python"
cmake --build "$build" --target ranks_cli ranks_python >/dev/null
export PYTHONPATH="$build/python" OMP_NUM_THREADS=1
{
  echo "# torch.distributed under the simulator: rank threads vs the bare hand-over and torch's multi-threaded process group"
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  host: $(uname -n)  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) x $(nproc --all)  git: $(git -C "$root" rev-parse --short HEAD)  torch: $("$python" -c 'import torch; print(torch.__version__)')"
  for round in 1 2 3; do
    echo "## round $round"
    "$python" "$root/reports/torch_sim.py" baton 64 2000
    "$python" "$root/reports/torch_sim.py" ranks 64 1000
    "$python" "$root/reports/torch_sim.py" threaded 64 200
    "$python" "$root/reports/torch_sim.py" baton 1024 200
    "$python" "$root/reports/torch_sim.py" ranks 1024 100
  done
  echo "## DDP, 3 steps of scenarios/python/ddp_train.py (wall seconds, peak resident KiB)"
  for n in 64 1024; do
    /usr/bin/time -f "ranks sim -n $n: %e s, %M KiB" "$build/tools/ranks" sim -n "$n" --backend gloo -- \
      "$python" "$root/scenarios/python/ddp_train.py" 2>&1 | grep -E "^ranks sim -n|outcome"
  done
} | tee "$out"
