#!/usr/bin/env bash
# The Python package's figures, in one run on this machine: simulated ranks at scale
# (reports/python_sim.py), what an object's payload costs to make and read (reports/python_codec.py),
# the real per-call cost against the C++ API and torch.distributed (reports/python_overhead.py,
# over gloo under ranks run and over mpi under mpirun), and MMEngine's all_gather of tensors
# against torch.distributed's (reports/python_all_gather.py, on both).
#   reports/python.sh [BUILD_DIR]          writes reports/python.txt
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
out="$root/reports/python.txt"
cmake --build "$build" --target ranks_cli ranks_python >/dev/null
export PYTHONPATH="$build/python" OMP_NUM_THREADS=1
python=/usr/bin/python3
{
  echo "# the Python package: simulated ranks at scale; real per-call cost vs the C++ API and torch.distributed"
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  host: $(uname -n)  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) x $(nproc --all)  git: $(git -C "$root" rev-parse --short HEAD)"
  echo
  echo "## simulated (ranks.sim.run, one process)"
  for run in "1024 0" "1024 1000" "1024 1000 torch" "10000 0" "10000 20"; do
    $python "$root/reports/python_sim.py" $run
  done
  # The rank-op rate depends on which of a virtual machine's cpus runs the process: each in turn.
  for cpu in $(seq 0 $(($(nproc --all) - 1))); do
    echo -n "cpu $cpu: "
    taskset -c "$cpu" $python "$root/reports/python_sim.py" 1024 1000
  done
  echo
  echo "## object payloads, one process (pickle, marshal, and the plain format plain values travel in)"
  $python "$root/reports/python_codec.py"
  echo
  echo "## real, gloo, 2 processes (ranks run)"
  "$build/tools/ranks" run -n 2 -- $python "$root/reports/python_overhead.py" | sed 's/^\[rank 0\] //'
  echo
  echo "## real, gloo, 2 processes (ranks run), the binding alone: no torch in the processes"
  "$build/tools/ranks" run -n 2 -- $python "$root/reports/python_binding_gloo.py" | sed 's/^\[rank 0\] //'
  echo
  echo "## real, mpi, 2 processes (mpirun)"
  mpirun --allow-run-as-root --oversubscribe -np 2 -x PYTHONPATH -x OMP_NUM_THREADS \
    $python "$root/reports/python_overhead.py" --backend mpi --iters 5000
  echo
  echo "## all_gather of tensors, new pieces each call (MMEngine's), gloo (ranks run)"
  "$build/tools/ranks" run -n 2 -- $python "$root/reports/python_all_gather.py" | sed 's/^\[rank 0\] //'
  echo
  echo "## all_gather of tensors, new pieces each call (MMEngine's), mpi (mpirun)"
  mpirun --allow-run-as-root --oversubscribe -np 2 -x PYTHONPATH -x OMP_NUM_THREADS \
    $python "$root/reports/python_all_gather.py" --backend mpi
} | tee "$out"
