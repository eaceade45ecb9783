#!/usr/bin/env bash
# Installs the build into a scratch prefix, compiles each installed header on its own, builds
# tests/consumer against it with find_package(ranks), and runs it directly, under the installed
# `ranks sim` and, when gloo was built, under `ranks run --backend gloo`.
set -euo pipefail
build_dir=$1
python=${2:-/usr/bin/python3}  # the interpreter the build's Python package is for
source_dir=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

cmake --install "$build_dir" --prefix "$scratch/prefix" >/dev/null

# The installed headers (include/ranks/ plus the generated config.hpp) stand on their own: none
# includes Boost.Fiber, CUDA, MPI, gloo or NCCL, and each compiles alone against the prefix and
# cereal, with the build's compiler and not a path of the source tree.
prefix_include="$scratch/prefix/include"
headers=$(cd "$prefix_include" && find ranks -name '*.hpp' | LC_ALL=C sort)
[ -n "$headers" ] || {
  echo "no headers installed under $prefix_include/ranks" >&2
  exit 1
}
if (cd "$prefix_include" && grep -nE \
  '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"][^>"]*(boost/fiber|cuda|mpi\.h|gloo/|nccl)' \
  $headers) >"$scratch/forbidden.out"; then
  echo "installed headers include Boost.Fiber, CUDA, MPI, gloo or NCCL:" >&2
  cat "$scratch/forbidden.out" >&2
  exit 1
fi
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)
cxx=${cxx:-${CXX:-c++}}
unit="$scratch/header.cpp"
for header in $headers; do
  echo "#include <$header>" >"$unit"
  if ! "$cxx" -std=c++20 -fsyntax-only -I"$prefix_include" "$unit" >"$scratch/header.out" 2>&1; then
    echo "installed header <$header> does not compile on its own" \
      "($cxx -std=c++20 -fsyntax-only -I<prefix>/include):" >&2
    cat "$scratch/header.out" >&2
    exit 1
  fi
done

# The README's ten-line example, extracted as written: it must build and run simulated (under
# the default nccl rules and gloo's) and alone, as the README says.
mkdir -p "$scratch/build"
awk '/^## The API in ten lines/ {section = 1} section && /^```cpp/ {code = 1; next}
     code && /^```/ {exit} code {print}' "$source_dir/../../README.md" \
  >"$scratch/build/readme_example.cpp"
grep -q "ranks::main" "$scratch/build/readme_example.cpp" || {
  echo "no ten-line example found in README.md" >&2
  exit 1
}
cmake -S "$source_dir" -B "$scratch/build" -G Ninja -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/build" >/dev/null
"$scratch/build/consumer"
"$scratch/prefix/bin/ranks" sim -n 3 -- "$scratch/build/consumer" --main
"$scratch/prefix/bin/ranks" sim -n 4 -- "$scratch/build/readme_example" >/dev/null
"$scratch/prefix/bin/ranks" sim -n 4 --backend gloo -- "$scratch/build/readme_example" >/dev/null
"$scratch/build/readme_example"

# The Python package, installed in Debian's layout: importable with the prefix's dist-packages on
# the path, and a script simulated by the installed CLI (the build tree's copy is not on the path).
if compgen -G "$build_dir/python/ranks/_core*.so" >/dev/null; then
  packages="$scratch/prefix/lib/python3/dist-packages"
  [ -f "$packages/ranks/dist.py" ] && compgen -G "$packages/ranks/_core*.so" >/dev/null || {
    echo "the Python package is not installed under $packages/ranks" >&2
    exit 1
  }
  PYTHONPATH="$packages" "$python" -c \
    'import ranks, ranks.dist as d; assert ranks.__file__.startswith("'"$packages"'"); assert d.get_dist_info() == (0, 1)'
  PYTHONPATH="$packages" "$scratch/prefix/bin/ranks" sim -n 4 --backend gloo -- \
    "$python" "$source_dir/../../scenarios/python/train_step.py" | grep -q "4 ranks x 3 steps"
  # The README's Python example, as written, simulated by the installed CLI.
  awk '/^## Python/ {section = 1} section && /^```python/ {code = 1; next}
       code && /^```/ {exit} code {print}' "$source_dir/../../README.md" >"$scratch/readme_example.py"
  grep -q "import ranks.dist" "$scratch/readme_example.py" || {
    echo "no Python example found in README.md" >&2
    exit 1
  }
  PYTHONPATH="$packages" "$scratch/prefix/bin/ranks" sim -n 4 --backend gloo \
    --report "$scratch/readme_example.json" -- "$python" "$scratch/readme_example.py" >/dev/null
  grep -q '"outcome": "ok"' "$scratch/readme_example.json"
fi

# A real backend is a library of its own beside libranks.so, loaded when asked for: the installed
# one runs the program, and without it the error names the backend and the missing library.
if "$scratch/prefix/bin/ranks" --version | grep -q gloo; then
  "$scratch/prefix/bin/ranks" run -n 2 --backend gloo -- "$scratch/build/consumer" --main
  plugin=$(find "$scratch/prefix" -name 'libranks_gloo.so')
  rm "$plugin"
  if "$scratch/prefix/bin/ranks" run -n 2 --backend gloo -- "$scratch/build/consumer" --main \
    >"$scratch/missing.out" 2>&1; then
    echo "consumer ran on gloo without libranks_gloo.so" >&2
    exit 1
  fi
  grep -q "backend 'gloo' was built but its library cannot be loaded" "$scratch/missing.out" || {
    echo "no clear error without libranks_gloo.so:" >&2
    cat "$scratch/missing.out" >&2
    exit 1
  }
fi
