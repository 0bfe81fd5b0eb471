"""tokenloop's iterator streamer against transformers' TextIteratorStreamer, both used as a chat
server uses them: generation on a background thread, the text read from a queue on this one.
transformers' side is model.generate(streamer=TextIteratorStreamer(...)) in a threading.Thread
(torch, float32, greedy) on the bundled model; tokenloop's is tl_iter (tests/hf/iter_dump.c) on
the same prompt ids. For 24 held-out questions and 4 long answers (budgets of 20 to 80 tokens, so
newlines and the budget's end() flush occur), with skip_prompt/skip_special_tokens on and off:
the ids are equal and so is every chunk the consumer receives, the last one (end()'s flush)
included. TextIteratorStreamer also queues an empty string for every put() that prints nothing;
tokenloop's queue carries only text, so the empty ones are counted and set aside (the README).
usage: check_iter_streamer.py ITER_DUMP SOURCE_DIR WORK_DIR"""
import json
import os
import subprocess
import sys
import threading

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # idle torch threads must not spin beside tokenloop
import torch
import transformers
from transformers import AutoTokenizer, LlamaForCausalLM, TextIteratorStreamer

dump, root, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
torch.set_num_threads(2)
transformers.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()
bundled = os.path.join(root, "assets/models/tl-mini-instruct")
tok = AutoTokenizer.from_pretrained(bundled)
model = LlamaForCausalLM.from_pretrained(bundled, dtype=torch.float32).eval()

held_dir = os.path.join(work, "held")
subprocess.run([sys.executable, os.path.join(root, "tools/corpus/gen.py"), "--seed", "1234", "--n", "0",
                "--out", held_dir], check=True, stdout=subprocess.DEVNULL)
questions = [json.loads(l)["question"] for l in open(os.path.join(held_dir, "eval.jsonl"))][3::15][:24]
longs = [json.loads(l)["question"] for l in open(os.path.join(held_dir, "long.jsonl"))][:4]
requests = [(q, 64) for q in questions] + [(q, b) for q, b in zip(longs, (20, 40, 60, 80))]


def hf_stream(ids, budget, skip):
    streamer = TextIteratorStreamer(tok, skip_prompt=skip, skip_special_tokens=skip, timeout=120)
    result = {}

    def run():
        with torch.no_grad():
            result["seq"] = model.generate(torch.tensor([ids]), streamer=streamer, do_sample=False, temperature=None,
                                           top_p=None, top_k=None, max_new_tokens=budget)[0].tolist()

    t = threading.Thread(target=run)
    t.start()
    chunks = list(streamer)  # the server's loop: blocks on the queue until the stop signal
    t.join()
    return result["seq"][len(ids):], chunks


failures, n_chunks, n_empty, n_newline = 0, 0, 0, 0
for q, budget in requests:
    ids = tok.apply_chat_template([{"role": "user", "content": q}], add_generation_prompt=True, return_dict=False)
    for skip in (True, False):
        # iter_dump (~0.3 s, most of it loading) runs while generate() makes the same stream
        p = subprocess.Popen([dump, bundled, ",".join(map(str, ids)), str(budget), str(int(skip)), str(int(skip))],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        new, hf_chunks = hf_stream(ids, budget, skip)
        out, err = p.communicate(timeout=300)
        if p.returncode != 0:
            sys.exit("check_iter_streamer: iter_dump failed: " + err.strip())
        tl = json.loads(out)
        text_chunks = [c for c in hf_chunks if c != ""]
        n_empty += len(hf_chunks) - len(text_chunks)
        n_chunks += len(text_chunks)
        n_newline += sum("\n" in c for c in text_chunks)
        if tl["generated_ids"] != new or tl["chunks"] != text_chunks:
            failures += 1
            print("MISMATCH %r skip=%s:\n  ids %s\n   vs %s\n  tokenloop %r\n  transformers %r" %
                  (q, skip, tl["generated_ids"], new, tl["chunks"], text_chunks))
print("transformers %s TextIteratorStreamer: %d streams, %d text chunks (%d with a newline) equal; "
      "%d empty strings it also queued; %d mismatches" %
      (transformers.__version__, 2 * len(requests), n_chunks, n_newline, n_empty, failures))
sys.exit(1 if failures or n_chunks == 0 else 0)
