#!/usr/bin/env bash
# ARM64 under emulation: cross-builds the kernel, engine, tokenizer and template test programs for
# aarch64 (Debian's cross gcc, the arm64 multiarch -dev packages, cmake/aarch64-linux-gnu.cmake) into
# build-arm64/ and runs them under qemu-aarch64 with the tolerances of the x86 runs. Three CPU
# models, each selecting another kernel set at run time (the log says which):
#   -cpu max         dotprod and bf16   -> neon-bf16    (BFDOT for bf16, SDOT for Q8_0/Q4_0)
#   -cpu cortex-a76  dotprod, no bf16   -> neon-dotprod (SDOT)
#   -cpu cortex-a72  neither            -> neon         (fp32 FMA only)
# Installs what it needs if missing (apt-get: root and a network the first time). Checks results
# only: emulation says nothing of speed.
#   scripts/test-arm64.sh [BUILD_DIR]        everything: test_kernels with every set forced under
#                                            max, each set under its own model; test_kquant and
#                                            the engine tests with neon-bf16, neon (a72) and
#                                            generic; the text tests
#   scripts/test-arm64.sh --deps             only install what it needs
#   scripts/test-arm64.sh --ci [BUILD_DIR]   the subset CI runs (about 3 minutes on 2 cores): the
#                                            three selections; test_kernels at 2-3 threads with
#                                            neon-bf16 (max) and neon (a72); test_kquant and the
#                                            quick engine tests with neon-bf16; the quick text tests
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ci=0 deps_only=0
if [[ ${1:-} == --ci ]]; then
  ci=1
  shift
elif [[ ${1:-} == --deps ]]; then   # install what it needs, then stop (test.sh, before its tests run)
  deps_only=1
  shift
fi
[[ ${1:-} != -* ]] || { echo "usage: $0 [--ci] [BUILD_DIR]" >&2; exit 2; }
build=${1:-$root/build-arm64}
start=$(date +%s)
say() { echo "test-arm64: $* ($(($(date +%s) - start)) s)"; }

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
((deps_only == 0)) || exit 0

# --- the cross build --------------------------------------------------------------------------
targets=(test_kernels test_kquant test_synthetic test_engine test_config test_template test_tokenizer
         test_tokenizer_conformance)
((ci)) || targets+=(test_topk test_async test_tokenizer_golden)
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" \
      -DTL_WERROR=ON -DTL_CUDA=OFF >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 1; }
cmake --build "$build" -j2 --target "${targets[@]}"
built=$(date +%s)
say "built ($(file -b "$build/tests/kernels/test_kernels" | cut -d, -f1-2))"

# qemu-user takes the CPU model from QEMU_CPU, so ctest's emulator (plain qemu-aarch64) gets it too.
# The multiarch libc6:arm64 loads the binaries, as cmake/aarch64-linux-gnu.cmake says why.
kt=$build/tests/kernels/test_kernels
declare -A want=([max]=neon-bf16 [cortex-a76]=neon-dotprod [cortex-a72]=neon)
for cpu in max cortex-a76 cortex-a72; do   # what each model makes the backend choose, no TL_CPU_ISA
  got=$(env -u TL_CPU_ISA QEMU_CPU=$cpu qemu-aarch64 "$kt" --default-set)
  echo "test-arm64: qemu -cpu $cpu: $got"
  [[ $got == "kernels: default set ${want[$cpu]}" ]] ||
    { echo "test-arm64: under -cpu $cpu the set chosen should be ${want[$cpu]}" >&2; exit 1; }
done

# test_kernels against the definition in double; each run prints its pass count.
kernels() {   # kernels CPU ARGS...
  local out
  echo "test-arm64: test_kernels${2:+ ${*:2}} under -cpu $1"
  out=$(QEMU_CPU=$1 qemu-aarch64 "$kt" "${@:2}" 2>&1) || { echo "$out"; exit 1; }
  echo "$out" | grep -E "^kernels: (the .* only|.*skipped|[0-9]+ passed)"
}
if ((ci)); then
  # 2 and 3 threads (the products under the threading cut-off run on one thread there too):
  # two thirds of the time; neon-bf16's Q8_0/Q4_0 kernels are neon-dotprod's, its f32/f16 neon's
  kernels max --threaded-only --set neon-bf16
  kernels cortex-a72 --threaded-only --set neon
else
  kernels max                              # every set: generic, neon, neon-dotprod, neon-bf16
  kernels cortex-a76 --set neon-dotprod
  kernels cortex-a72 --set neon
fi
say "kernel tests passed"

# kernels_kquant forces every set the model has itself (K-quant products, a few seconds), so it
# runs with the engine tests.
# ctest runs a test whose COMMAND is a target through CMAKE_CROSSCOMPILING_EMULATOR (qemu);
# engine_make_checkpoints, the fixture the engine tests need, is Python on the host.
# The tokenizer and template never call a kernel: once.
if ((ci)); then
  engine='^(kernels_kquant|kernels_synthetic|engine_step_api|engine_config)$'
  text='^(tokenizer|tokenizer_conformance|template_(goldens|micro|random|errors|fuzz|shared))$'
  runs=("max neon-bf16")
else
  engine='^(kernels_kquant|kernels_synthetic|engine_step_api|engine_topk|engine_config|engine_async)$'
  text='^(tokenizer|tokenizer_conformance|tokenizer_golden|template_(goldens|micro|random|errors|fuzz|shared))$'
  runs=("max neon-bf16" "cortex-a72 neon" "max generic")
fi
for run in "${runs[@]}"; do
  read -r cpu isa <<<"$run"
  # the set the engine tests get: chosen by the CPU model (TL_CPU_ISA only to force generic)
  if [[ $isa == generic ]]; then force=(TL_CPU_ISA=generic); else force=(-u TL_CPU_ISA); fi
  echo "test-arm64: engine tests under -cpu $cpu, $(env "${force[@]}" QEMU_CPU=$cpu qemu-aarch64 "$kt" --default-set)"
  (cd "$build" && env "${force[@]}" QEMU_CPU=$cpu ctest -R "$engine" --output-on-failure --timeout 1800)
done
(cd "$build" && QEMU_CPU=max ctest -R "$text" --output-on-failure --timeout 1800)
say "passed$( ((ci)) && echo " (--ci)"), $((built - start)) s of it building"
