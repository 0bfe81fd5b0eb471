#!/bin/sh
# tokenloop template: renders match the Jinja2 goldens, --json ids parse special tokens,
# every bad input is one line on stderr with status 1 (bad data) or 2 (bad usage).
TL=$1; ROOT=$2; W=$3; PY=${4:-python3}
fail=0; pass=0
rm -rf "$W"; mkdir -p "$W"
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "cli.sh: FAILED: $*" >&2; }

# the goldens' user_only and special_chars message sets, and their Jinja2 renders
"$PY" - "$ROOT" "$W" <<'PY'
import json, sys
root, w = sys.argv[1], sys.argv[2]
cases = {c["name"]: c for c in json.load(open(root + "/tools/template-goldens/cases.json"))}
g = json.load(open(root + "/tests/template/goldens.json"))["renders"]
for name in ("user_only", "special_chars"):
    json.dump(cases[name]["messages"], open(f"{w}/{name}.json", "w"))
    for r in g:
        if r["template"] == "llama-3.1" and r["case"] == name:
            open(f"{w}/{name}-{int(r['add_generation_prompt'])}.txt", "w", newline="").write(r["text"])
PY
[ $? -eq 0 ] || { echo "cli.sh: $PY (json) is needed to read the goldens" >&2; exit 1; }

for c in user_only special_chars; do
  "$TL" template --model "$ROOT/assets/tokenizer" --messages "$W/$c.json" > "$W/out1" && cmp -s "$W/out1" "$W/$c-1.txt" && ok || bad "$c render"
  "$TL" template --model "$ROOT/assets/tokenizer" --messages "$W/$c.json" --no-generation-prompt > "$W/out0" && cmp -s "$W/out0" "$W/$c-0.txt" && ok || bad "$c --no-generation-prompt"
done
# --template FILE with --var for the tokens
"$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["chat_template"], end="")' "$ROOT/assets/tokenizer/tokenizer_config.json" > "$W/llama31.jinja"
"$TL" template --template "$W/llama31.jinja" --messages "$W/user_only.json" --var 'bos_token="<|begin_of_text|>"' > "$W/out2" && cmp -s "$W/out2" "$W/user_only-1.txt" && ok || bad "--template with --var bos_token"
"$TL" template --model "$ROOT/assets/tokenizer" --messages "$W/user_only.json" --var 'date_string="01 Jan 2025"' | grep -q "Today Date: 01 Jan 2025" && ok || bad "--var date_string"

# --json: text, ids with special tokens parsed (a user's <|eot_id|> becomes id 128009), content spans
"$TL" template --model "$ROOT/assets/tokenizer" --messages "$W/special_chars.json" --json > "$W/out.json" || bad "--json"
"$PY" - "$W/out.json" "$W/special_chars-1.txt" <<'PY' && ok || bad "--json contents"
import json, sys
o = json.load(open(sys.argv[1]))
want = open(sys.argv[2], newline="").read()
assert o["text"] == want, "text"
ids = o["ids"]
assert ids[0] == 128000 and ids.count(128009) == want.count("<|eot_id|>"), "eot ids"
b = o["text"].encode()
spans = o["content_spans"]
assert spans and all(0 <= s < e <= len(b) for s, e in spans)
assert any(b"<|eot_id|> <|im_end|>" in b[s:e] for s, e in spans), "user bytes marked"
assert not any(b"<|start_header_id|>" in b[s:e] for s, e in spans), "template bytes not marked"
PY

# errors
st() { "$@" > "$W/o" 2> "$W/e"; echo $?; }
echo '[{"role": "user", "content": "x"}]' > "$W/m.json"
printf '{{ raise_exception("Conversation roles must alternate!") }}' > "$W/raise.jinja"
printf 'ok\n{%% if %%}' > "$W/syntax.jinja"
[ "$(st "$TL" template --template "$W/raise.jinja" --messages "$W/m.json")" = 1 ] && grep -q "Conversation roles must alternate!" "$W/e" && ok || bad "raise_exception status 1"
[ "$(st "$TL" template --template "$W/syntax.jinja" --messages "$W/m.json")" = 1 ] && grep -q "template:2:" "$W/e" && ok || bad "syntax error status 1"
[ "$(st "$TL" template --template "$W/raise.jinja")" = 2 ] && ok || bad "missing --messages status 2"
[ "$(st "$TL" template --model "$ROOT/assets/tokenizer" --template "$W/raise.jinja" --messages "$W/m.json")" = 2 ] && ok || bad "--model with --template status 2"
TOKENLOOP_MODEL="$ROOT/assets/tokenizer" "$TL" template --messages "$W/user_only.json" > "$W/out3" && cmp -s "$W/out3" "$W/user_only-1.txt" && ok || bad "default model directory"
[ "$(st "$TL" template --template "$W/raise.jinja" --messages "$W/m.json" --var 'x=not json')" = 2 ] && ok || bad "bad --var status 2"
[ "$(st "$TL" template --template "$W/raise.jinja" --messages "$W/m.json" --frob)" = 2 ] && ok || bad "unknown option status 2"
echo '{"role": "user"}' > "$W/notarray.json"
[ "$(st "$TL" template --template "$W/raise.jinja" --messages "$W/notarray.json")" = 1 ] && grep -q "not a JSON array" "$W/e" && ok || bad "messages not an array status 1"
[ "$(st "$TL" template --template "$W/raise.jinja" --messages "$W/missing.json")" = 1 ] && ok || bad "missing messages file status 1"
# a bad messages file is blamed on the file, in what is wrong with it (not on the template)
printf '[{"role": "user", "content": "x"}] x' > "$W/trail.json"
printf '\357\273\277[{"role": "user", "content": "x"}]' > "$W/bom.json"
printf '[{"role": "user", "content": "\\ud800 x"}]' > "$W/surrogate.json"
printf '[{"role": "user", "content": "\\ud83d\\ude00"}]' > "$W/pair.json"
printf '[{"content": "x"}]' > "$W/norole.json"
for case in "trail:text after the JSON value at byte 34" "bom:starts with a UTF-8 byte-order mark" "surrogate:a lone surrogate escape" \
            "norole:[0].role is missing"; do
  f=${case%%:*}; want=${case#*:}
  for cmd in "template --model $ROOT/assets/tokenizer" "generate --model $ROOT/assets/models/tl-mini-instruct --max-new-tokens 1"; do
    [ "$(st "$TL" $cmd --messages "$W/$f.json")" = 1 ] &&
      grep -qF "$W/$f.json: messages: $want" "$W/e" && [ "$(wc -l < "$W/e")" -le 1 ] && ok ||
      { bad "${cmd%% *}: $f.json: expected '$want', got: $(cat "$W/e")"; }
  done
done
# a surrogate pair is one character, not a lone half
"$TL" template --model "$ROOT/assets/tokenizer" --messages "$W/pair.json" > "$W/o" && grep -q "$(printf '\360\237\230\200')" "$W/o" && ok || bad "a surrogate pair renders as its character"
[ "$(st "$TL" template --model "$W/nodir" --messages "$W/m.json")" = 1 ] && grep -q "tokenizer_config.json" "$W/e" && ok || bad "missing model dir status 1"
for f in "$W/e"; do [ "$(wc -l < "$f")" -le 1 ] || bad "stderr is one line"; done

echo "template_cli: $pass passed, $fail failed"
[ $fail -eq 0 ]
