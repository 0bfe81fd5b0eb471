#!/usr/bin/env bash
# Rebuilds tests/tokenizer/golden-llama3.json with Hugging Face's tokenizers and @lenml/tokenizers
# (pinned, from npm) and the tokenizer in assets/tokenizer. Needs node and npm; the test needs neither.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund @lenml/tokenizers@3.7.2 tokenizers@0.23.2)
NODE_PATH="$work/node_modules" node "$here/make-goldens.js" "$root/assets/tokenizer" \
  "$root/tests/tokenizer/golden-llama3.json"
