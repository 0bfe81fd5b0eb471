"""tokenloop bench on the tiny synthetic shape: the JSON's figures agree with each other and
with NumPy (median, 90th percentile, floor = bytes / bandwidth), and each bad usage gets one
line on stderr and the documented exit status. Figures are not compared with any speed."""
import json
import os
import subprocess
import sys

import numpy as np

exe = sys.argv[1]
failed = passed = 0


def check(cond, what):
    global failed, passed
    if cond:
        passed += 1
    else:
        failed += 1
        print("check failed:", what, file=sys.stderr)


def run(*args):
    return subprocess.run([exe, "bench", *args], capture_output=True, text=True, timeout=120)


r = run("--synthetic", "tiny", "--prompt-tokens", "9", "--new-tokens", "7", "--threads", "2", "--json")
check(r.returncode == 0, "tiny run exits 0: " + r.stderr)
if r.returncode == 0:
    j = json.loads(r.stdout)
    t = np.array(j["tpot_ms"], dtype=np.float64)
    check(len(t) == 7 and j["new_tokens"] == 7 and j["prompt_tokens"] == 9, "counts")
    check(j["synthetic"] is True and j["model"] == "tiny" and j["dtype"] == "bf16", "model fields")
    check(j["device"] == "cpu" and j["threads"] == 2, "device and threads")
    check(j["kv_cache"] == "fp32", "the default KV cache")
    # the default precision where the kernels round x (AVX-512 BF16, unless TL_CPU_ISA forces
    # another set), else exact
    with open("/proc/cpuinfo") as f:
        bf16_set = " avx512_bf16" in f.read() and os.environ.get("TL_CPU_ISA", "") in ("", "avx512bf16")
    check(j["precision"] == ("mixed" if bf16_set else "exact"), "precision %s" % j["precision"])
    check(np.isclose(j["tpot_ms_median"], np.median(t), rtol=1e-9), "median")
    check(np.isclose(j["tpot_ms_p90"], np.percentile(t, 90), rtol=1e-9), "p90")
    check(j["ttft_ms"] > 0 and (t > 0).all(), "positive times")
    check(j["tpot_ms_min"] == t.min(), "best step")
    check(j["load_average"] is None or j["load_average"] >= 0, "load average")
    # tiny: hidden 256, 2 layers, kv_dim 64, vocab 1000, untied, bf16
    d, ff, q, kv, V, L = 256, 688, 256, 64, 1000, 2
    layer = 2 * d + q * d + 2 * kv * d + d * q + 3 * ff * d
    weights = 2 * (L * layer + d + V * d + d)   # layers, final norm, lm_head, one embedding row
    check(j["weight_bytes"] == weights, "weight bytes %s vs %s" % (j["weight_bytes"], weights))
    # KV cache read by decode step i (at position 9 + i): 2 * layers * (pos + 1) rows of fp32
    kv_bytes = np.mean([2 * L * (9 + i + 1) * kv * 4 for i in range(7)])
    check(np.isclose(j["step_bytes"], weights + kv_bytes, rtol=1e-12), "step bytes %s" % j["step_bytes"])
    # the floor: a read of the same weights beside each step, scaled to that step's bytes
    f = np.array(j["floor_ms_steps"], dtype=np.float64)
    check(len(f) == 7 and (f > 0).all(), "a floor per step")
    check(np.isclose(j["floor_ms"], np.median(f), rtol=1e-9), "floor = median of the steps' floors")
    check(np.isclose(j["tpot_over_floor"], np.median(t / f), rtol=1e-9), "ratio = median of the pairs")
    check(np.isclose(j["bandwidth_gbps"], j["step_bytes"] / j["floor_ms"] / 1e6, rtol=1e-9), "bandwidth")
    check(j["probe_gbps"] == max(j["bandwidth_gbps_before"], j["bandwidth_gbps_after"]), "best probe")
    check(np.isclose(j["probe_floor_ms"], j["step_bytes"] / (j["probe_gbps"] * 1e9) * 1e3, rtol=1e-9),
          "probe floor")
    check(np.isclose(j["tpot_over_probe_floor"], j["tpot_ms_median"] / j["probe_floor_ms"], rtol=1e-9),
          "probe ratio")

# a bf16 KV cache: the same weights, the cache's rows in 2 bytes instead of 4
r = run("--synthetic", "tiny", "--prompt-tokens", "9", "--new-tokens", "7", "--threads", "2", "--kv-cache", "bf16",
        "--json")
check(r.returncode == 0, "kv bf16 run exits 0: " + r.stderr)
if r.returncode == 0:
    j = json.loads(r.stdout)
    kv_bytes = np.mean([2 * L * (9 + i + 1) * kv * 2 for i in range(7)])
    check(j["kv_cache"] == "bf16", "kv_cache field")
    check(np.isclose(j["step_bytes"], weights + kv_bytes, rtol=1e-12), "bf16 step bytes %s" % j["step_bytes"])

