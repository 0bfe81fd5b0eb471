"""The batched server against transformers' batched generate(): `tokenloop serve --slots 4 --exact`
answers 4 chat requests of different lengths at once, their decodes in shared passes (the
chunks' tokenloop.batch reaches 2 or more), and every answer equals what transformers gives for
the same 4 conversations in one left-padded batch (greedy, float32), decoded with
skip_special_tokens. The reference is outside tokenloop: transformers' generate() with
padding_side="left" and its attention mask.
usage: check_serve_batch.py TOKENLOOP PROJECT_DIR"""
import os
import sys
import threading

import torch
from openai import OpenAI
from transformers import AutoTokenizer, LlamaForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_common import check, finish, start, stop  # noqa: E402

exe, project = sys.argv[1], sys.argv[2]
bundled = os.path.join(project, "assets", "models", "tl-mini-instruct")
QUESTIONS = ["What is the capital of France?", "Tell me a short story about a cat and a boat.",
             "Hi", "Spell the word flower, letter by letter, and then say it again."]
NEW = 24

# transformers: the 4 conversations as one left-padded batch
tok = AutoTokenizer.from_pretrained(bundled)
tok.padding_side = "left"
if tok.pad_token is None:
    tok.pad_token = tok.eos_token
model = LlamaForCausalLM.from_pretrained(bundled, dtype=torch.float32).eval()
chats = [tok.apply_chat_template([{"role": "user", "content": q}], tokenize=False, add_generation_prompt=True)
         for q in QUESTIONS]
enc = tok(chats, return_tensors="pt", padding=True, add_special_tokens=False)
with torch.no_grad():
    out = model.generate(**enc, do_sample=False, max_new_tokens=NEW, pad_token_id=tok.pad_token_id)
width = enc["input_ids"].shape[1]
want = [tok.decode(row[width:], skip_special_tokens=True) for row in out]

srv, base = start(exe, "--slots", "4", "--threads", "1", "--exact")
client = OpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=300)
try:
    got, batches = {}, {}
    go = threading.Barrier(len(QUESTIONS))

    def ask(i):
        go.wait()
        parts, most = [], 0
        for ch in client.chat.completions.create(model="x", messages=[{"role": "user", "content": QUESTIONS[i]}],
                                                 temperature=0, max_tokens=NEW, stream=True):
            ext = (ch.model_extra or {}).get("tokenloop") or {}
            most = max(most, ext.get("batch", 0))
            for c in ch.choices:
                parts.append(c.delta.content or "")
        got[i], batches[i] = "".join(parts), most

    ts = [threading.Thread(target=ask, args=(i,)) for i in range(len(QUESTIONS))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for i, q in enumerate(QUESTIONS):
        check(got.get(i) == want[i], "%r: served %r, transformers' batch %r" % (q, got.get(i), want[i]))
    check(max(batches.values()) >= 2, "no chunk came from a shared pass: %r" % batches)
    print("4 requests at once on --slots 4 (decodes shared by up to %d): each answer equals transformers' "
          "left-padded batched generate()" % max(batches.values()))
finally:
    stop(srv)
finish("serve batch")
