#!/usr/bin/env bash
# The build targets that the tests `ctest CTEST ARGS` selects need: every program under BUILD that
# ctest's listing names (the test commands, and the programs not built yet: "Could not find
# executable ..."), kept when it is a target of BUILD (a target's file is named after it).
# One name a line; `tokenloop` is not among them (callers build it anyway).
#   scripts/test-targets.sh BUILD 'CTEST ARGS'      (BUILD configured already)
# scripts/build.sh --tests and scripts/device-check.sh build from it, so the programs a test
# selection runs cannot drift from the programs built for it.
set -euo pipefail
dir=$(cd "$1" && pwd)
select=$2
known=$(cmake --build "$dir" --target help | sed -n 's/^\.\.\. \([^ ]*\).*/\1/p')
# shellcheck disable=SC2086  # CTEST ARGS are words
(cd "$dir" && ctest -N -V $select 2>&1) | grep -o "$dir/[^\" ]*" | xargs -r -n1 basename |
  sort -u | grep -Fx -f <(echo "$known") | grep -vx tokenloop || true
