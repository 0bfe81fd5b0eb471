#!/usr/bin/env bash
# The CUDA backend on a machine with an NVIDIA GPU (written for a lent H200: no network, CMake,
# nvcc, PyTorch and transformers installed). In about five minutes it:
#   1. configures and builds a fresh Release build,
#   2. runs the gpu tests (ctest -L gpu), then compute-sanitizer memcheck on test_cuda_ops,
#   3. runs `tokenloop bench --synthetic llama-3.1-8b --device cuda` (30-token prompt),
#   4. measures the device's copy bandwidth and transformers' generate() on the same shape
#      with random bf16 weights, TPOT timed the same way (synchronized, per token),
#   5. prints TTFT, TPOT median/p90, bytes/step, bandwidth, floor, TPOT/floor, transformers.
# The full log goes to $OUT/device-check.log ($OUT if set, else /tmp). Exit status: non-zero
# when the build or a gpu test fails (the benchmarks only report).
#   scripts/device-check.sh [BUILD_DIR]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp}
mkdir -p "$out"
log=$out/device-check.log
build=${1:-$(mktemp -d /tmp/tokenloop-device-XXXXXX)}
py=""
for c in python3 /usr/bin/python3 python; do
    if command -v "$c" >/dev/null && "$c" -c "import torch, transformers" 2>/dev/null; then py=$c; break; fi
done
: >"$log"
exec > >(tee -a "$log") 2>&1
t_start=$(date +%s)
say() { printf '\n== %s (t+%ds)\n' "$*" $(($(date +%s) - t_start)); }
status=0

say "device"
nvidia-smi --query-gpu=name,memory.total,clocks.max.memory,driver_version --format=csv 2>&1 || true
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$nvcc" --version | tail -2

say "configure + build ($build)"
if ! cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CUDA_COMPILER="$nvcc" >"$out/configure.log" 2>&1; then
    cat "$out/configure.log"
    echo "device-check: configure failed"
    exit 1
fi
grep -E "CUDA backend|CUDA compiler" "$out/configure.log" || true
# only what the checks run: the program and the gpu tests' executables
cmake --build "$build" -j16 --target tokenloop test_cuda_ops test_cuda_engine gpu_dump 2>&1 | grep -Ev '^\[|^-- ' || true
if [ ! -x "$build/tui/tokenloop" ] || [ ! -x "$build/tests/gpu/test_cuda_ops" ]; then
    echo "device-check: build failed"
    exit 1
fi
"$build/tui/tokenloop" --version

say "gpu tests"
if ! "$build/tests/gpu/gpu_dump" --probe; then
    nvidia-smi -L 2>&1 || true
    echo "device-check: no usable CUDA device: every gpu test would skip"
    status=1
fi
(cd "$build" && timeout 240 ctest -L gpu -j4 --output-on-failure) || { status=1; echo "device-check: gpu tests FAILED"; }

say "compute-sanitizer memcheck: test_cuda_ops"
san=""
for c in "$(command -v compute-sanitizer || true)" "$(dirname "$nvcc")/compute-sanitizer" \
         /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
    if [ -n "$c" ] && [ -x "$c" ]; then san=$c; break; fi
done
if [ -n "$san" ]; then
    timeout 180 "$san" --tool memcheck --leak-check full --error-exitcode 3 "$build/tests/gpu/test_cuda_ops" \
        || { status=1; echo "device-check: memcheck FAILED"; }
else
    echo "compute-sanitizer not found; skipped"
fi

say "tokenloop bench --synthetic llama-3.1-8b --device cuda --prompt-tokens 30 --new-tokens 64 --json"
bench_json=$out/bench-cuda.json
TL_CUDA_STATS=1 timeout 240 "$build/tui/tokenloop" bench --synthetic llama-3.1-8b --device cuda \
    --prompt-tokens 30 --new-tokens 64 --json >"$bench_json" || echo "device-check: bench failed"
cat "$bench_json"
# the trap, for the record: the same decode with graphs off (every kernel launched one by one)
TL_CUDA_STATS=1 TL_CUDA_GRAPH=0 timeout 240 "$build/tui/tokenloop" bench --synthetic llama-3.1-8b --device cuda \
    --prompt-tokens 30 --new-tokens 32 --json >"$out/bench-cuda-nograph.json" || echo "device-check: bench (no graph) failed"

say "copy bandwidth and transformers generate() on the 8B shape"
[ -n "$py" ] || { echo "no python with torch and transformers; skipped"; py=false; }
timeout 300 "$py" - "$bench_json" "$out/bench-cuda-nograph.json" "$out/transformers.json" <<'PY'
import json, statistics, sys, time

import torch

bench_path, nograph_path, hf_path = sys.argv[1:4]
dev = torch.device("cuda")
print("torch", torch.__version__, "on", torch.cuda.get_device_name(0))

# Device copy bandwidth: a 4 GiB device-to-device copy counts 4 GiB read + 4 GiB written.
n = 1 << 30
a = torch.empty(n, dtype=torch.float32, device=dev)
b = torch.empty_like(a)
a.fill_(1.0)
rates = []
for _ in range(12):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    b.copy_(a)
    e.record()
    e.synchronize()
    rates.append(2 * a.numel() * a.element_size() / (s.elapsed_time(e) / 1e3))
