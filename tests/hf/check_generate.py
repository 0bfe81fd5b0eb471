"""tokenloop's generation loop against transformers' own model.generate() (torch, float32, CPU;
scripts/requirements-hf.txt):

1. Random Llama checkpoints (tests/reference/make_checkpoints.py: GQA 8/2 heads, llama3 rope
   scaling, tied and untied embeddings, F32/BF16/F16 files, a 4-shard 8B-style layout, an
   explicit head_dim without rope scaling): the same random prompt ids, greedy, 16 new tokens;
   the new ids are equal and at every step the logits of tokenloop's 64 best candidates are
   within 1e-3 of torch's, relative to the step's largest |logit|.
2. The bundled model on 50 held-out questions (tools/corpus/gen.py with the training seed, every
   7th): the prompt ids equal apply_chat_template's, the greedy new ids equal, the stop reason
   equal ("eos" when generate() ended on an id of generation_config.json's list, else the budget).
3. The three stop reasons on the bundled model: the default budget (no max_new_tokens anywhere:
   transformers' default of 20 new tokens), an explicit max_new_tokens, an EOS list changed in
   generation_config.json, and stop strings (transformers' StopStringCriteria via stop_strings=).
4. Trap 1: generate() returns prompt + answer; tokenloop's count of new tokens is the length of
   generate()'s output minus the prompt's.

usage: check_generate.py TOKENLOOP SOURCE_DIR WORK_DIR"""
import json
import os
import random
import shutil
import subprocess
import sys
import time
import warnings

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # idle torch threads must not spin beside tokenloop
import numpy as np
import torch
import transformers
from transformers import AutoTokenizer, LlamaForCausalLM

tokenloop, root, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
transformers.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()
failures = []
t0 = time.time()


def check(ok, what):
    if not ok:
        failures.append(what)
        print("MISMATCH:", what)


def start_tokenloop(model, *args):
    """tokenloop generate in the background, so that generate() runs beside it: each run spends
    most of its ~0.7 s starting up (the bandwidth probe of --json's metrics, a fixed 0.2 s)."""
    # --exact: generate() runs in float32, so every product keeps fp32 activations (docs/accuracy.md)
    cmd = [tokenloop, "generate", "--model", model, "--json", "--threads", "2", "--exact"] + list(args)
    return cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish_tokenloop(run):
    cmd, p = run
    out, err = p.communicate()
    if p.returncode != 0:
        sys.exit("check_generate: %s failed: %s" % (" ".join(cmd), err.strip()))
    return json.loads(out)


def run_tokenloop(model, *args):
    return finish_tokenloop(start_tokenloop(model, *args))


def load(model_dir):
    m = LlamaForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    m.eval()
    return m


def hf_generate(model, ids, **kw):
    """generate() as a user calls it: greedy, the model's own generation_config otherwise."""
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), do_sample=False, temperature=None, top_p=None,
                             top_k=None, return_dict_in_generate=True, output_logits=True, **kw)
    seq = out.sequences[0].tolist()
    return seq, [l[0].numpy() for l in out.logits]


def hf_stop_reason(model, seq, n_prompt, budget):
    new = seq[n_prompt:]
    eos = model.generation_config.eos_token_id
    eos = eos if isinstance(eos, list) else [eos]
    if new and new[-1] in eos:
        return "eos"
    return "max_new_tokens" if len(new) >= budget else "stop_string"


# ---- 1. random checkpoints: ids and logits
ck = os.path.join(work, "checkpoints")
subprocess.run([sys.executable, os.path.join(root, "tests/reference/make_checkpoints.py"), ck], check=True,
               stdout=subprocess.DEVNULL)
