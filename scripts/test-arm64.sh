#!/usr/bin/env bash
# ARM64 under emulation: cross-builds the kernel, engine, tokenizer and template test programs for
# aarch64 (Debian's cross gcc, the arm64 multiarch -dev packages, cmake/aarch64-linux-gnu.cmake) into
# build-arm64/ and runs them under qemu-aarch64, once with the NEON kernel set and once with the
# portable one (TL_CPU_ISA), with the tolerances of the x86 runs. Installs what it needs if missing
# (apt-get: root and a network the first time). Checks results only: emulation says nothing of speed.
#   scripts/test-arm64.sh [BUILD_DIR]      (default: build-arm64 in the checkout)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-arm64}
start=$(date +%s)

# --- what it needs -------------------------------------------------------------------------
host=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user cmake pkg-config)
arm=(libcjson-dev libpcre2-dev libutf8proc-dev libncurses-dev libmicrohttpd-dev)   # configure looks for all
missing=()
for p in "${host[@]}" "${arm[@]/%/:arm64}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "test-arm64: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- the cross build --------------------------------------------------------------------------
targets=(test_kernels test_synthetic test_engine test_topk test_config test_async
         test_tokenizer test_tokenizer_conformance test_tokenizer_golden test_template)
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" \
      -DTL_WERROR=ON -DTL_CUDA=OFF >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 1; }
cmake --build "$build" -j2 --target "${targets[@]}"
built=$(date +%s)
echo "test-arm64: built in $((built - start)) s ($(file -b "$build/tests/kernels/test_kernels" | cut -d, -f1-2))"

qemu=(qemu-aarch64)   # the multiarch libc6:arm64, as cmake/aarch64-linux-gnu.cmake says why
kt=$build/tests/kernels/test_kernels
# test_kernels forces every set this CPU has (under qemu: neon and generic) at 1-3 threads against
# the reference in double, so it runs once; first, the set chosen at run time with no TL_CPU_ISA.
"${qemu[@]}" "$kt" --default-set | tee "$build/default-set.log"
grep -qx "kernels: default set neon" "$build/default-set.log" ||
  { echo "test-arm64: the NEON set was not chosen at run time under qemu" >&2; exit 1; }
echo "test-arm64: test_kernels (every set forced)"
out=$("${qemu[@]}" "$kt") || { echo "$out"; exit 1; }
echo "$out" | grep -E "^kernels: (default set|.*skipped|[0-9]+ passed)"

# ctest runs a test whose COMMAND is a target through CMAKE_CROSSCOMPILING_EMULATOR (qemu);
# engine_make_checkpoints, the fixture the engine tests need, is Python on the host.
# The engine tests once per kernel set; the tokenizer and template never call a kernel: once.
engine='^(kernels_synthetic|engine_step_api|engine_topk|engine_config|engine_async)$'
text='^(tokenizer|tokenizer_conformance|tokenizer_golden|template_(goldens|micro|random|errors|fuzz|shared))$'
for isa in neon generic; do
  TL_CPU_ISA=$isa "${qemu[@]}" "$kt" --default-set
  (cd "$build" && TL_CPU_ISA=$isa ctest -R "$engine" --output-on-failure --timeout 1800)
done
(cd "$build" && ctest -R "$text" --output-on-failure --timeout 1800)
echo "test-arm64: passed in $(($(date +%s) - start)) s ($((built - start)) s of it building)"
