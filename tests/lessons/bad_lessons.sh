#!/usr/bin/env bash
# Every malformed lesson file is rejected with one line naming the file (and the step and field
# where there is one) and exit status 1 — no crash, no partial run.
set -u
exe=$1; bad=$2; model=$3
fails=0; passes=0
expect_error() {   # file, pattern the message must contain
  local f=$1 pat=$2 dir out rc
  dir=$(mktemp -d); cp "$bad/$f" "$dir/"
  out=$("$exe" lesson check --dir "$dir" --model "$model" 2>&1 >/dev/null); rc=$?
  rm -rf "$dir"
  local lines; lines=$(printf '%s\n' "$out" | grep -c .)
  if [ "$rc" -eq 1 ] && [ "$lines" -eq 1 ] && [[ "$out" == tokenloop:* ]] && [[ "$out" == *"$f"* ]] && [[ "$out" == *"$pat"* ]]; then
    passes=$((passes+1))
  else
    fails=$((fails+1)); echo "FAIL $f: rc=$rc lines=$lines: $out" >&2
  fi
}
expect_error malformed.json "not valid JSON"
expect_error unknown-action.json 'step 2: action "teleport": unknown action'
expect_error missing-vi.json 'step 1: field "say": missing the Vietnamese text'
expect_error unknown-field.json 'expectation "speed_of_light": unknown field'
expect_error wrong-type.json 'action "max_new_tokens": wrong type'
expect_error wrong-tokenize.json 'action "tokenize": wrong type'
expect_error unknown-op.json 'unknown comparison'
expect_error no-steps.json 'steps: missing or empty'
expect_error unknown-placeholder.json 'unknown field near "{answer_of_everything}'
expect_error failing-expectation.json 'step 1: generated is 3, expected 4'
expect_error unknown-dtype.json 'step 2: action "dtype": expected bf16, f16, f32, q8_0, q4_0 or file'
expect_error unknown-dtype-field.json 'step 1: expectation "dtype.q2_k.step_mb": unknown field (dtype.D.X'
expect_error unknown-dtype-compare.json 'expectation "dtype.q8_0.step_mb": compares with an unknown field'
# a dtype that never ran: its figures are unknown, and a check on them fails saying so
expect_error failing-dtype.json 'step 1: dtype.q4_0.step_mb is nan, expected gt 0'
# usage errors: status 2
"$exe" lesson frobnicate >/dev/null 2>&1; rc=$?; if [ $rc -eq 2 ]; then passes=$((passes+1)); else fails=$((fails+1)); echo "FAIL usage rc=$rc" >&2; fi
"$exe" lesson check no-such-lesson --model "$model" >/dev/null 2>&1; rc=$?; if [ $rc -eq 2 ]; then passes=$((passes+1)); else fails=$((fails+1)); echo "FAIL unknown id rc=$rc" >&2; fi
"$exe" lesson check --lang fr >/dev/null 2>&1; rc=$?; if [ $rc -eq 2 ]; then passes=$((passes+1)); else fails=$((fails+1)); echo "FAIL lang rc=$rc" >&2; fi
echo "bad_lessons: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
