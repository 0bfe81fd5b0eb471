#!/bin/sh
# Where tokenloop finds the bundled model, tokenizer and lessons (core/include/tokenloop/paths.h).
#   test_paths.sh probe PATHS_PROBE RECORDED_SRC RECORDED_DATA DATA_REL
#     the lookup order, on copies of paths_probe placed in fake checkouts and installs; its
#     recorded source tree and data directory are the two folders named, filled here
#   test_paths.sh out-of-tree CMAKE SOURCE_DIR WORKFILE
#     a copy of the tree as WORK/src, built in WORK/b, WORK a new temporary folder (outside
#     every checkout: the binary looks for the data in each folder above it): the build finds
#     the data through the recorded source tree. WORK is left for the installed mode, its path
#     written to WORKFILE.
#   test_paths.sh installed CMAKE WORKFILE
#     cmake --install of the out-of-tree mode's build (one build serves both: about 8 s of
#     compiling, unoptimized), run after the copy and the build are deleted: it finds what it
#     installed under --prefix
set -u
mode=$1; shift
t=$(mktemp -d)
pass=0 fail=0
check() { if [ "$2" = "$3" ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $1: got '$2', want '$3'" >&2; fi; }
ok() { pass=$((pass+1)); }
bad() { fail=$((fail+1)); echo "FAIL $1" >&2; }
field() { echo "$1" | sed -n "s/^$2  *//p"; }
finish() { echo "model_paths $mode: $pass passed, $fail failed"; [ "$fail" -eq 0 ]; }
unset TOKENLOOP_MODEL TOKENLOOP_LESSONS

# A fake data item: DIR with its marker file.
fake() { mkdir -p "$1" && echo '{}' > "$1/$2"; }

probe_mode() {
  probe=$1 src=$2 data=$3 rel=$4
  trap 'rm -rf "$t" "$src" "$data"' EXIT
  rm -rf "$src" "$data"
  co=$t/co inst=$t/inst
  fake "$co/assets/models/tl-mini-instruct" config.json
  fake "$co/assets/tokenizer" tokenizer.json
  fake "$co/lessons" README.md
  mkdir -p "$co/build-x/cli" "$inst/bin" "$t/bare/bin" "$t/lessons"
  cp "$probe" "$co/build-x/cli/tokenloop"
  cp "$probe" "$inst/bin/tokenloop"
  cp "$probe" "$t/bare/bin/tokenloop"
  idata=$(cd "$inst/bin" && mkdir -p "$rel" && cd "$rel" && pwd)
  fake "$idata/models/tl-mini-instruct" config.json
  fake "$idata/tokenizer" tokenizer.json
  fake "$idata/lessons" README.md
  echo x > "$t/lessons/1.json"   # a lessons folder without README.md is not the lessons

  out=$("$co/build-x/cli/tokenloop")
  check "checkout above the binary: model" "$(field "$out" model)" "$co/assets/models/tl-mini-instruct"
  check "checkout: tokenizer when the model has no tokenizer.json" "$(field "$out" tokenizer)" "$co/assets/tokenizer"
  check "checkout: lessons" "$(field "$out" lessons)" "$co/lessons"
  echo '{}' > "$co/assets/models/tl-mini-instruct/tokenizer.json"
  out=$("$co/build-x/cli/tokenloop")
  check "checkout: the model's own tokenizer" "$(field "$out" tokenizer)" "$co/assets/models/tl-mini-instruct"

  out=$(TOKENLOOP_MODEL=/somewhere/else TOKENLOOP_LESSONS=$t/co/lessons "$t/bare/bin/tokenloop")
  check "TOKENLOOP_MODEL is taken as given" "$(field "$out" model)" /somewhere/else
  check "TOKENLOOP_LESSONS" "$(field "$out" lessons)" "$t/co/lessons"
  out=$(TOKENLOOP_MODEL= TOKENLOOP_LESSONS= "$co/build-x/cli/tokenloop")
  check "empty TOKENLOOP_MODEL is unset" "$(field "$out" model)" "$co/assets/models/tl-mini-instruct"
  check "empty TOKENLOOP_LESSONS is unset" "$(field "$out" lessons)" "$co/lessons"
  out=$(TOKENLOOP_LESSONS=$t/nowhere "$co/build-x/cli/tokenloop")
  check "TOKENLOOP_LESSONS not a folder: named" "$(field "$out" lessons-error)" "$t/nowhere: \$TOKENLOOP_LESSONS is not a folder"

  out=$("$inst/bin/tokenloop")
  check "install layout next to the binary: model" "$(field "$out" model)" "$idata/models/tl-mini-instruct"
  check "install layout: tokenizer" "$(field "$out" tokenizer)" "$idata/tokenizer"
  check "install layout: lessons" "$(field "$out" lessons)" "$idata/lessons"

  # the recorded source tree: found from a binary with nothing around it, but an install's own
  # data wins over it (an installed copy must not change when the checkout does)
  fake "$src/assets/models/tl-mini-instruct" config.json
  fake "$src/assets/tokenizer" tokenizer.json
  fake "$src/lessons" README.md
  out=$("$t/bare/bin/tokenloop")
  check "recorded source tree: model" "$(field "$out" model)" "$src/assets/models/tl-mini-instruct"
  check "recorded source tree: tokenizer" "$(field "$out" tokenizer)" "$src/assets/tokenizer"
  check "recorded source tree: lessons" "$(field "$out" lessons)" "$src/lessons"
  out=$("$inst/bin/tokenloop")
  check "install layout before the source tree" "$(field "$out" model)" "$idata/models/tl-mini-instruct"

  # the configured data directory, when the source tree is gone
  rm -rf "$src"
  fake "$data/models/tl-mini-instruct" config.json
  fake "$data/tokenizer" tokenizer.json
  fake "$data/lessons" README.md
  out=$("$t/bare/bin/tokenloop")
  check "configured data dir: model" "$(field "$out" model)" "$data/models/tl-mini-instruct"
  check "configured data dir: tokenizer" "$(field "$out" tokenizer)" "$data/tokenizer"
  check "configured data dir: lessons" "$(field "$out" lessons)" "$data/lessons"

  # nothing anywhere: one line naming what was looked for and every place looked in
  rm -rf "$data"
  out=$("$t/bare/bin/tokenloop")
  want="assets/models/tl-mini-instruct: no bundled model found (looked in $t/bare/share/tokenloop, in each folder from $t/bare/bin up, in the source tree $src and in $data); set TOKENLOOP_MODEL or pass --model"
  check "no model: one-line error" "$(field "$out" model-error)" "$want"
  check "no tokenizer: error" "$(field "$out" tokenizer-error | cut -d'(' -f1)" "assets/tokenizer: no bundled tokenizer found "
  check "no lessons: error" "$(field "$out" lessons-error | cut -d'(' -f1)" "lessons: no lessons found "
  check "one line each" "$(echo "$out" | wc -l)" 3
  finish
}

# Copies the source tree without its top-level dot folders (.git; .venv-hf, the 5.6 GB of
# scripts/deps.sh's Python references, took 35 s to copy) and build directories (any folder with
# a CMakeCache.txt).
copy_tree() {
  mkdir -p "$2" && tar -C "$1" --exclude='./.*' --exclude-tag-all=CMakeCache.txt -cf - . | tar -C "$2" -xf -
}

# Configures without CUDA (nothing here needs it, and nvcc would take most of the time) and
# builds only the program, unoptimized: where it looks for its data does not depend on the
# optimizer, and -O0 compiled in 8 s what Release took 20 s for (the unrolled SIMD kernels).
build() {
  bsrc=$1 bdir=$2; shift 2
  "$cmake" -S "$bsrc" -B "$bdir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG=-O0 -DTL_CUDA=OFF "$@" \
    > "$t/configure.log" 2>&1 &&
    "$cmake" --build "$bdir" -j2 --target tokenloop > "$t/build.log" 2>&1 ||
    { cat "$t/configure.log" "$t/build.log" | tail -20 >&2; bad "build $bdir"; finish; exit 1; }
}

# Runs the program with no data option from /, as a user would; checks each command works and
# uses the data under ROOT (MODEL: the model folder it must report).
use_data() {
  exe=$1 model=$2 label=$3
  out=$(cd / && "$exe" generate --prompt hi 2> "$t/err") && [ -n "$out" ] && ok ||
    bad "$label: generate --prompt hi: $(cat "$t/err")"
  out=$(cd / && "$exe" info 2>&1)
  check "$label: info without --model" "$(field "$out" model)" "$model"
  out=$(cd / && "$exe" lesson check 1-template 2>&1)
  check "$label: lesson check (the lessons on the bundled model)" "$(echo "$out" | tail -1)" "lessons: 1 passed, 0 failed"
  out=$(cd / && "$exe" lesson list 2>&1)
  check "$label: lesson list" "$(echo "$out" | grep -c '^ *[1-7]-')" 7
  out=$(cd / && "$exe" tokenize --text hi --json 2>&1)
  check "$label: tokenize with the bundled tokenizer" "$(echo "$out" | grep -c '"ids":\[6151\]')" 1
  printf '[{"role":"user","content":"hi"}]' > "$t/m.json"
  out=$(cd / && "$exe" template --messages "$t/m.json" 2>&1)
  check "$label: template with the bundled chat template" "$(echo "$out" | grep -c '^<|begin_of_text|><|start_header_id|>system')" 1
}

out_of_tree_mode() {
  cmake=$1 src=$2 workfile=$3
  trap 'rm -rf "$t"' EXIT
  [ -f "$workfile" ] && rm -rf "$(cat "$workfile")"   # a run whose installed mode never came
  work=$(mktemp -d) && echo "$work" > "$workfile" || { bad "cannot write $workfile"; finish; exit 1; }
  copy_tree "$src" "$work/src"
  # the configured prefix is never installed to: the installed copy must find its data from
  # where it is
  build "$work/src" "$work/b" -DCMAKE_INSTALL_PREFIX="$work/configured-prefix"
  use_data "$work/b/cli/tokenloop" "$work/src/assets/models/tl-mini-instruct" "out-of-tree build"
  finish
}

installed_mode() {
  cmake=$1 workfile=$2
  work=$(cat "$workfile" 2>/dev/null)
  trap 'chmod -R u+rwx "$t" 2>/dev/null; rm -rf "$t" ${work:+"$work"} "$workfile"' EXIT
  [ -x "$work/b/cli/tokenloop" ] || { bad "no build in $work/b (model_paths_out_of_tree makes it)"; finish; exit 1; }
  "$cmake" --install "$work/b" --prefix "$t/p" > "$t/install.log" 2>&1 || { cat "$t/install.log" >&2; bad install; }
  for f in bin/tokenloop share/tokenloop/models/tl-mini-instruct/model.safetensors \
           share/tokenloop/tokenizer/tokenizer.json share/tokenloop/lessons/1-template.json; do
    [ -f "$t/p/$f" ] && ok || bad "installed $f"
  done
  rm -rf "$work/src" "$work/b"
  use_data "$t/p/bin/tokenloop" "$t/p/share/tokenloop/models/tl-mini-instruct" "installed, tree deleted"

  mv "$t/p/share/tokenloop" "$t/moved"
  out=$(cd / && "$t/p/bin/tokenloop" info 2>&1); rc=$?
  check "no data: info exit status" "$rc" 2
  check "no data: one line" "$(echo "$out" | wc -l)" 1
  check "no data: names the model and where it looked" \
    "$(echo "$out" | grep -c "^tokenloop: .*assets/models/tl-mini-instruct: no bundled model found (looked in $t/p/share/tokenloop, .* the source tree $work/src and in $work/configured-prefix/share/tokenloop)")" 1
  finish
}

case $mode in
  probe) probe_mode "$@" ;;
  out-of-tree) out_of_tree_mode "$@" ;;
  installed) installed_mode "$@" ;;
  *) echo "test_paths.sh: $mode: unknown mode" >&2; exit 2 ;;
esac
