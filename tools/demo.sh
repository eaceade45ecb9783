#!/usr/bin/env bash
# The main job: set up, build, and run the data-parallel training step on 8 simulated ranks,
# printing the simulator's report (human and JSON).
set -euo pipefail
cd "$(dirname "$0")/.."

tools/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target ranks_cli train_step pipeline eval_gather

report=build/train_step.report.json
build/tools/ranks sim -n 8 --report "$report" -- build/scenarios/train_step
echo
echo "JSON report ($report):"
cat "$report"
