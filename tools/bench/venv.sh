#!/usr/bin/env bash
# Makes .venv-bench (Debian's python3) with the pinned peers of tools/bench/requirements.txt and
# prints its interpreter. llama-cpp-python compiles llama.cpp from its bundled source the first
# time (about 25 minutes on 2 cores); later runs reuse the venv.
#   "$(tools/bench/venv.sh)" tools/bench/compare_llamacpp.py
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv=$root/.venv-bench
req=$root/tools/bench/requirements.txt
want=$(sha256sum "$req" | cut -d" " -f1)
if [ "$(cat "$venv/.requirements-sha256" 2>/dev/null)" != "$want" ]; then
  echo "tokenloop: installing the benchmark peers into $venv ($req)" >&2
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  CMAKE_ARGS="-DGGML_NATIVE=ON" "$venv/bin/pip" install -q --disable-pip-version-check --no-input -r "$req" >&2
  echo "$want" >"$venv/.requirements-sha256"
fi
echo "$venv/bin/python"
