#!/usr/bin/env bash
# Installs the build into a scratch prefix, builds tests/consumer against it with
# find_package(ranks), and runs it directly and under the installed `ranks sim`.
set -euo pipefail
build_dir=$1
source_dir=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

cmake --install "$build_dir" --prefix "$scratch/prefix" >/dev/null
cmake -S "$source_dir" -B "$scratch/build" -G Ninja -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/build" >/dev/null
"$scratch/build/consumer"
"$scratch/prefix/bin/ranks" sim -n 3 -- "$scratch/build/consumer" --main
