#!/usr/bin/env bash
# The narration says what the session shows: a probability is the model's softmax as the
# Logits pane prints it (checked against `tokenloop generate --json` on the same request, not a
# literal), a token count is the tokenizer's (checked against `tokenloop tokenize`), and a
# generated newline reaches the narration as ↵, never as a line break.
set -u
exe=$1; probe=$2; model=$3
fails=0
fail() { echo "FAIL $*" >&2; fails=$((fails+1)); }
out=$("$exe" lesson check --dir "$probe" --model "$model" --lang en --verbose) || { echo "lesson check failed" >&2; exit 1; }
line() { printf '%s\n' "$out" | grep -A1 -- "^-- step $1\$" | tail -n 1; }
s1=$(line 1); s2=$(line 2)
# step 3's narration must be exactly one line: the line after it is the summary
s3=$(printf '%s\n' "$out" | grep -A2 -- '^-- step 3$' | tail -n 2)
gen=$("$exe" generate --model "$model" --prompt "What is the capital of Japan?" --greedy --max-new-tokens 1 --json 2>/dev/null)
want=$(printf '%s' "$gen" | python3 -c '
import json, sys
d = json.load(sys.stdin)
st = d["steps"][0]
p = next(c["prob"] for c in st["candidates"] if c["id"] == st["chosen"])
pc = p * 100
# tui/format.c Format_prob
s = "<0.01%" if pc < 0.01 else ">99.9%" if pc >= 99.95 and p < 1 else "100%" if p >= 1 else ("%.2f%%" % pc if pc < 1 else "%.1f%%" % pc)
print("P=%s T=%s F=100%% PIECE=%s" % (s, s, st["piece"]))')
[ "$s1" = "$want" ] || fail "probabilities: narration '$s1', generate --json gives '$want'"
case "$s1" in *"P=100%"*) fail "first_prob is the post-greedy 1, not the model's softmax: $s1";; esac
n=$("$exe" tokenize --model "$model" --text "Hello, world 2024!" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["ids"]))')
n5=$("$exe" tokenize --model "$model" --text ", 5" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["ids"]))')
case "$s2" in "N=$n PIECES=\`Hello\` \`,\` "*" S=$n5 SP=\`,\` \`␣\` \`5\`") ;; *) fail "token counts: '$s2' (tokenize: $n and $n5)";; esac
case "$s3" in "RAW="*"↵"*$'\n'"lesson probe: 3 steps ok") ;; *) fail "raw_text newlines: '$s3'";; esac
echo "narration: $fails failed"
[ "$fails" -eq 0 ]
