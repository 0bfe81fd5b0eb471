#!/usr/bin/env bash
# Installs the Debian packages tokenloop needs to build and test, if any is missing.
set -euo pipefail
need=(build-essential cmake pkg-config libcjson-dev libpcre2-dev libutf8proc-dev libncurses-dev
      python3-numpy python3-jinja2 tmux locales clang libclang-rt-14-dev)
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
