"""The transformers code the TUI's `c` shows (and `generate --print-transformers-code` prints) is
a complete program: run as it is with the pinned transformers on the bundled model, it makes
the ids tokenloop makes and decodes the same answer.

usage: check_hf_code.py TOKENLOOP MODEL_DIR

For each request (greedy; greedy with a stop string; greedy with a budget) tokenloop prints the
program, then `generate --exact --json` runs the request (--exact: the float32 products the
program's model computes). The program runs in a fresh namespace, so a missing import or an
undefined name fails it; its `new_ids` must equal tokenloop's generated ids and its `answer`
tokenloop's streamed text. Then two broken copies of the first program (skip_special_tokens
removed; the import line removed) must fail the same comparison, so the check can fail."""
import contextlib
import io
import json
import subprocess
import sys

TOKENLOOP, MODEL = sys.argv[1], sys.argv[2]

CASES = [
    ("greedy", ["--prompt", "What is the capital of France?", "--greedy"]),
    ("stop string", ["--prompt", "What is the capital of France?", "--greedy", "--stop", "France"]),
    ("budget", ["--prompt", "Count from 1 to 50.", "--greedy", "--max-new-tokens", "7"]),
]

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)
    return ok


def tokenloop(args):
    r = subprocess.run([TOKENLOOP, "generate", "--model", MODEL] + args, capture_output=True, text=True, timeout=120)
    if r.returncode:
        raise SystemExit("tokenloop %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr.strip()))
    return r.stdout


def run_program(code):
    """Runs code as a script of its own; returns (new_ids, answer) or the error it raised."""
    ns = {"__name__": "__main__"}
    try:
        with contextlib.redirect_stdout(io.StringIO()):   # its TextStreamer prints the answer
            exec(compile(code, "<transformers code>", "exec"), ns)
        return ns["new_ids"].tolist(), ns["answer"], None
    except Exception as e:   # the program did not run: that is the failure to report
        return None, None, "%s: %s" % (type(e).__name__, e)


def matches(code, ref):
    ids, answer, error = run_program(code)
    if error:
        return False, error
    if ids != ref["generated_ids"]:
        return False, "ids %s, tokenloop %s" % (ids, ref["generated_ids"])
    if answer != ref["streamed"]:
        return False, "answer %r, tokenloop streamed %r" % (answer, ref["streamed"])
    return True, "ids %s, answer %r" % (ids, answer)


first = None
for name, args in CASES:
    code = tokenloop(args + ["--print-transformers-code"])
    ref = json.loads(tokenloop(args + ["--exact", "--json"]))
    check(code.startswith("import torch\n") and "from_pretrained(model_dir" in code, "%s: the program imports and loads the model" % name)
    ok, why = matches(code, ref)
    check(ok, "%s (%s): the program as printed, against tokenloop: %s" % (name, ref["stop_reason"], why))
    first = first or (code, ref)

# mutations of the first program: each must be caught
code, ref = first
for what, old, new in [("skip_special_tokens removed", ", skip_special_tokens=True)", ")"),
                       ("the transformers import removed", "from transformers import AutoModelForCausalLM, AutoTokenizer, TextStreamer\n", "")]:
    mutant = code.replace("answer = tok.decode(new_ids" + old, "answer = tok.decode(new_ids" + new) if "skip" in what else code.replace(old, new)
    if not check(mutant != code, "mutation applies: " + what):
        continue
    ok, why = matches(mutant, ref)
    check(not ok, "mutation caught (%s): %s" % (what, why))

print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
