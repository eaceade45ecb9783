#!/usr/bin/env bash
# Runs the fuzz targets for a long while: tools/fuzz.sh [SECONDS_EACH] [BUILD_DIR]
# (default 600 s each, ./build). New inputs go to BUILD_DIR/tests/fuzz/corpus_<target>; a crash,
# leak, undefined behaviour or an allocation over 64 MiB stops the run with the input saved as
# crash-*/oom-* in the current directory. Needs the targets built (clang++ with libFuzzer:
# tools/setup.sh installs it; cmake builds them when it finds it).
set -euo pipefail
seconds=${1:-600}
build=${2:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
for target in store_wire object_decode python_plain; do
  binary="$build/tests/fuzz/${target}_fuzz"
  [[ -x $binary ]] || { echo "fuzz.sh: $binary is not built" >&2; exit 2; }
  mkdir -p "$build/tests/fuzz/corpus_$target"
  echo "fuzz.sh: $target for $seconds s"
  environment=()
  # CPython, embedded there, allocates through malloc where the limit sees it, and its
  # interpreter is never finalized (not a leak of the code under test).
  [[ $target == python_plain ]] && environment=(ASAN_OPTIONS=detect_leaks=0 PYTHONMALLOC=malloc)
  env "${environment[@]}" "$binary" -max_total_time="$seconds" -max_len=65536 -malloc_limit_mb=64 -rss_limit_mb=1024 \
    -print_final_stats=1 "$build/tests/fuzz/corpus_$target" "$root/tests/fuzz/corpus/$target"
done
