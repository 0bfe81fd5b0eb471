#!/usr/bin/env bash
# Configures and builds one build directory: scripts/build.sh [--tests 'CTEST ARGS'] DIR [cmake options...]
#   --tests 'CTEST ARGS'  build only tokenloop and the programs that the tests `ctest CTEST ARGS`
#                         selects name on their command lines (a target's file is named after it),
#                         e.g. --tests '-L tsan'; a program a test finds some other way is not built
#                         (that test then fails: ctest cannot find it)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
select=""
if [ "${1:-}" = --tests ]; then
  select=$2; shift 2
fi
dir=$1; shift
cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
targets=()   # cmake --build's --target and its names; none: everything
if [ -n "$select" ]; then
  mapfile -t targets < <("$root/scripts/test-targets.sh" "$dir" "$select")
  targets=(--target tokenloop "${targets[@]}")
  echo "build.sh: for ctest $select, only ${targets[*]:1}"
fi
cmake --build "$dir" -j"$(nproc)" "${targets[@]}" 2>&1 | grep -v '^\[' || true
test -x "$dir/cli/tokenloop"