r = run("--synthetic", "tiny", "--new-tokens", "2", "--prompt-tokens", "3")
check(r.returncode == 0 and "TPOT / floor" in r.stdout and "TTFT" in r.stdout, "text output")

# the precision flags: named in the JSON and in the text
r = run("--synthetic", "tiny", "--prompt-tokens", "3", "--new-tokens", "2", "--exact", "--json")
check(r.returncode == 0 and json.loads(r.stdout)["precision"] == "exact", "--exact: " + r.stderr)
r = run("--synthetic", "tiny", "--prompt-tokens", "3", "--new-tokens", "2", "--exact")
check(r.returncode == 0 and "precision      exact: fp32 activations in every product" in r.stdout, "--exact text")

r = run("--help")
check(r.returncode == 0 and "--synthetic" in r.stdout, "--help")

bad = [
    ((), 2, "exactly one of"),
    (("--synthetic", "tiny", "--model", "/nonexistent"), 2, "exactly one of"),
    (("--synthetic", "llama-9b"), 2, "llama-9b"),
    (("--synthetic", "tiny", "--prompt-tokens", "0"), 2, "--prompt-tokens"),
    (("--synthetic", "tiny", "--new-tokens", "x"), 2, "--new-tokens"),
    (("--synthetic", "tiny", "--threads", "-1"), 2, "--threads"),
    (("--synthetic", "tiny", "--threads"), 2, "--threads"),
    (("--synthetic", "tiny", "--device", "tpu"), 2, "--device"),
    (("--synthetic", "tiny", "--frobnicate"), 2, "--frobnicate"),
    (("--synthetic", "tiny", "--prompt-tokens", "2000", "--new-tokens", "100"), 2, "context"),
    (("--model", "/nonexistent/model"), 1, "/nonexistent/model"),
    (("--synthetic", "tiny", "--dtype", "q5_k"), 2, "--dtype"),
    (("--synthetic", "tiny", "--dtype"), 2, "--dtype"),
    (("--synthetic", "tiny", "--exact", "--bf16-activations"), 2, "at most one of"),
    (("--synthetic", "tiny", "--kv-cache", "f16"), 2, "--kv-cache"),
    (("--synthetic", "tiny", "--kv-cache"), 2, "--kv-cache"),
    # tiny's feed-forward is 688 wide: not whole 32-value blocks
    (("--synthetic", "tiny", "--dtype", "q4_0", "--new-tokens", "2", "--prompt-tokens", "2"), 1, "multiple of 32"),
]
for args, status, word in bad:
    r = run(*args)
    last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
    check(r.returncode == status and last.startswith("tokenloop: ") and word in last,
          "%s -> %d %r" % (" ".join(args), r.returncode, last))

# Without a GPU (or without the CUDA backend) --device cuda fails with one clear line.
r = run("--synthetic", "tiny", "--device", "cuda", "--new-tokens", "2", "--prompt-tokens", "2")
if r.returncode != 0:
    last = r.stderr.strip().splitlines()[-1]
    check(r.returncode == 1 and last.startswith("tokenloop: --device cuda:"), "cuda: " + last)
else:
    check("TPOT" in r.stdout, "cuda run output")

# bench --template: the generated templates render to what Jinja2 (as transformers sets it up)
# renders from the same text, and the 10,000-deep ones stop at the depth limits. No time is
# compared with anything.
import re
from jinja2.sandbox import ImmutableSandboxedEnvironment

PIECES = ["<|start_header_id|>user<|end_header_id|> ",
          "{{ messages[0]['role'] }} ",
          "{% if messages | length > 0 %}yes{% else %}no{% endif %} ",
          "{{ 'text ' ~ (3 * 7) | string }} ",
          "{% set x = messages[0]['content'] | trim %}{{ x }} "]


def flat(size):
    out, n, i = [], 0, 0
    while n < size:
        out.append(PIECES[i % 5])
        n += len(PIECES[i % 5])
        i += 1
    return "".join(out)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
msgs = [{"role": "user", "content": "  Hello there  "}]
r = subprocess.run([exe, "bench", "--template", "--runs", "1"], capture_output=True, text=True, timeout=300)
check(r.returncode == 0 and not r.stderr, "bench --template exits 0 quietly: " + r.stderr)
rows = {m.group(1).strip(): m for m in re.finditer(r"^(.{22}) +(\d+) B +([\d.]+) ms +(?:([\d.]+) MB|\?) +(.*)$",
                                                   r.stdout, re.M)}
for name, size in (("one line, 64 KB", 64 << 10), ("one line, 1 MB", 1 << 20)):
    src = flat(size)
    want = len(env.from_string(src).render(messages=msgs).encode())
    m = rows.get(name)
    check(m is not None and int(m.group(2)) == len(src) and ("rendered %d B" % want) in m.group(5),
          "%s: input %d B, Jinja2 renders %d B; bench printed %r" % (name, len(src), want, m and m.group(0)))
