#!/usr/bin/env bash
# Installs every Debian package ranks needs to build, test and report on a fresh Debian 12 machine.
# Idempotent: skips apt entirely when everything is already present.
set -euo pipefail

packages=(
  build-essential cmake ninja-build clang-format pkg-config git python3
  libboost-fiber-dev libboost-context-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libfmt-dev libcli11-dev nlohmann-json3-dev libcereal-dev libdlpack-dev
  # xxHash: the simulator hashes an op's buffers to see them written while it is in flight
  libxxhash-dev
  # OpenSSL's libcrypto: the launchers of a multi-node job prove the job's secret with HMAC-SHA256
  libssl-dev
  libgloo-dev libopenmpi-dev openmpi-bin
  # the Python side: Debian's interpreter, its headers and venv; torch and the rest come from PyPI
  python3-dev python3-venv pybind11-dev
  # `ranks report` plots with Debian's python3 unless RANKS_PYTHON names another
  python3-matplotlib
  # the SLURM tests start a one-host cluster of their own (tests/slurm/cluster.py)
  slurmd slurmctld slurm-client munge
  # the fuzz targets (tests/fuzz): clang with libFuzzer and the sanitizers
  clang libclang-rt-14-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  echo "ranks setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "ranks setup: all packages present"

# The project's Python environment: a virtual environment of Debian's python3 (not whichever
# python3 is first on PATH: the extension is built for its ABI) with the pinned packages of
# python/requirements-test.txt. Remade only when that file changes.
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${RANKS_VENV:-$root/.venv}
requirements=$root/python/requirements-test.txt
stamp=$venv/.ranks-requirements
if ! cmp -s "$requirements" "$stamp" 2>/dev/null; then
  echo "ranks setup: making the Python environment $venv"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q -r "$requirements"
  cp "$requirements" "$stamp"
fi
echo "ranks setup: Python environment $venv ($("$venv/bin/python" -c 'import torch; print("torch", torch.__version__)'))"