rng = random.Random(20261204)
n_ckpt = 0
for name in sorted(os.listdir(ck)):
    d = os.path.join(ck, name)
    model = load(d)
    vocab = model.config.vocab_size
    eos = set(model.generation_config.eos_token_id)
    for trial in range(2):
        ids = [1] + [rng.choice([i for i in range(3, vocab) if i not in eos]) for _ in range(rng.randint(5, 90))]
        run = start_tokenloop(d, "--ids", ",".join(map(str, ids)), "--greedy", "--max-new-tokens", "16", "--top", "64")
        seq, logits = hf_generate(model, ids, max_new_tokens=16)
        tl = finish_tokenloop(run)
        check(seq[:len(ids)] == ids, "%s: generate() output starts with the prompt" % name)
        new = seq[len(ids):]
        check(tl["generated_ids"] == new, "%s trial %d: greedy ids %s vs generate() %s" % (name, trial, tl["generated_ids"], new))
        check(tl["stop_reason"] == hf_stop_reason(model, seq, len(ids), 16),
              "%s trial %d: stop %s vs %s" % (name, trial, tl["stop_reason"], hf_stop_reason(model, seq, len(ids), 16)))
        worst = 0.0
        for step, ref in zip(tl["steps"], logits):
            scale = float(np.abs(ref).max())
            for c in step["candidates"]:
                worst = max(worst, abs(c["logit"] - float(ref[c["id"]])) / scale)
        check(worst <= 1e-3, "%s trial %d: logits differ by %.2e of the largest" % (name, trial, worst))
        print("%-20s prompt %3d tokens: %2d new ids equal=%s, logits max rel diff %.1e" %
              (name, len(ids), len(new), tl["generated_ids"] == new, worst))
        n_ckpt += 1

print("[%.0f s]" % (time.time() - t0))
# ---- 2. the bundled model on held-out questions
bundled = os.path.join(root, "assets/models/tl-mini-instruct")
tok = AutoTokenizer.from_pretrained(bundled)
model = load(bundled)
held_dir = os.path.join(work, "held")
subprocess.run([sys.executable, os.path.join(root, "tools/corpus/gen.py"), "--seed", "1234", "--n", "0",
                "--out", held_dir], check=True, stdout=subprocess.DEVNULL)
held = [json.loads(l) for l in open(os.path.join(held_dir, "eval.jsonl"))][::7][:50]
answers = {}


def bundled_answer(ids):
    """generate() on the bundled model, greedy, 64 new tokens: deterministic, so the EOS and
    stop-string checks below reuse the held-out questions' answers instead of generating again."""
    if tuple(ids) not in answers:
        answers[tuple(ids)] = hf_generate(model, ids, max_new_tokens=64)
    return answers[tuple(ids)]


assert len(held) == 50, len(held)
same = 0
for q in held:
    msgs = [{"role": "user", "content": q["question"]}]
    ids = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True, return_dict=False)
    run = start_tokenloop(bundled, "--prompt", q["question"], "--greedy", "--max-new-tokens", "64", "--top", "1")
    seq, _ = bundled_answer(ids)
    tl = finish_tokenloop(run)
    check(tl["prompt_ids"] == ids, "prompt ids of %r" % q["question"])
    new = seq[len(ids):]
    reason = hf_stop_reason(model, seq, len(ids), 64)
    ok = tl["generated_ids"] == new and tl["stop_reason"] == reason
    check(ok, "%r: tokenloop %s %s, generate() %s %s" % (q["question"], tl["generated_ids"], tl["stop_reason"], new, reason))
    # trap 1: what generate() returns holds the prompt; only the rest is output
    check(len(seq) - len(ids) == len(tl["generated_ids"]), "%r: new-token count" % q["question"])
    same += ok
print("bundled model, 50 held-out questions: %d with the same ids and stop reason" % same)

print("[%.0f s]" % (time.time() - t0))
# ---- 3. the three stop reasons
long_q = [json.loads(l)["question"] for l in open(os.path.join(held_dir, "long.jsonl"))][:2]
for q in long_q:
    ids = tok.apply_chat_template([{"role": "user", "content": q}], add_generation_prompt=True, return_dict=False)
    # the budget nobody set: generation_config.json has no max_new_tokens, transformers gives 20 new
    tl = run_tokenloop(bundled, "--prompt", q, "--greedy", "--top", "1")
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Using the model-agnostic default max_length": the point here
        seq = model.generate(torch.tensor([ids]), do_sample=False, temperature=None, top_p=None, top_k=None)[0].tolist()
    check(len(seq) - len(ids) == 20 and tl["max_new_tokens"] == 20 and tl["budget_source"] == "default",
          "%r: default budget: generate() made %d new, tokenloop budget %s (%s)" %
          (q, len(seq) - len(ids), tl["max_new_tokens"], tl["budget_source"]))
    check(tl["generated_ids"] == seq[len(ids):] and tl["stop_reason"] == "max_new_tokens",
          "%r: default budget ids/stop" % q)
    print("default budget: %r -> %d new tokens in both, stop %s" % (q, len(seq) - len(ids), tl["stop_reason"]))
    for budget in (1, 7):
        tl = run_tokenloop(bundled, "--prompt", q, "--greedy", "--top", "1", "--max-new-tokens", str(budget))
        seq, _ = hf_generate(model, ids, max_new_tokens=budget)
        check(tl["generated_ids"] == seq[len(ids):] and tl["stop_reason"] == "max_new_tokens",
              "%r: max_new_tokens=%d" % (q, budget))

