"""`tokenloop generate` end to end on the tiny checkpoints (make_models.py): the JSON fields,
one step per forward pass, the streamed stdout, the stop reasons, and every bad input (one line
on stderr, exit status 1 or 2).

    check_cli.py TOKENLOOP MODELS_DIR
"""
import json
import os
import subprocess
import sys

failures = 0
checks = 0


def check(cond, msg):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print("FAIL:", msg)


def run(exe, *args, env=None):
    e = dict(os.environ)
    e.pop("TOKENLOOP_MODEL", None)
    if env:
        e.update(env)
    return subprocess.run([exe, "generate", *args], capture_output=True, text=True, timeout=120, env=e)


def main():
    exe, models = sys.argv[1], sys.argv[2]
    llama = os.path.join(models, "llama31")

    # --json: every field, one step per pass
    r = run(exe, "--model", llama, "--ids", "128000,9906,11,1917,0", "--greedy", "--max-new-tokens", "6",
            "--top", "5", "--json")
    check(r.returncode == 0, f"json run: {r.returncode} {r.stderr}")
    d = json.loads(r.stdout)
    for k in ("prompt_ids", "generated_ids", "prompt_text", "text", "stop_reason", "stop_detail", "budget_source",
              "ttft_ms", "tpot_ms", "decode_tokens_per_s", "prompt_as_output_tokens_per_s", "floor_ms",
              "bandwidth_gbs", "steps"):
        check(k in d, f"json lacks {k}")
    check(d["prompt_ids"] == [128000, 9906, 11, 1917, 0], "prompt_ids")
    check(len(d["generated_ids"]) == 6 and len(d["steps"]) == 6, "six tokens, six steps")
    check(d["stop_reason"] == "max_new_tokens" and d["budget_source"] == "request", "budget from the request")
    check(d["prompt_text"] is None, "no render for raw ids")
    check([s["kind"] for s in d["steps"]] == ["prefill"] + ["decode"] * 5, "prefill then decodes")
    check([s["index"] for s in d["steps"]] == list(range(6)), "indices")
    check([s["chosen"] for s in d["steps"]] == d["generated_ids"], "chosen ids")
    for s in d["steps"]:
        c = s["candidates"]
        check(len(c) == 5, "--top 5")
        check(all(c[i]["logit"] >= c[i + 1]["logit"] for i in range(4)), "candidates by logit")
        check(c[0]["id"] == s["chosen"], "greedy picks the top logit")
        check(all(set(x) >= {"id", "logit", "prob"} for x in c), "candidate fields")
        check(isinstance(s["printed"], str) and isinstance(s["held_back"], str) and isinstance(s["piece"], str),
              "step text fields")
    check("".join(s["printed"] for s in d["steps"]) == d["streamed"], "printed pieces add up")
    check(d["ttft_ms"] > 0 and d["tpot_ms"] > 0 and d["decode_tokens_per_s"] > 0, "timings")
    check(abs(d["decode_tokens_per_s"] - 1000.0 / d["tpot_ms"]) < 1e-6 * d["decode_tokens_per_s"],
          "decode tok/s = 1000 / TPOT")
    check(d["unsynced_tpot_ms"] == "not applicable (synchronous backend)", "no invented unsynced number on CPU")
    # what the decode passes include: the sampler's statistics where the lm_head's kernel gathers
    # them (AVX-512 BF16 and bf16 weights), not elsewhere (the AVX2 kernels forced)
    with open("/proc/cpuinfo") as f:
        bf16_cpu = " avx512_bf16" in f.read()
    check(d["pass_includes_sampler_stats"] is (bf16_cpu and d["dtype"] == "bf16"),
          f"pass_includes_sampler_stats {d['pass_includes_sampler_stats']} (cpu bf16 {bf16_cpu}, {d['dtype']})")
    # the precision (docs/accuracy.md): mixed by default where the kernels round activations,
    # exact where they never do (AVX2), and as asked
    check(d["precision"] == ("mixed" if bf16_cpu else "exact"), f"default precision {d['precision']}")
    rx = run(exe, "--model", llama, "--ids", "128000,9906,11,1917,0", "--greedy", "--max-new-tokens", "6", "--json",
             "--exact")
    dx = json.loads(rx.stdout) if rx.returncode == 0 else {}
    check(dx.get("precision") == "exact", f"--exact: {dx.get('precision')} {rx.stderr.strip()}")
    r2 = run(exe, "--model", llama, "--ids", "128000,9906,11,1917,0", "--greedy", "--max-new-tokens", "6", "--json",
             "--bf16-activations", env={"TL_CPU_ISA": "avx2"})
    d2 = json.loads(r2.stdout) if r2.returncode == 0 else {}
    check(d2.get("pass_includes_sampler_stats") is False, "no statistics in the pass with the AVX2 kernels")
    check(d2.get("precision") == "exact", f"AVX2 never rounds: {d2.get('precision')}")
    # exact both ways, so that the statistics are the only difference
    check(d2.get("generated_ids") == dx.get("generated_ids"), "the same greedy tokens with and without them")

    # the streamed stdout is what the JSON says was printed, for the same seed; metrics on stderr
    args = ["--model", llama, "--prompt", "Hi there", "--system", "Be brief.", "--max-new-tokens", "12", "--seed", "5"]
    j = json.loads(run(exe, *args, "--json").stdout)
    t = run(exe, *args)
    check(t.returncode == 0, f"text run: {t.stderr}")
    check(t.stdout == j["streamed"], f"stdout {t.stdout!r} vs {j['streamed']!r}")
    check("TTFT" in t.stderr and "TPOT" in t.stderr and "not applicable (synchronous backend)" in t.stderr,
          "metrics on stderr")
    check(j["prompt_text"].startswith("<|begin_of_text|><|start_header_id|>system<|end_header_id|>"), "render")
    check(j["prompt_text"].endswith("<|start_header_id|>assistant<|end_header_id|>\n\n"), "generation prompt")
    j2 = json.loads(run(exe, *args, "--json", "--no-generation-prompt").stdout)
    check(j2["prompt_text"].endswith("Hi there<|eot_id|>"), "--no-generation-prompt")
    j3 = json.loads(run(exe, *args, "--json", "--stream-mode", "server").stdout)
    check(j3["generated_ids"] == j["generated_ids"], "stream mode does not change the tokens")
    msgs = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"tl-gen-msgs-{os.getpid()}.json")
    with open(msgs, "w") as f:
        json.dump([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there"}], f)
    j4 = json.loads(run(exe, "--model", llama, "--messages", msgs, "--max-new-tokens", "12", "--seed", "5", "--json").stdout)
    check(j4["prompt_ids"] == j["prompt_ids"] and j4["generated_ids"] == j["generated_ids"], "--messages = --prompt")

    # stop reasons through the CLI
    e = json.loads(run(exe, "--model", os.path.join(models, "eos-always"), "--ids", "128000,9906", "--json").stdout)
    check(e["stop_reason"] == "eos" and e["generated_ids"] == [128008], f"eos: {e['stop_reason']} {e['generated_ids']}")
    check("128008 <|eom_id|>" in e["stop_detail"], f"eos detail: {e['stop_detail']}")
    check(e["eos_ids"] == [128001, 128008, 128009] and e["eos_source"] == "generation_config.json", "EOS set")
    check(e["eos_tokens"] == ["<|end_of_text|>", "<|eom_id|>", "<|eot_id|>"], f"EOS names {e['eos_tokens']}")
    n = json.loads(run(exe, "--model", os.path.join(models, "no-genconfig"), "--ids", "128000,9906", "--json").stdout)
    check(n["stop_reason"] == "max_new_tokens" and len(n["generated_ids"]) == 20 and n["budget_source"] == "default",
          "the 20-token default")
    g = json.loads(run(exe, "--model", os.path.join(models, "gen-max-new"), "--ids", "128000,9906", "--greedy",
                       "--json").stdout)
    check(len(g["generated_ids"]) == 7 and g["budget_source"] == "generation_config.max_new_tokens", "gen max_new")
    # a stop string taken from what greedy generates anyway, so it must fire there
    full = json.loads(run(exe, "--model", llama, "--ids", "128000,9906", "--greedy", "--max-new-tokens", "10",
                          "--json").stdout)
    txt = full["text"]
    stop = txt[len(txt) // 2: len(txt) // 2 + 3]
    check(len(stop) == 3 and "\ufffd" not in stop, f"a usable stop string from {txt!r}")
    if stop:
        s = json.loads(run(exe, "--model", llama, "--ids", "128000,9906", "--greedy", "--max-new-tokens", "10",
                           "--stop", stop, "--json").stdout)
        check(s["stop_reason"] == "stop_string", f"stop string {stop!r}: {s['stop_reason']}")
        check(s["text"].find(stop) >= 0 and txt.startswith(s["text"]), "stopped where the string appears")
        check(stop in s["stop_detail"] or s.get("stop_string") == stop, "which string")

    # default model from TOKENLOOP_MODEL
    r = run(exe, "--ids", "128000", "--max-new-tokens", "1", "--json", env={"TOKENLOOP_MODEL": llama})
    check(r.returncode == 0, f"TOKENLOOP_MODEL: {r.stderr}")

    # bad input: one line, status 1 or 2, never a crash
    bad = [
        (["--model", llama, "--ids", "1,2", "--bogus"], 2),
        (["--model", llama, "--ids", "1,,2"], 2),
        (["--model", llama, "--ids", "1,x"], 2),
        (["--model", llama, "--ids", ""], 2),
        (["--model", llama, "--ids", "-1"], 2),
        (["--model", llama, "--ids", "1,99999999999"], 2),
        (["--model", llama, "--ids", "1,128256"], 1),
        (["--model", llama, "--ids", ",".join(["100"] * 300)], 1),
        (["--model", os.path.join(models, "missing"), "--ids", "1"], 1),
        (["--model", llama], 2),
        (["--model", llama, "--ids", "1", "--prompt", "x"], 2),
        (["--model", llama, "--ids", "1", "--greedy", "--temperature", "0.5"], 2),
        (["--model", llama, "--ids", "1", "--temperature", "0"], 2),
        (["--model", llama, "--ids", "1", "--top-p", "1.5"], 2),
        (["--model", llama, "--ids", "1", "--top", "65"], 2),
        (["--model", llama, "--ids", "1", "--max-new-tokens", "0"], 2),
        (["--model", llama, "--ids", "1", "--stream-mode", "tty"], 2),
        (["--model", llama, "--ids", "1", "--stop", ""], 2),
        (["--model", llama, "--ids", "1", "--device", "tpu"], 2),
        (["--model", llama, "--ids"], 2),
        (["--model", llama, "--messages", "/nonexistent/messages.json"], 1),
        (["--model", llama, "--system", "x", "--ids", "1"], 2),
        (["--model", llama, "--ids", "1", "--dtype", "q5_k"], 2),
        (["--model", llama, "--ids", "1", "--dtype"], 2),
        (["--model", llama, "--ids", "1", "--exact", "--bf16-activations"], 2),
    ]
    # --dtype: the weights converted on load; the JSON says which, and the bytes a step reads
    r = run(exe, "--model", llama, "--ids", "128000,791", "--max-new-tokens", "2", "--json")
    r4 = run(exe, "--model", llama, "--ids", "128000,791", "--max-new-tokens", "2", "--json", "--dtype", "q4_0")
    if r.returncode == 0 and r4.returncode == 0:
        j, j4 = json.loads(r.stdout), json.loads(r4.stdout)
        check(j4["dtype"] == "q4_0" and j4["file_dtype"] == j["dtype"] == j["file_dtype"], "dtype fields")
        check(j4["weight_bytes"] < 0.5 * j["weight_bytes"], f"q4_0 reads {j4['weight_bytes']} of {j['weight_bytes']}")
    else:
        check(False, f"--dtype q4_0 run: {r4.stderr.strip()}")
    r = run(exe, "--ids", "1", env={"TOKENLOOP_MODEL": os.path.join(models, "missing")})
    check(r.returncode == 1 and r.stderr.startswith("tokenloop: ") and len(r.stderr.strip().splitlines()) == 1,
          f"TOKENLOOP_MODEL missing: {r.returncode} {r.stderr!r}")
    for args, status in bad:
        r = run(exe, *args)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == status, f"{args[-3:]}: exit {r.returncode}, want {status} ({r.stderr.strip()})")
        check(len(lines) >= 1 and lines[-1].startswith("tokenloop: "), f"{args[-3:]}: message {r.stderr!r}")
        check(r.returncode != 0 and r.stdout == "", f"{args[-3:]}: nothing on stdout")
    r = run(exe, "--help")
    check(r.returncode == 0 and "--stream-mode" in r.stdout, "--help")
    print(f"generate_cli: {checks - failures} passed, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
