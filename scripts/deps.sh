#!/usr/bin/env bash
# Installs the Debian packages tokenloop needs to build and test, if any is missing.
set -euo pipefail
need=(build-essential cmake pkg-config libcjson-dev libpcre2-dev libutf8proc-dev libncurses-dev
      libmicrohttpd-dev chromium python3-numpy python3-jinja2 python3-venv tmux locales clang libclang-rt-14-dev)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "tokenloop: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Python references from PyPI, in a virtual environment of Debian's python3 (the one first on
# PATH may be another interpreter): made again only when scripts/requirements-hf.txt changed.
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$root/.venv-hf
req=$root/scripts/requirements-hf.txt
want=$(grep -v "^#" "$req" | sha256sum | cut -d" " -f1)
if [ "$(cat "$venv/.requirements-sha256" 2>/dev/null)" != "$want" ]; then
  echo "tokenloop: installing the Python references into $venv (scripts/requirements-hf.txt)" >&2
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --no-input -r "$req"
  echo "$want" >"$venv/.requirements-sha256"
fi
