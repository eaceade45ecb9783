#!/usr/bin/env bash
# The figures of reports/buffering.md: the largest message two ranks can send each other before
# either receives (scenarios/bugs/head_to_head_send), on the real libraries. Each size runs for
# real; a size that hangs ends at RANKS_TIMEOUT (2 s). Bisects between a size that passes and one
# that hangs: Open MPI within a node (shared memory), Open MPI over TCP (as between nodes), gloo.
#   reports/buffering.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
exchange() {  # backend bytes -> exit status 0 when the exchange completes
  RANKS_TIMEOUT=2 timeout 60 "$build/tools/ranks" run -n 2 --backend "$1" -- \
    "$build/scenarios/bug_head_to_head_send" "$2" >/dev/null 2>&1
}
largest() {  # backend low high: low passes, high hangs
  local backend=$1 low=$2 high=$3
  if ! exchange "$backend" "$low"; then echo "$backend: hangs at $low B already"; return; fi
  if exchange "$backend" "$high"; then echo "$backend: completes even at $high B"; return; fi
  while ((high - low > 1)); do
    local mid=$(((low + high) / 2))
    if exchange "$backend" "$mid"; then low=$mid; else high=$mid; fi
  done
  echo "$backend: completes up to $low B, hangs from $high B"
}
echo "Open MPI, one node (btl vader):"; largest mpi 1 1048576
echo "Open MPI over TCP (btl tcp,self):"; (export OMPI_MCA_btl=tcp,self; largest mpi 1 1048576)
echo "gloo:"; largest gloo 1 1048576
