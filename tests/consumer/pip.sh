#!/usr/bin/env bash
# Checks a pip-installed ranks in the Python environment VENV (tools/test.sh installs the
# checkout there): the package comes from that environment's site-packages, the `ranks` command
# runs the installed C++ program, torch finds the backend "ranks" through the package's entry
# point, and the installed command simulates a ranks.dist script and a torch.distributed one (the
# latter printing what torchrun prints). Run outside the checkout, with no
# PYTHONPATH, so that nothing of the build tree is found instead.
set -euo pipefail
venv=$1
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
unset PYTHONPATH

"$venv/bin/ranks" --version | grep -q "backends: sim"
"$venv/bin/python" - "$venv" <<'PY'
import os, sys
import ranks, ranks.dist
venv = os.path.realpath(sys.argv[1])
where = os.path.realpath(ranks.__file__)
assert where.startswith(venv + "/"), f"ranks imported from {where}, not from {venv}"
assert os.access(os.path.join(os.path.dirname(where), "bin", "ranks"), os.X_OK)
import torch.distributed
assert "ranks" in torch.distributed.Backend.backend_list, "torch did not load the ranks backend"
PY
"$venv/bin/ranks" sim -n 4 --backend gloo -- "$venv/bin/python" \
  "$source_dir/scenarios/python/train_step.py" | grep -q "4 ranks x 3 steps"
# A torch.distributed script, unchanged, simulated by the installed command (no --backend: its
# own "gloo"), prints what torchrun's real processes print.
"$venv/bin/python" "$source_dir/tests/python/same_result.py" --line "ddp_train:" -- \
  "$venv/bin/torchrun" --nproc_per_node 2 "$source_dir/scenarios/python/ddp_train.py" -- \
  "$venv/bin/ranks" sim -n 2 -- "$venv/bin/python" "$source_dir/scenarios/python/ddp_train.py" \
  | grep -q "^simulated: ddp_train: 2 ranks"
echo "pip-installed ranks in $venv: package, command, torch backend, a simulated ranks.dist" \
  "script and a simulated torch script ok"