copy_bw = max(rates[2:])
del a, b
torch.cuda.empty_cache()
print(f"copy bandwidth: {copy_bw / 1e9:.0f} GB/s (best of 10, read + write)")

import transformers
from transformers import LlamaConfig, LlamaForCausalLM, LogitsProcessor, LogitsProcessorList

print("transformers", transformers.__version__)
# meta-llama/Llama-3.1-8B-Instruct's config.json values
cfg = LlamaConfig(
    vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
    num_attention_heads=32, num_key_value_heads=8, head_dim=128, hidden_act="silu",
    max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=500000.0,
    rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 8192},
    tie_word_embeddings=False, attention_bias=False, mlp_bias=False,
    bos_token_id=128000, eos_token_id=[128001, 128008, 128009], torch_dtype="bfloat16")
torch.manual_seed(0)
torch.set_default_dtype(torch.bfloat16)
t0 = time.perf_counter()
with torch.device(dev):
    model = LlamaForCausalLM(cfg)
model.eval()
torch.cuda.synchronize()
print(f"built the model with random bf16 weights in {time.perf_counter() - t0:.1f} s, "
      f"{sum(p.numel() for p in model.parameters()) / 1e9:.2f} B parameters")


class Clock(LogitsProcessor):
    """Called once per generated token, after its forward pass: a synchronized timestamp."""

    def __init__(self):
        self.stamps = []

    def __call__(self, input_ids, scores):
        torch.cuda.synchronize()
        self.stamps.append(time.perf_counter())
        return scores


ids = torch.randint(0, 128000, (1, 30), device=dev)
ids[0, 0] = 128000
new = 64
with torch.no_grad():
    model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=8, min_new_tokens=8,
                   do_sample=False, pad_token_id=0)  # warm-up
    clock = Clock()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new, min_new_tokens=new,
                   do_sample=False, pad_token_id=0, logits_processor=LogitsProcessorList([clock]))
hf_ttft = (clock.stamps[0] - t0) * 1e3
steps = [(b - a) * 1e3 for a, b in zip(clock.stamps, clock.stamps[1:])]
steps.sort()
hf = {"ttft_ms": hf_ttft, "tpot_ms_median": statistics.median(steps),
      "tpot_ms_p90": steps[min(len(steps) - 1, int(round(0.9 * (len(steps) - 1))))], "steps": len(steps),
      "copy_bandwidth_gbps": copy_bw / 1e9, "torch": torch.__version__, "transformers": transformers.__version__}
json.dump(hf, open(hf_path, "w"))


def load(p):
    try:
        return json.load(open(p))
    except Exception as e:  # the bench failed; say so in the table
        print(f"{p}: {e}")
        return None


tl, ng = load(bench_path), load(nograph_path)
print()
print("llama-3.1-8b shape, random bf16 weights, 30-token prompt, greedy")
print(f"{'':28}{'tokenloop cuda':>16}{'no graph':>12}{'transformers':>14}")
def row(name, fmt, a, b, c):
    f = lambda v: format(v, fmt) if isinstance(v, (int, float)) else "-"
    print(f"{name:28}{f(a):>16}{f(b):>12}{f(c):>14}")
g = lambda d, k: d.get(k) if d else None
row("TTFT (ms)", ".2f", g(tl, "ttft_ms"), g(ng, "ttft_ms"), hf["ttft_ms"])
row("TPOT median (ms)", ".3f", g(tl, "tpot_ms_median"), g(ng, "tpot_ms_median"), hf["tpot_ms_median"])
row("TPOT p90 (ms)", ".3f", g(tl, "tpot_ms_p90"), g(ng, "tpot_ms_p90"), hf["tpot_ms_p90"])
sb = g(tl, "step_bytes")
floor = sb / copy_bw * 1e3 if sb else None
row("bytes/step (GB)", ".3f", sb / 1e9 if sb else None, None, None)
row("copy bandwidth (GB/s)", ".0f", copy_bw / 1e9, None, None)
row("  tokenloop's own probe", ".0f", g(tl, "bandwidth_gbps"), None, None)
row("  floor by it (ms)", ".3f", g(tl, "floor_ms"), None, None)
row("  TPOT / that floor", ".3f", g(tl, "tpot_over_floor"), None, None)
row("floor (ms)", ".3f", floor, None, None)
row("TPOT / floor", ".3f", g(tl, "tpot_ms_median") / floor if floor else None,
    g(ng, "tpot_ms_median") / floor if floor and ng else None, hf["tpot_ms_median"] / floor if floor else None)
if tl and floor:
    ok1 = tl["tpot_ms_median"] / floor <= 1.25
    ok2 = tl["tpot_ms_median"] < hf["tpot_ms_median"]
    print(f"\nTPOT/floor <= 1.25: {'yes' if ok1 else 'NO'}; faster than transformers: {'yes' if ok2 else 'NO'}")
PY
[ $? -eq 0 ] || echo "device-check: the bandwidth/transformers step failed"

say "done: status $status, log in $log"
sleep 1   # let tee write the last lines
exit $status
