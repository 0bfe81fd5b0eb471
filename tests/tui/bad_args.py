#!/usr/bin/python3
"""`tokenloop tui` with bad arguments or a bad model: exactly one line on stderr that names the
argument, exit status 2 (usage) or 1 (bad data), nothing on stdout (no terminal control codes),
and never a hang.

    bad_args.py TOKENLOOP MODEL_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile

exe, model = sys.argv[1], sys.argv[2]
failures = 0
bad_model = tempfile.mkdtemp(prefix="tltui-bad")
with open(os.path.join(bad_model, "config.json"), "w") as f:
    f.write("{ not json")

cases = [
    (["tui", "--bogus"], 2, "--bogus"),
    (["tui", "--model"], 2, "--model"),
    (["tui", "--device", "tpu", "--model", model], 2, "--device"),
    (["tui", "--threads", "many", "--model", model], 2, "--threads"),
    (["tui", "--lang", "fr", "--model", model], 2, "--lang"),
    (["tui", "--prompt", "", "--model", model], 2, "--prompt"),
    (["tui", "--bench-frame", "zero", "--model", model], 2, "--bench-frame"),
    (["tui", "--dtype", "q3_k", "--model", model], 2, "--dtype"),
    (["tui", "--dtype"], 2, "--dtype"),
    (["tui", "--kv-cache", "fp16", "--model", model], 2, "--kv-cache"),
    (["tui", "--kv-cache"], 2, "--kv-cache"),
    (["tui", "--exact", "--bf16-activations", "--model", model], 2, "at most one of"),
    # the test model's widths (64, 176) are no multiple of 32: the conversion says which matrix
    (["tui", "--dtype", "q4_0", "--model", model, "--bench-frame", "1"], 1, "width is not a multiple of 32"),
    (["tui", "--model", "/nonexistent/model", "--bench-frame", "1"], 1, "/nonexistent/model"),
    (["tui", "--model", bad_model, "--bench-frame", "1"], 1, bad_model),
    (["--bogus-default-option"], 2, "--bogus-default-option"),
    # stdin/stdout not a terminal (here: pipes): refused before anything is drawn
    (["tui", "--model", model], 2, "terminal"),
]
cases.append((["tui", "--bench-frame", "1"], 1, "/nonexistent/env-model"))   # $TOKENLOOP_MODEL, below
for args, want, name in cases:
    env = dict(os.environ)
    env.pop("TOKENLOOP_MODEL", None)
    if name == "/nonexistent/env-model":
        env["TOKENLOOP_MODEL"] = name
    try:
        r = subprocess.run([exe] + args, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                           env=env)
    except subprocess.TimeoutExpired:
        print("FAIL %s: hung" % args)
        failures += 1
        continue
    lines = r.stderr.strip().split("\n")
    ok = (r.returncode == want and len(lines) == 1 and name in lines[0]
          and lines[0].startswith("tokenloop: ") and r.stdout == "")
    print("%s %s -> %d %r" % ("ok  " if ok else "FAIL", args, r.returncode, r.stderr.strip()))
    failures += not ok
# an unknown $TERM on a real terminal (a pty from script(1)): one line, status 1, no escapes
if shutil.which("script"):
    env = dict(os.environ, TERM="tokenloop-no-such-term",
               LSAN_OPTIONS="print_suppressions=0:suppressions=" +
               os.path.join(os.path.dirname(os.path.abspath(__file__)), "lsan.supp"))
    try:
        r = subprocess.run(["script", "-qec", "%s tui --model %s" % (exe, model), "/dev/null"],
                           capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env=env)
        out = r.stdout.replace("\r", "").strip()
        ok = (r.returncode == 1 and out == "tokenloop: TERM=tokenloop-no-such-term: unknown terminal type")
    except subprocess.TimeoutExpired:
        ok, out = False, "(hung)"
    print("%s unknown TERM -> %r" % ("ok  " if ok else "FAIL", out))
    failures += not ok
os.remove(os.path.join(bad_model, "config.json"))
os.rmdir(bad_model)
print("tui_bad_args: %d failed" % failures)
sys.exit(1 if failures else 0)
