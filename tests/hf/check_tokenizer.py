"""The tokenizer against Hugging Face's tokenizers library (Python, scripts/requirements-hf.txt):
ids of the committed multilingual corpus (tests/tokenizer/corpus/manpages.jsonl.xz: man pages in
26 languages and the common licences, ~16 MB; tools/hf-corpus/make_corpus.py) and of the golden
corpus's ~490 hand-made strings, with special tokens parsed (every document), as plain text
and with the post-processor's BOS (every fourth); and the decode of random id sequences
(special tokens included) wherever the reference's text is whole characters, also with
skip_special_tokens and with transformers' clean_up_tokenization after it. The reference's
answers are written in the format of tests/tokenizer/golden-llama3.json, in chunks, and
test_tokenizer_golden checks tokenloop against each.
usage: check_tokenizer.py TEST_TOKENIZER_GOLDEN TOKENIZER_DIR SOURCE_DIR WORK_DIR"""
import json
import lzma
import os
import random
import subprocess
import sys

import tokenizers
from tokenizers import Tokenizer
from transformers import AutoTokenizer

checker, tokdir, root, work = sys.argv[1:5]
os.makedirs(work, exist_ok=True)
tok = Tokenizer.from_file(os.path.join(tokdir, "tokenizer.json"))
plain = Tokenizer.from_file(os.path.join(tokdir, "tokenizer.json"))
plain.encode_special_tokens = True
hf_tok = AutoTokenizer.from_pretrained(tokdir)   # transformers' clean_up_tokenization   # split_special_tokens: "<|eot_id|>" is text

texts = []
with lzma.open(os.path.join(root, "tests/tokenizer/corpus/manpages.jsonl.xz"), "rt", encoding="utf-8") as f:
    for line in f:
        r = json.loads(line)
        texts.append((r["lang"], r["text"]))
with open(os.path.join(root, "tests/tokenizer/golden-llama3.json"), encoding="utf-8") as f:
    texts += [("golden", e["text"]) for e in json.load(f)["entries"]]
langs = {lang for lang, _ in texts} - {"golden"}
n_bytes = sum(len(t.encode()) for lang, t in texts if lang != "golden")

entries = []
for i, (lang, text) in enumerate(texts):
    entries.append({"text": text, "flags": [], "ids": tok.encode(text, add_special_tokens=False).ids})
    if i % 4 == 0:
        entries.append({"text": text, "flags": ["no_parse_special"], "ids": plain.encode(text, add_special_tokens=False).ids})
        entries.append({"text": text, "flags": ["add_special"], "ids": tok.encode(text, add_special_tokens=True).ids})

rng = random.Random(20261204)
vocab = tok.get_vocab_size(with_added_tokens=True)
decodes = []
tried = 0
while len(decodes) < 6000 and tried < 60000:
    tried += 1
    ids = [rng.randrange(vocab) if rng.random() < 0.05 else rng.randrange(128000) for _ in range(rng.randint(1, 48))]
    text = tok.decode(ids, skip_special_tokens=False)
    if "\ufffd" not in text:
        decodes.append({"ids": ids, "text": text})
        # transformers' decode: special tokens skipped (the streamer's default) and the
        # clean-up as tokenizer_config.json asks (transformers 4 applied it; 5 ignores it for
        # BPE, tests/hf/README.md); tokenloop's streamer decode takes both switches
        skip = tok.decode(ids, skip_special_tokens=True)
        decodes.append({"ids": ids, "skip_special_tokens": True, "text": skip})
        decodes.append({"ids": ids, "skip_special_tokens": True, "clean_up": True,
                        "text": hf_tok.clean_up_tokenization(skip)})
# the clean-up's own cases: every replacement, in words the tokenizer splits as a model writes them
for t in ["Hello , world . Is it ? Yes !", "I 'm sure you 're right , they 've said it 's fine .",
          "do n't , ca n't , wo n't", "a ' b", "x . y , z ! w ?"]:
    ids = tok.encode(t, add_special_tokens=False).ids
    decodes.append({"ids": ids, "skip_special_tokens": True, "clean_up": True,
                    "text": hf_tok.clean_up_tokenization(tok.decode(ids, skip_special_tokens=True))})

# chunks of ~1 MB of text keep each file small for cJSON
chunks, cur, size = [], [], 0
for e in entries:
    cur.append(e)
    size += len(e["text"])
    if size > 1 << 20:
        chunks.append(cur)
        cur, size = [], 0
chunks.append(cur)
failed = 0
for k, ch in enumerate(chunks):
    path = os.path.join(work, f"chunk{k}.json")
    with open(path, "w", encoding="utf-8") as f:
        # dumps, not dump: json.dump writes through the pure-Python encoder (13 s of the test's
        # time for these ~8 million ids), dumps through the C one
        f.write(json.dumps({"reference": f"tokenizers {tokenizers.__version__} (Python)", "entries": ch,
                            "decodes": decodes if k == 0 else []}, ensure_ascii=False))
    p = subprocess.run([checker, tokdir, path], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, TL_GOLDEN_MIN_ENTRIES=str(len(ch))))
    if p.returncode:
        failed += 1
        print(f"chunk {k} ({path}):\n{p.stderr[-3000:]}", file=sys.stderr)
    else:
        os.unlink(path)
print(f"hf_tokenizer: tokenizers {tokenizers.__version__}: {len(entries)} encodes of {len(texts)} texts "
      f"({n_bytes} bytes in {len(langs)} languages, and the golden strings), {len(decodes)} decodes "
      f"of random ids, {len(chunks)} chunks, {failed} failed")
sys.exit(1 if failed else 0)
