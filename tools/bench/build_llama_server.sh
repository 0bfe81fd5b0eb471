#!/usr/bin/env bash
# Builds llama.cpp's llama-server from the llama.cpp source inside llama-cpp-python's sdist (the
# version tools/bench/requirements.txt pins, checked by its sha256 on PyPI) into DIR (default
# /tmp/llama-server), and prints the binary's path. About 15 minutes on 2 cores, once.
#   tools/bench/serve_batch.py --llama-server "$(tools/bench/build_llama_server.sh)"
set -euo pipefail
dir=${1:-/tmp/llama-server}
ver=0.3.36
sha=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
bin=$dir/build/bin/llama-server
if [ ! -x "$bin" ]; then
  mkdir -p "$dir"
  url=$(curl -fsS https://pypi.org/simple/llama-cpp-python/ | grep -o "https://[^\"#]*llama_cpp_python-$ver.tar.gz" | head -1)
  curl -fsSL -o "$dir/sdist.tar.gz" "$url"
  echo "$sha  $dir/sdist.tar.gz" | sha256sum -c --quiet
  tar xzf "$dir/sdist.tar.gz" -C "$dir"
  src=$dir/llama_cpp_python-$ver/vendor/llama.cpp
  echo "tokenloop: building llama-server from $src" >&2
  cmake -S "$src" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON >&2
  cmake --build "$dir/build" --target llama-server -j"$(nproc)" >&2
fi
echo "$bin"
