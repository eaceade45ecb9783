#!/usr/bin/env bash
# The main job: set up, build, and run the data-parallel training step on 8 simulated ranks,
# printing the simulator's report (human and JSON). The ops are priced with the h100-nvlink-ib
# preset, so the report's virtual time is what the step's communication would take on such a
# node (without --model every op is free and the clock stays at 0).
set -euo pipefail
cd "$(dirname "$0")/.."

tools/setup.sh
# The project's Python environment (tools/setup.sh): its python builds the extension, its
# torchrun and pytest run the tests, as in a user's activated environment.
venv=${RANKS_VENV:-$PWD/.venv}
export PATH=$venv/bin:$PATH
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPython3_EXECUTABLE="$venv/bin/python" >/dev/null
cmake --build build --target ranks_cli train_step pipeline eval_gather

report=build/train_step.report.json
build/tools/ranks sim -n 8 --model h100-nvlink-ib --report "$report" -- build/scenarios/train_step
echo
echo "JSON report ($report):"
cat "$report"
