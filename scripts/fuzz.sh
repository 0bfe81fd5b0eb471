#!/usr/bin/env bash
# Runs one libFuzzer harness of tests/fuzz: scripts/fuzz.sh NAME SECONDS [BUILD_DIR]
#   NAME: safetensors model_dir config tok_json tokenizer_json encode decode template messages
#         lesson (or "all", one after the other). Builds BUILD_DIR (default build-fuzz) with
#         clang, libFuzzer, ASan and UBSan first. The corpus grows in BUILD_DIR/tests/fuzz/work/NAME
#         and is kept between runs; a crasher lands in .../artifacts and fails the run: minimise it
#         (the binary with -minimize_crash=1) and commit it to tests/fuzz/regress/NAME/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
name=${1:?usage: scripts/fuzz.sh NAME SECONDS [BUILD_DIR]}
secs=${2:?usage: scripts/fuzz.sh NAME SECONDS [BUILD_DIR]}
dir=${3:-$root/build-fuzz}
CC=clang cmake -S "$root" -B "$dir" -DTL_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTL_FUZZ_SECONDS="$secs" >/dev/null
cmake --build "$dir" -j"$(nproc)" 2>&1 | grep -v '^\[' || true
run() {
  local h=$1
  test -x "$dir/tests/fuzz/fuzz_$h" || { echo "scripts/fuzz.sh: no harness '$h' (see tests/fuzz)" >&2; exit 2; }
  mapfile -t seeds <"$dir/tests/fuzz/seeds_$h.txt"
  bash "$root/tests/fuzz/run.sh" "$dir/tests/fuzz/fuzz_$h" "$secs" "$dir/tests/fuzz/work/$h" "${seeds[@]}"
}
if [ "$name" = all ]; then
  for f in "$dir"/tests/fuzz/seeds_*.txt; do h=${f##*/seeds_}; run "${h%.txt}"; done
else
  run "$name"
fi