for name, what in (("10,000 nested ifs", "template nested too deeply"),
                   ("10,000 nested brackets", "brackets nested too deeply")):
    m = rows.get(name)
    check(m is not None and ("error: " in m.group(5)) and what in m.group(5), "%s: the depth limit's error" % name)
r = run("--template", "--runs", "0")
check(r.returncode == 2 and r.stderr.strip() == "tokenloop: --runs: expected 1..1000, got '0'", "--template --runs 0")
r = run("--template", "--bogus")
check(r.returncode == 2 and r.stderr.strip() == "tokenloop: --bogus: unknown option (see bench --template --help)",
      "--template --bogus")

# bench --sampler: the sampler's cost per step without and after a pass that gathered the
# scores' statistics (tl_sampler_choose_with); the figures' consistency, not their speed
r = run("--sampler", "--vocab", "3000", "--reps", "5", "--json")
check(r.returncode == 0 and not r.stderr, "bench --sampler exits 0 quietly: " + r.stderr)
if r.returncode == 0:
    j = json.loads(r.stdout)
    rows = j["cases"]
    check(j["vocab"] == 3000 and j["reps"] == 5 and len(rows) == 3 * 10, "sampler rows: %d" % len(rows))
    by = {(c["scores"], c["setting"]): c for c in rows}
    for shape in ("peaked", "gaussian", "flat"):
        g, full = by.get((shape, "greedy")), by.get((shape, "T1 k0 p1"))
        check(g is not None and g["kept"] == 1, shape + ": greedy keeps one")
        check(full is not None and full["kept"] == 3000, shape + ": no cut keeps the vocabulary")
        k200 = by.get((shape, "T0.8 k200 p1"))
        check(k200 is not None and k200["kept"] == (3000 if shape == "flat" else 200), shape + ": top-k 200 (ties kept)")
        k5000 = by.get((shape, "T1 k5000 p1"))   # a top-k past the vocabulary cuts nothing
        check(k5000 is not None and k5000["kept"] == 3000, shape + ": top-k 5000 of 3000 keeps them all")
    timed = [c for c in rows if "after_pass_median_us" in c]
    check(len(timed) == 3 * 9 and all(c["median_us"] >= 0 and c["model_median_us"] >= 0 and
                                      c["after_pass_median_us"] >= 0 for c in timed), "timings present")
    check(j["worst_median_us"] == max(c["median_us"] for c in rows), "worst median")
    check(j["worst_after_pass_median_us"] == max(c["after_pass_median_us"] for c in timed), "worst after the pass")
r = run("--sampler", "--vocab", "0")
check(r.returncode == 2 and r.stderr.strip() == "tokenloop: bench --sampler: --vocab 0: expected 1..16777216",
      "--sampler --vocab 0: " + r.stderr)

# bench --batch: B sequences a step, the sizes alternating; the figures' consistency, not their
# speed (docs/batching.md has the measurements): one weight read shared by B tokens
r = run("--batch", "1,3,5", "--synthetic", "tiny", "--prompt-tokens", "4", "--new-tokens", "6", "--json")
check(r.returncode == 0 and not r.stderr, "bench --batch exits 0 quietly: " + r.stderr)
if r.returncode == 0:
    j = json.loads(r.stdout)
    rows = j["batches"]
    check([x["batch"] for x in rows] == [1, 3, 5], "batch sizes %r" % [x["batch"] for x in rows])
    for x in rows:
        # each token's share of the weights, plus its own KV rows (under a tenth of the weights here)
        share = j["weight_bytes"] / x["batch"]
        check(share <= x["bytes_per_token"] < share + 0.1 * j["weight_bytes"],
              "B=%d: %.0f bytes a token, weights' share %.0f" % (x["batch"], x["bytes_per_token"], share))
        check(abs(x["tokens_per_s_vs_first"] * x["tpot_vs_first"] - x["batch"]) < 1e-9 * x["batch"],
              "B=%d: tokens/s ratio x TPOT ratio = B" % x["batch"])
        check(x["tpot_ms"] > 0 and x["floor_ms"] > 0 and x["roof_ms"] > 0, "B=%d: times" % x["batch"])
    check(abs(rows[2]["roof_ms"] / rows[0]["roof_ms"] - 5) < 1e-9, "the compute roof grows with B")
    check(j["peak_gflops"] > 0 and j["crossover_batch"] > 0, "peak and crossover")
r = run("--batch", "1,300", "--synthetic", "tiny")
check(r.returncode == 2 and r.stderr.strip() == "tokenloop: --batch: '1,300' is not a list of at most 16 sizes in "
      "[1, 256]", "--batch 1,300: " + r.stderr)

print("bench_cli: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
