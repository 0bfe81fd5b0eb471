#!/bin/sh
# The default model: found above the binary (build*/tui/tokenloop inside a checkout),
# overridden by TOKENLOOP_MODEL, and a one-line error when there is none.
# usage: test_paths.sh PATHS_PROBE_BINARY
set -u
probe=$1
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
pass=0 fail=0
check() { if [ "$2" = "$3" ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "$1: got '$2', want '$3'" >&2; fi; }

mkdir -p "$t/co/assets/models/tl-mini-instruct" "$t/co/assets/tokenizer" "$t/co/build-x/tui" "$t/bare/bin"
echo '{}' > "$t/co/assets/models/tl-mini-instruct/config.json"
echo '{}' > "$t/co/assets/tokenizer/tokenizer.json"
cp "$probe" "$t/co/build-x/tui/tokenloop"
cp "$probe" "$t/bare/bin/tokenloop"

out=$(env -u TOKENLOOP_MODEL "$t/co/build-x/tui/tokenloop")
check "model above the binary" "$(echo "$out" | sed -n 's/^model //p')" "$t/co/assets/models/tl-mini-instruct"
check "tokenizer without tokenizer.json in the model" "$(echo "$out" | sed -n 's/^tokenizer //p')" "$t/co/assets/tokenizer"

echo '{}' > "$t/co/assets/models/tl-mini-instruct/tokenizer.json"
out=$(env -u TOKENLOOP_MODEL "$t/co/build-x/tui/tokenloop")
check "tokenizer of the model" "$(echo "$out" | sed -n 's/^tokenizer //p')" "$t/co/assets/models/tl-mini-instruct"

out=$(TOKENLOOP_MODEL=/somewhere/else "$t/co/build-x/tui/tokenloop")
check "TOKENLOOP_MODEL overrides" "$(echo "$out" | sed -n 's/^model //p')" "/somewhere/else"

out=$(TOKENLOOP_MODEL= "$t/co/build-x/tui/tokenloop")
check "empty TOKENLOOP_MODEL is unset" "$(echo "$out" | sed -n 's/^model //p')" "$t/co/assets/models/tl-mini-instruct"

out=$(env -u TOKENLOOP_MODEL "$t/bare/bin/tokenloop")
if [ -d /usr/local/share/tokenloop/models/tl-mini-instruct ]; then
  check "installed data dir" "$(echo "$out" | sed -n 's/^model //p')" /usr/local/share/tokenloop/models/tl-mini-instruct
else
  check "no model: one-line error" "$(echo "$out" | grep -c '^model-error assets/models/tl-mini-instruct: no bundled model found')" 1
fi

echo "model_paths: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
