"""`tokenloop tokenize`: ids against the golden corpus (made by @lenml/tokenizers), --file, --add-bos,
--no-parse-special, a model directory holding only tokenizer files, TOKENLOOP_MODEL, and the
exit status and one-line message of every bad-input path.
usage: test_cli.py TOKENLOOP TOKENIZER_DIR GOLDEN.json"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

exe, tokdir, golden_path = sys.argv[1:4]
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("check failed:", what, file=sys.stderr)


def run(*args, env=None):
    e = dict(os.environ)
    e.pop("TOKENLOOP_MODEL", None)
    if env:
        e.update(env)
    p = subprocess.run([exe, "tokenize", *args], capture_output=True, timeout=60, env=e)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8", "replace")


def expect_fail(status, args, needle, env=None):
    rc, out, err = run(*args, env=env)
    lines = err.splitlines()
    check(rc == status, f"{args}: exit {rc}, want {status} ({err.strip()})")
    check(len(lines) == 1 and lines[0].startswith("tokenloop: ") and needle in lines[0],
          f"{args}: stderr {err!r} should be one line with {needle!r}")
    check(out == "", f"{args}: stdout should be empty")


golden = json.load(open(golden_path, encoding="utf-8"))
entries = [e for e in golden["entries"] if "\0" not in e["text"] and e["text"]]
plain = [e for e in entries if not e["flags"]]
tmp = tempfile.mkdtemp(prefix="tl_tok_cli_")
try:
    # ids as the second implementation gives them; pieces spell the text back
    for e in plain[::45]:
        rc, out, err = run("--model", tokdir, "--text", e["text"], "--json")
        check(rc == 0, f"{e['text']!r}: exit {rc} {err}")
        if rc == 0:
            j = json.loads(out)
            check(j["ids"] == e["ids"], f"{e['text']!r}: ids {j['ids']} want {e['ids']}")
            if "<0x" not in "".join(j["pieces"]):
                check("".join(j["pieces"]) == e["text"], f"{e['text']!r}: pieces {j['pieces']}")
    for e in [e for e in entries if e["flags"] == ["no_parse_special"]][:3]:
        rc, out, _ = run("--model", tokdir, "--text", e["text"], "--json", "--no-parse-special")
        check(rc == 0 and json.loads(out)["ids"] == e["ids"], f"--no-parse-special {e['text']!r}")
    for e in [e for e in entries if e["flags"] == ["add_special"]][:2]:
        rc, out, _ = run("--model", tokdir, "--text", e["text"], "--json", "--add-bos")
        check(rc == 0 and json.loads(out)["ids"] == e["ids"], f"--add-bos {e['text']!r}")

    # --file reads bytes as they are (CR LF kept) and agrees with --text
    text = "Xin chào!\r\nThe 12345 cats' \t toys <|eot_id|>\n"
    f = os.path.join(tmp, "in.txt")
    with open(f, "wb") as fh:
        fh.write(text.encode())
    rc1, out1, _ = run("--model", tokdir, "--file", f, "--json")
    rc2, out2, _ = run("--model", tokdir, "--text", text, "--json")
    check(rc1 == 0 and out1 == out2, "--file and --text give the same result")
    ids = json.loads(out1)["ids"] if rc1 == 0 else []
    check(128000 not in ids and 128009 in ids, "no BOS without --add-bos; <|eot_id|> parsed")

    # a NUL byte in a --file is a byte like any other (it used to be feared to cut the text): it
    # is the byte-level token of byte 0, which GPT-2's bytes_to_unicode maps to U+0100 'Ā'
    vocab = json.load(open(os.path.join(tokdir, "tokenizer.json"), encoding="utf-8"))["model"]["vocab"]
    f0 = os.path.join(tmp, "nul.txt")
    with open(f0, "wb") as fh:
        fh.write(b"a\0b")
    rc, out, err = run("--model", tokdir, "--file", f0, "--json")
    want = [vocab["a"], vocab["\u0100"], vocab["b"]]
    check(rc == 0 and json.loads(out)["ids"] == want, f"--file with a NUL byte: {out.strip()} {err.strip()}, want ids {want}")

    # plain output: a count line, then id and display form per token
    rc, out, _ = run("--model", tokdir, "--text", "a b\n")
    lines = out.splitlines()
    check(rc == 0 and lines[0] == f"{len(lines) - 1} tokens", f"plain output header: {lines[:1]}")
    check("\u2423b" in out and "\u21b5" in out, f"plain output shows space and newline markers: {out!r}")

    # a directory holding only the tokenizer files, by --model and by TOKENLOOP_MODEL
    only = os.path.join(tmp, "only")
    os.mkdir(only)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tokdir, name), only)
    rc, out, _ = run("--model", only, "--text", "Hello world", "--json")
    check(rc == 0 and json.loads(out)["ids"] == [9906, 1917], "--model on a tokenizer-only directory")
    rc, out, _ = run("--text", "Hello world", "--json", env={"TOKENLOOP_MODEL": only})
    check(rc == 0 and json.loads(out)["ids"] == [9906, 1917], "TOKENLOOP_MODEL")

    # bad usage: status 2
    expect_fail(2, [], "give --text or --file")
    expect_fail(2, ["--model", tokdir, "--text", "a", "--file", f], "give only one")
    expect_fail(2, ["--model", tokdir, "--text", "a", "--text", "b"], "--text: given twice")
    expect_fail(2, ["--model", tokdir, "--text"], "--text: needs a value")
    expect_fail(2, ["--model"], "--model: needs a value")
    expect_fail(2, ["--model", tokdir, "--text", "a", "--frobnicate"], "--frobnicate: unknown option")
    # bad data: status 1
    expect_fail(1, ["--model", os.path.join(tmp, "nowhere"), "--text", "a"], "tokenizer.json: cannot open: No such file")
    expect_fail(1, ["--text", "a"], "tokenizer.json: cannot open: No such file", env={"TOKENLOOP_MODEL": os.path.join(tmp, "nowhere")})
    broken = os.path.join(tmp, "broken")
    os.mkdir(broken)
    with open(os.path.join(broken, "tokenizer.json"), "w") as fh:
        fh.write('{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [')
    expect_fail(1, ["--model", broken, "--text", "a"], "malformed JSON")
    with open(os.path.join(broken, "tokenizer.json"), "w") as fh:
        fh.write('{"model": {"type": "WordPiece", "vocab": {"a": 0}}}')
    expect_fail(1, ["--model", broken, "--text", "a"], "model type 'WordPiece' is not supported")
    expect_fail(1, ["--model", tokdir, "--file", os.path.join(tmp, "missing.txt")], "missing.txt: cannot open: No such file")
    bad = os.path.join(tmp, "latin1.txt")
    with open(bad, "wb") as fh:
        fh.write("café\n".encode("latin-1"))
    expect_fail(1, ["--model", tokdir, "--file", bad], "latin1.txt: not valid UTF-8 at byte 3")
    expect_fail(1, ["--model", tokdir, "--file", tmp], "Is a directory")
    # a file over the limit is refused from its size, before any of it is read: a sparse 3 GB
    # file fails at once, and the run's peak memory is that of tokenizing one word (before, it
    # read up to the 256 MB limit first)
    big = os.path.join(tmp, "big.txt")
    with open(big, "wb") as fh:
        fh.truncate(3 << 30)
    small = os.path.join(tmp, "small.txt")
    with open(small, "w") as fh:
        fh.write("hello")
    expect_fail(1, ["--model", tokdir, "--file", big], "big.txt: 3221225472 bytes, more than the limit of 268435456")

    def peak_kb(path):
        probe = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], capture_output=True); "
                 "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
        r = subprocess.run([sys.executable, "-c", probe, exe, "tokenize", "--model", tokdir, "--file", path],
                           capture_output=True, text=True, timeout=60)
        return int(r.stdout.strip() or -1)
    pb, ps = peak_kb(big), peak_kb(small)
    check(0 < pb < ps + 32 * 1024, f"refusing a 3 GB file peaked at {pb} KB, tokenizing a word at {ps} KB")
    # --help: status 0, usage on stdout
    p = subprocess.run([exe, "tokenize", "--help"], capture_output=True, timeout=30)
    check(p.returncode == 0 and b"--no-parse-special" in p.stdout, "--help")
finally:
    shutil.rmtree(tmp)

print(f"tokenizer_cli: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