print("[%.0f s]" % (time.time() - t0))
# an EOS list of someone's choosing: generation_config.json's eos_token_id is what both read
eos_dir = os.path.join(work, "eos-model")
shutil.rmtree(eos_dir, ignore_errors=True)
shutil.copytree(bundled, eos_dir)
q = held[0]["question"]
ids = tok.apply_chat_template([{"role": "user", "content": q}], add_generation_prompt=True, return_dict=False)
seq, _ = bundled_answer(ids)
answer = seq[len(ids):]
for k in (0, 2, len(answer) // 2):
    gc = json.load(open(os.path.join(bundled, "generation_config.json")))
    gc["eos_token_id"] = [answer[k], 128009]
    json.dump(gc, open(os.path.join(eos_dir, "generation_config.json"), "w"))
    m2 = load(eos_dir)
    s2, _ = hf_generate(m2, ids, max_new_tokens=64)
    tl = run_tokenloop(eos_dir, "--prompt", q, "--greedy", "--top", "1", "--max-new-tokens", "64")
    check(tl["generated_ids"] == s2[len(ids):] and tl["stop_reason"] == hf_stop_reason(m2, s2, len(ids), 64) == "eos",
          "eos list %s: tokenloop %s %s, generate() %s" % (gc["eos_token_id"], tl["generated_ids"], tl["stop_reason"], s2[len(ids):]))
    print("eos_token_id %s: both stop after %d new tokens (eos)" % (gc["eos_token_id"], len(s2) - len(ids)))

print("[%.0f s]" % (time.time() - t0))
# stop strings: StopStringCriteria ends generation on the token that completes the string
n_stop, reasons = 0, {}
for q in held[:8]:
    ids = tok.apply_chat_template([{"role": "user", "content": q["question"]}], add_generation_prompt=True, return_dict=False)
    seq, _ = bundled_answer(ids)
    text = tok.decode(seq[len(ids):], skip_special_tokens=True)
    words = text.split()
    if len(words) < 3:
        continue
    for stop in (words[1], words[-1][:3], text[len(text) // 2:len(text) // 2 + 2]):
        if not stop.strip():
            continue
        run = start_tokenloop(bundled, "--prompt", q["question"], "--greedy", "--top", "1", "--max-new-tokens", "64",
                              "--stop", stop)
        s2, _ = hf_generate(model, ids, max_new_tokens=64, stop_strings=[stop], tokenizer=tok)
        tl = finish_tokenloop(run)
        ref_reason = "eos" if s2[-1] in model.generation_config.eos_token_id else (
            "max_new_tokens" if len(s2) - len(ids) >= 64 else "stop_string")
        ok = tl["generated_ids"] == s2[len(ids):] and tl["stop_reason"] == ref_reason
        check(ok, "stop %r in %r: tokenloop %d new (%s), generate() %d new (%s)" %
              (stop, text, len(tl["generated_ids"]), tl["stop_reason"], len(s2) - len(ids), ref_reason))
        n_stop += 1
        reasons[ref_reason] = reasons.get(ref_reason, 0) + 1
print("stop strings: %d cases compared, generate() stopped by %s" % (n_stop, reasons))
check(reasons.get("stop_string", 0) >= n_stop // 2, "most stop-string cases end on the stop string")

print("transformers %s, torch %s: %d checkpoint runs, 50 questions, %d stop-string cases, %d mismatches" %
      (transformers.__version__, torch.__version__, n_ckpt, n_stop, len(failures)))
sys.exit(1 if failures else 0)
