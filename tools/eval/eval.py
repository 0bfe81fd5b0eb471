#!/usr/bin/python3
"""Evaluates the bundled model with `tokenloop generate --json` on the corpus generator's
held-out split (tools/corpus/gen.py, regenerated here with the training seed: facts the model
learned, asked in phrasings it never saw; unseen number pairs for arithmetic).

  eval.py --tokenloop BUILD/cli/tokenloop [--model DIR] [--seed 1234] [--limit N] [--json OUT]

Reports: % correct greedy and sampled (generation_config's defaults: temperature 0.6, top_p 0.9,
transformers' top_k 50; one seed per question), % stopping with "eos" within 64 new tokens,
the stop reason of long-answer requests under the default budget, the prompt token count of a
~30-word question, and what the model does without the generation prompt. The accuracy is also
split by whether a question holds a token that never occurred in training (its embedding row is
all zeros, so the model cannot read it): a phrasing can be new, but its words must be known."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
START_HEADER, ROLE_USER, ROLE_ASSISTANT = 128006, 882, 78191


def generate(args, *extra):
    cmd = [args.tokenloop, "generate", "--model", args.model, "--json", "--top", "1", "--threads", "1"] + list(extra)
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd), p.stderr.strip()))
    return json.loads(p.stdout)


def untrained_ids(model_dir):
    """Token ids whose (tied) embedding row is all zeros: the tokens that never occurred in the
    training corpus (tools/train gives only seen tokens a row). The model cannot read them."""
    import struct
    import numpy as np
    path = os.path.join(model_dir, "model.safetensors")
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        hdr = json.loads(f.read(n))
    t = hdr["model.embed_tokens.weight"]
    assert t["dtype"] == "BF16", "%s: expected a bf16 embedding" % path
    rows, cols = t["shape"]
    a, b = t["data_offsets"]
    emb = np.memmap(path, dtype="<u2", mode="r", offset=8 + n + a, shape=(rows, cols))
    return set(np.flatnonzero(~(emb & 0x7fff).any(axis=1)).tolist())


def correct(text, accept):
    t = text.lower()
    return any(a.lower() in t for a in accept)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenloop", required=True)
    ap.add_argument("--model", default=os.path.join(ROOT, "assets/models/tl-mini-instruct"))
    ap.add_argument("--seed", type=int, default=1234, help="the corpus seed used for training")
    ap.add_argument("--limit", type=int, default=0, help="evaluate only every k-th question (0: all)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", help="write every answer and the figures here")
    args = ap.parse_args()

    d = tempfile.mkdtemp(prefix="tl-eval-")
    subprocess.run([sys.executable, os.path.join(ROOT, "tools/corpus/gen.py"), "--seed", str(args.seed), "--n", "0",
                    "--out", d], check=True)
    held = [json.loads(l) for l in open(os.path.join(d, "eval.jsonl"))]
    if args.limit:
        held = held[::args.limit]
    longs = [json.loads(l) for l in open(os.path.join(d, "long.jsonl"))]
    nogen = [json.loads(l) for l in open(os.path.join(d, "nogen.jsonl"))]

    def run_one(i_x):
        i, x = i_x
        g = generate(args, "--prompt", x["question"], "--greedy", "--max-new-tokens", "64")
        s = generate(args, "--prompt", x["question"], "--max-new-tokens", "64", "--seed", str(i))
        return {"question": x["question"], "domain": x["domain"], "lang": x["lang"], "accept": x["accept"],
                "greedy": g["text"], "greedy_stop": g["stop_reason"], "greedy_n": len(g["generated_ids"]),
                "greedy_ok": correct(g["text"], x["accept"]),
                "sampled": s["text"], "sampled_stop": s["stop_reason"], "sampled_ok": correct(s["text"], x["accept"])}

    with ThreadPoolExecutor(args.jobs) as ex:
        rows = list(ex.map(run_one, enumerate(held)))

    # Which questions contain a word the model never saw in training (an all-zero embedding)?
    dead = untrained_ids(args.model)
    for r in rows:
        tk = subprocess.run([args.tokenloop, "tokenize", "--model", args.model, "--text", r["question"], "--json"],
                            capture_output=True, text=True, check=True)
        r["untrained_tokens"] = [p for i, p in zip(*(json.loads(tk.stdout)[k] for k in ("ids", "pieces"))) if i in dead]

    n = len(rows)
    res = {"questions": n,
           "greedy_correct_pct": 100.0 * sum(r["greedy_ok"] for r in rows) / n,
           "sampled_correct_pct": 100.0 * sum(r["sampled_ok"] for r in rows) / n,
           "greedy_eos_within_64_pct": 100.0 * sum(r["greedy_stop"] == "eos" for r in rows) / n,
           "sampled_eos_within_64_pct": 100.0 * sum(r["sampled_stop"] == "eos" for r in rows) / n}
    for name, sel in (("trained_words", [r for r in rows if not r["untrained_tokens"]]),
                      ("untrained_words", [r for r in rows if r["untrained_tokens"]])):
        res[name] = {"n": len(sel),
                     "greedy_pct": round(100.0 * sum(r["greedy_ok"] for r in sel) / max(1, len(sel)), 1),
                     "sampled_pct": round(100.0 * sum(r["sampled_ok"] for r in sel) / max(1, len(sel)), 1)}
    by = {}
    for r in rows:
        k = "%s/%s" % (r["domain"], r["lang"])
        b = by.setdefault(k, [0, 0, 0])
        b[0] += 1
        b[1] += r["greedy_ok"]
        b[2] += r["sampled_ok"]
    res["by_domain"] = {k: {"n": v[0], "greedy_pct": round(100.0 * v[1] / v[0], 1),
                            "sampled_pct": round(100.0 * v[2] / v[0], 1)} for k, v in sorted(by.items())}

    # long answers under the default budget (generation_config.json sets none: 20)
    lr = []
    for x in longs:
        g = generate(args, "--prompt", x["question"], "--greedy")
        lr.append({"question": x["question"], "stop_reason": g["stop_reason"], "new_tokens": len(g["generated_ids"]),
                   "budget_source": g.get("budget_source"), "text": g["text"]})
    res["long_answers"] = {"n": len(lr),
                           "stopped_max_new_tokens_at_20": sum(r["stop_reason"] == "max_new_tokens" and r["new_tokens"] == 20 for r in lr),
                           "rows": lr}

    # a question of about 30 words
    q30 = ("My class is making a poster about countries this week, and I am in charge of Europe. "
           "Could you tell me which city is the capital of France?")
    g = generate(args, "--prompt", q30, "--greedy", "--max-new-tokens", "1")
    tk = subprocess.run([args.tokenloop, "tokenize", "--model", args.model, "--text", q30, "--json"],
                        capture_output=True, text=True, check=True)
    qtok = len(json.loads(tk.stdout)["ids"])
    res["thirty_words"] = {"words": len(q30.split()), "question_tokens": qtok, "prompt_tokens": len(g["prompt_ids"]),
                           "template_tokens": len(g["prompt_ids"]) - qtok}

    # without the generation prompt
    ng = []
    for x in nogen:
        g = generate(args, "--prompt", x["question"], "--no-generation-prompt", "--greedy", "--max-new-tokens", "32")
        ids = g["generated_ids"]
        kind = ("user turn" if ids[:2] == [START_HEADER, ROLE_USER] else
                "assistant answer" if ids[:2] == [START_HEADER, ROLE_ASSISTANT] else "other")
        ng.append({"question": x["question"], "kind": kind, "text": g["text"]})
    res["no_generation_prompt"] = {"n": len(ng), "continues_user_side": sum(r["kind"] == "user turn" for r in ng),
                                   "answers": sum(r["kind"] == "assistant answer" for r in ng), "rows": ng}

    summary = {k: v for k, v in res.items() if k not in ("long_answers", "no_generation_prompt")}
    summary["long_answers_max_new_tokens_at_20"] = "%d/%d" % (res["long_answers"]["stopped_max_new_tokens_at_20"], len(lr))
    summary["no_generation_prompt_user_turn"] = "%d/%d" % (res["no_generation_prompt"]["continues_user_side"], len(ng))
    print(json.dumps(summary, indent=1, ensure_ascii=False))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": res, "rows": rows}, f, indent=1, ensure_ascii=False)
    ok = (res["greedy_correct_pct"] >= 90 and res["sampled_correct_pct"] >= 80 and res["greedy_eos_within_64_pct"] >= 95)
    print("targets (greedy >= 90%%, sampled >= 80%%, eos >= 95%%): %s" % ("met" if ok else "NOT met"))


if __name__ == "__main__":
    main()
