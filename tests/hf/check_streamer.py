"""tokenloop's hf streamer against transformers' own TextStreamer (scripts/requirements-hf.txt):
the real Llama 3 tokenizer from assets/tokenizer, token sequences from crafted texts (words split
inside, UTF-8 characters split across tokens, CJK, Thai, emoji ZWJ, newlines, URLs, the spaces
clean_up_tokenization_spaces removes, a special token) and from random windows of the
multilingual corpus, each streamed one token per put() after the prompt, then end(), with
skip_prompt/skip_special_tokens on and off. Clean-up is off: transformers 5.23 ignores
clean_up_tokenization_spaces for a BPE tokenizer (it warns that the step is destructive there),
while tokenloop applies it as tokenizer_config.json says, as transformers 4 did; that the
reference ignores it is itself checked here, so a new pin that changes it is noticed. What TextStreamer printed
at each put (and what it still holds: the decoded cache past print_len) is written in the
format of tests/generate/streamer_goldens.json, with the tokens' bytes, and test_gen_streamer
checks tokenloop's streamer against it.
usage: check_streamer.py TEST_GEN_STREAMER SOURCE_DIR WORK_DIR"""
import json
import lzma
import os
import random
import subprocess
import sys

import numpy as np
import transformers
from transformers import AutoTokenizer, TextStreamer

checker, root, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
tok = AutoTokenizer.from_pretrained(os.path.join(root, "assets/tokenizer"))


def bytes_to_unicode():
    """GPT-2's byte-level alphabet: printable Latin-1 bytes stand for themselves, the other 68
    bytes for U+0100 onwards, in byte order"""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    extra = [b for b in range(256) if b not in keep]
    return {**{b: chr(b) for b in keep}, **{b: chr(256 + n) for n, b in enumerate(extra)}}


byte_of = {c: b for b, c in bytes_to_unicode().items()}
special_ids = set(tok.all_special_ids) | {i for i, t in tok.added_tokens_decoder.items() if t.special}


def token_bytes(i):
    """the bytes a token stands for: byte-level BPE maps each byte to one printable character"""
    s = tok.convert_ids_to_tokens(i)
    if i in tok.added_tokens_decoder:
        return tok.added_tokens_decoder[i].content.encode("utf-8")
    return bytes(byte_of[c] for c in s)


class Recorder(TextStreamer):
    """TextStreamer whose output is kept, with what it holds back after each put()."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.chunks = []
        self.prompt_pending = self.skip_prompt

    def put(self, value):
        skipped = self.skip_prompt and self.next_tokens_are_prompt
        super().put(value)
        if skipped:
            self.chunks.append({"printed": "", "held": ""})

    def on_finalized_text(self, text, stream_end=False):
        held = ""
        if not stream_end and self.token_cache:
            held = self.tokenizer.decode(self.token_cache, **self.decode_kwargs)[self.print_len:]
        self.chunks.append({"printed": text, "held": held})


texts = [
    "Hello world! How are you today?",
    "Café naïve façade, déjà vu.",
    "Việt Nam có 54 dân tộc.",
    "Family: 👨‍👩‍👧‍👦 and flags 🇻🇳🇯🇵 done",
    "你好，世界。我们一起学习。",
    "こんにちは世界、カタカナ",
    "안녕하세요 세계",
    "สวัสดีครับ ยินดีต้อนรับ",
    "https://example.com/a/b?q=1&r=2#frag",
    "line one\nline two\n\nthree   four\n",
    "Hello , world . I 'm fine , are n't you ? It 's ok !",
    "Done.<|eot_id|>",
    "12345678 + 3.14159 = ?",
    "tab\there and  double  spaces ",
    "Ελληνικά και русский текст",
    "\u200bzero\u200bwidth\u00a0nbsp",
]
seqs = [(t, tok.encode(t, add_special_tokens=False)) for t in texts]
rng = random.Random(20261204)
with lzma.open(os.path.join(root, "tests/tokenizer/corpus/manpages.jsonl.xz"), "rt", encoding="utf-8") as f:
    docs = [json.loads(line)["text"] for line in f]
while len(seqs) < 60:
    d = rng.choice(docs)
    ids = tok.encode(d, add_special_tokens=False)
    if len(ids) < 50:
        continue
    a = rng.randrange(len(ids) - 40)
    seqs.append(("corpus window", ids[a:a + rng.randint(8, 40)]))
prompt = tok.encode("Q:", add_special_tokens=False)

cases = []
for k, (label, gen) in enumerate(seqs):
    local = {}

    def lid(i):
        return local.setdefault(i, len(local))

    p_ids = [lid(i) for i in prompt]
    g_ids = [lid(i) for i in gen]
    order = sorted(local, key=local.get)
    for skip, clean in ((True, False), (False, False)):
        st = Recorder(tok, skip_prompt=skip, skip_special_tokens=skip, clean_up_tokenization_spaces=clean)
        st.put(np.array([prompt]))
        for i in gen:
            st.put(np.array([i]))
        st.end()
        cases.append({"name": f"{k}:{label[:24]} skip={skip} clean={clean}",
                      "skip_prompt": skip, "skip_special_tokens": skip, "clean_up_spaces": clean,
                      "pieces": [token_bytes(i).hex() for i in order],
                      "special": [local[i] for i in order if i in special_ids],
                      "prompt_ids": p_ids, "generated_ids": g_ids, "chunks": st.chunks})
# the quirk, live: with clean-up asked for, transformers 5.23 decodes " ." as it is
ids = tok.encode("Hello , world . I 'm fine", add_special_tokens=False)
quirk = tok.decode(ids, clean_up_tokenization_spaces=True) == tok.decode(ids, clean_up_tokenization_spaces=False)
if not quirk:
    print("transformers now applies clean_up_tokenization_spaces to BPE: compare the clean-up cases too",
          file=sys.stderr)
path = os.path.join(work, "hf_streamer_goldens.json")
with open(path, "w", encoding="utf-8") as f:
    json.dump({"generator": f"tests/hf/check_streamer.py (transformers {transformers.__version__} TextStreamer)",
               "cases": cases}, f, ensure_ascii=False, indent=1)
p = subprocess.run([checker, path], capture_output=True, text=True, timeout=300)
sys.stderr.write(p.stderr[-4000:])
print(f"hf_streamer: transformers {transformers.__version__} TextStreamer, {len(cases)} streams of "
      f"{sum(len(c['generated_ids']) for c in cases)} tokens: checker exit {p.returncode}")
sys.exit(p.returncode or (0 if quirk else 1))
