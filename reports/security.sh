#!/usr/bin/env bash
# The figures of reports/security.md: the audit's attacks on a job's rendezvous store (memory
# and a member's waits), then each fuzz target for SECONDS (default 60).
#   reports/security.sh [SECONDS] [BUILD_DIR]
set -euo pipefail
seconds=${1:-60}
build=${2:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
"$build/tests/bench/store_attacks"
"$root/tools/fuzz.sh" "$seconds" "$build" 2>&1 |
  grep -E "^fuzz.sh:|stat::number_of_executed_units|stat::peak_rss_mb|^Done"
