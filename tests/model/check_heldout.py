#!/usr/bin/python3
"""The held-out split of the bundled model is really held out, and readable.

  check_heldout.py TOKENLOOP MODEL_DIR

Regenerates the training corpus with the seed and size tools/train/train.sh uses, then checks:
1. no training user message matches a held-out phrasing (any fill);
2. no held-out sum or difference occurs as a training question (arithmetic is held out by pairs);
3. every token of every held-out question has a non-zero embedding row in MODEL_DIR, i.e. the
   model saw that word in training: a new phrasing is the test, an unreadable word is not."""
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def train_args():
    sh = open(os.path.join(ROOT, "tools/train/train.sh")).read()
    m = re.search(r'gen\.py" --seed (\d+) --n (\d+)', sh)
    if not m:
        sys.exit("tools/train/train.sh: no gen.py --seed N --n N line")
    return m.group(1), m.group(2)


def main():
    tokenloop, model = sys.argv[1], sys.argv[2]
    gen = load("gen", "tools/corpus/gen.py")
    ev = load("tl_eval", "tools/eval/eval.py")
    seed, n = train_args()
    fails = []
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([sys.executable, os.path.join(ROOT, "tools/corpus/gen.py"), "--seed", seed, "--n", n,
                        "--out", d], check=True)
        held = [json.loads(line) for line in open(os.path.join(d, "eval.jsonl"))]
        pattern = gen.held_out_pattern()
        # arithmetic: the split's pairs are the training generator's held pairs, and no training
        # question, in any phrasing, asks one of them
        g = gen.Gen(int(seed))
        ops = [(g.add_held, gen.ADD_Q_EN + gen.ADD_Q_VI), (g.sub_held, gen.SUB_Q_EN + gen.SUB_Q_VI)]
        asked = [[re.compile(re.sub(r"\\\{([ab])\\\}", lambda m: r"(?<!\d)(?P<%s>\d+)(?!\d)" % m.group(1), re.escape(t)), re.I)
                  for t in qs] for _, qs in ops]
        arith = [x for x in held if x["domain"] == "arith"]
        if not arith:
            fails.append("no arithmetic in the held-out split")
        user = re.compile(r"<\|start_header_id\|>user<\|end_header_id\|>\n\n(.*?)<\|eot_id\|>", re.S)
        users = 0
        for line in open(os.path.join(d, "train.jsonl")):
            for u in user.finditer(json.loads(line)["text"]):
                users += 1
                q = u.group(1)
                if pattern.search(q):
                    fails.append("training question is held out: %r" % q)
                for k in (0, 1):
                    for r in asked[k]:
                        for m in r.finditer(q):
                            if (int(m["a"]), int(m["b"])) in ops[k][0]:
                                fails.append("training question asks a held-out pair: %r" % q)
        if users < 1000:
            fails.append("only %d user messages in the regenerated corpus" % users)

        for x in arith:
            found = [(int(m["a"]), int(m["b"])) for k in (0, 1) for r in asked[k] for m in [r.fullmatch(x["question"])]
                     if m and (int(m["a"]), int(m["b"])) in ops[k][0]]
            if not found:
                fails.append("held-out arithmetic on a pair that is not held out of training: %r" % x["question"])

        qfile = os.path.join(d, "questions.txt")
        with open(qfile, "w") as f:
            # each question in its place in a prompt, so it splits into the same tokens
            f.write("".join("<|start_header_id|>user<|end_header_id|>\n\n%s<|eot_id|>" % x["question"] for x in held))
        tk = subprocess.run([tokenloop, "tokenize", "--model", model, "--file", qfile, "--json"],
                            capture_output=True, text=True, check=True)
        tok = json.loads(tk.stdout)
        dead = ev.untrained_ids(model)
        unread = sorted({p for i, p in zip(tok["ids"], tok["pieces"]) if i in dead})
        if unread:
            fails.append("held-out tokens with an all-zero embedding row: %s" % unread)
    for f in fails[:20]:
        print("FAIL", f)
    print("%d held-out questions (%d arithmetic), %d training user messages, %d failures"
          % (len(held), len(arith), users, len(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
