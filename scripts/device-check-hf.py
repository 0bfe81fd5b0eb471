"""transformers' generate() on the Llama 3.1 8B shape with random bf16 weights, for
scripts/device-check.sh: eager first (written out at once), then compiled (torch.compile of the
forward with a static cache, mode reduce-overhead), each timed as tokenloop's bench times
decode: a synchronized timestamp after every generated token's forward pass. Also a read
bandwidth figure from torch (x.sum() of a 4 GiB bf16 tensor). Writes JSON to argv[1] after
every stage, so a timeout keeps what finished."""
import json
import statistics
import sys
import time

import torch
import transformers
from transformers import LlamaConfig, LlamaForCausalLM, LogitsProcessor, LogitsProcessorList

out_path = sys.argv[1]
res = {"torch": torch.__version__, "transformers": transformers.__version__}


def save():
    with open(out_path, "w") as f:
        json.dump(res, f)


dev = torch.device("cuda")
print("torch", torch.__version__, "transformers", transformers.__version__, "on", torch.cuda.get_device_name(0))

# read bandwidth: a reduction reads every byte once
x = torch.ones(1 << 31, dtype=torch.bfloat16, device=dev)
rates = []
for _ in range(8):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    x.sum()
    e.record()
    e.synchronize()
    rates.append(x.numel() * x.element_size() / (s.elapsed_time(e) / 1e3))
res["torch_read_gbps"] = max(rates[2:]) / 1e9
del x
torch.cuda.empty_cache()
save()

# meta-llama/Llama-3.1-8B-Instruct's config.json values
cfg = LlamaConfig(
    vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
    num_attention_heads=32, num_key_value_heads=8, head_dim=128, hidden_act="silu",
    max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=500000.0,
    rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 8192},
    tie_word_embeddings=False, attention_bias=False, mlp_bias=False,
    bos_token_id=128000, eos_token_id=[128001, 128008, 128009])
torch.manual_seed(0)
t0 = time.perf_counter()
torch.set_default_dtype(torch.bfloat16)
with torch.device(dev):
    model = LlamaForCausalLM(cfg)
model.eval()
torch.cuda.synchronize()
print(f"model with random bf16 weights built in {time.perf_counter() - t0:.1f} s")


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
NEW = 64


def timed(**kw):
    clock = Clock()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW, min_new_tokens=NEW,
                   do_sample=False, pad_token_id=0, logits_processor=LogitsProcessorList([clock]), **kw)
    steps = sorted((b - a) * 1e3 for a, b in zip(clock.stamps, clock.stamps[1:]))
    return {"ttft_ms": (clock.stamps[0] - t0) * 1e3, "tpot_ms_median": statistics.median(steps),
            "tpot_ms_p90": steps[min(len(steps) - 1, int(round(0.9 * (len(steps) - 1))))], "steps": len(steps)}


with torch.no_grad():
    try:
        model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=8, min_new_tokens=8,
                       do_sample=False, pad_token_id=0)   # warm-up
        res["eager"] = timed()
        print("eager:", res["eager"])
    except Exception as e:   # report, go on to the compiled run
        res["eager_error"] = f"{type(e).__name__}: {e}"[:300]
        print("eager failed:", res["eager_error"])
    save()
    try:
        t0 = time.perf_counter()
        model.forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)
        for _ in range(2):   # compiles (prefill and decode shapes), then CUDA graphs settle
            model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=8, min_new_tokens=8,
                           do_sample=False, pad_token_id=0, cache_implementation="static")
        res["compile_s"] = time.perf_counter() - t0
        res["compiled"] = timed(cache_implementation="static")
        print(f"compiled (warm-up and compile {res['compile_s']:.0f} s):", res["compiled"])
    except Exception as e:
        res["compiled_error"] = f"{type(e).__name__}: {e}"[:300]
        print("compiled failed:", res["compiled_error"])
    save()
