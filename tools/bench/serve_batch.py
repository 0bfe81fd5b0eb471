"""Why servers batch, measured on servers: 8 concurrent streams of the 1B shape.

    .venv-hf/bin/python tools/bench/serve_batch.py [--rounds 3] [--dir /tmp/tokenloop-peer]
        [--tokenloop build/cli/tokenloop] [--llama-server PATH] [--out FILE]

One set of random bf16 weights of the published Llama 3.2 1B shape (compare_llamacpp.py's:
a Hugging Face directory and a GGUF of the same numbers). Servers, started once, loaded in turn:
  tokenloop serve --slots 8 (the slots' decodes as one batch),
  tokenloop serve --slots 1 (the same 8 requests served in turn through the queue),
  llama.cpp's llama-server -np 8 (continuous batching), when --llama-server names a binary
  (built from the llama.cpp source inside llama-cpp-python's sdist: docs/batching.md).
The load: 8 streaming /v1/completions at once, short prompts (no chat template, so both engines
read the same ids), 48 new tokens each, greedy. Per round and server: total tokens/s (tokens
streamed ÷ wall time from the first request sent to the last stream's end) and the texts.
Rounds alternate the servers, so a shared machine's drifting memory rate moves them alike; the
ratios are taken within a round. The texts of --slots 8 must equal those of --slots 1.
Needs numpy, gguf and openai: .venv-hf has them.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare_llamacpp import ROOT, prepare  # noqa: E402

PROMPTS = ["The river", "Once upon a time", "My favourite colour is", "In the morning we",
           "The capital of France", "Two plus two", "A short poem:", "Cats and dogs"]
NEW = 48


def wait_ready(base, proc, limit_s=600):
    t0 = time.time()
    while time.time() - t0 < limit_s:
        if proc.poll() is not None:
            raise SystemExit("server exited: %s" % proc.args)
        try:
            with urllib.request.urlopen(base + "/health", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit("server not ready: %s" % proc.args)


def start(cmd, port):
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = "http://127.0.0.1:%d" % port
    wait_ready(base, proc)
    return proc, base


def stream(base, prompt, out, i):
    body = dict(model="x", prompt=prompt, max_tokens=NEW, temperature=0, stream=True)
    req = urllib.request.Request(base + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    text, n = [], 0
    with urllib.request.urlopen(req, timeout=600) as r:
        for line in r:
            line = line.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            d = json.loads(line[6:])
            for c in d.get("choices", []):
                if c.get("text"):
                    text.append(c["text"])
                    n += 1
    out[i] = ("".join(text), n)


def load(base):
    out = {}
    ts = [threading.Thread(target=stream, args=(base, p, out, i)) for i, p in enumerate(PROMPTS)]
    t0 = time.time()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.time() - t0
    return [out[i][0] for i in range(len(PROMPTS))], sum(out[i][1] for i in range(len(PROMPTS))) / wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/tokenloop-peer")
    ap.add_argument("--tokenloop", default=os.path.join(ROOT, "build", "cli", "tokenloop"))
    ap.add_argument("--llama-server")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--out")
    ap.add_argument("--exact", action="store_true", help="tokenloop's --exact (fp32 activations in every product)")
    a = ap.parse_args()
    prec = ["--exact"] if a.exact else []
    hf, gg = prepare("llama-3.2-1b", a.dir)
    cfgs = [("tokenloop --slots 8", [a.tokenloop, "serve", "--model", hf, "--slots", "8", "--threads",
                                     str(a.threads), "--port", "18431", "--log", os.devnull] + prec, 18431),
            ("tokenloop --slots 1", [a.tokenloop, "serve", "--model", hf, "--slots", "1", "--queue", "8",
                                     "--threads", str(a.threads), "--port", "18432", "--log", os.devnull] + prec, 18432)]
    if a.llama_server:
        cfgs.append(("llama.cpp -np 8", [a.llama_server, "-m", gg, "-np", "8", "-c", str(8 * 256), "-t",
                                         str(a.threads), "--port", "18433", "--no-warmup"], 18433))
    servers = []
    try:
        for name, cmd, port in cfgs:
            print("starting %s ..." % name, file=sys.stderr)
            servers.append((name,) + start(cmd, port))
        rates = {name: [] for name, _, _ in servers}
        texts = {}
        for r in range(a.rounds):
            for name, _, base in servers:
                got, rate = load(base)
                rates[name].append(rate)
                texts.setdefault(name, got)
                same = got == texts[name]
                print("round %d  %-20s %7.1f tokens/s%s" % (r + 1, name, rate, "" if same else "  (texts changed)"),
                      file=sys.stderr)
        lines = ["| server | total tokens/s (median, min-max over %d rounds) | ÷ tokenloop --slots 1, per round |"
                 % a.rounds, "|---|---|---|"]
        base1 = rates["tokenloop --slots 1"]
        for name in rates:
            v = rates[name]
            ratio = [x / y for x, y in zip(v, base1)]
            lines.append("| %s | %.1f (%.1f-%.1f) | %.2f (%.2f-%.2f) |" % (
                name, statistics.median(v), min(v), max(v), statistics.median(ratio), min(ratio), max(ratio)))
        same = texts["tokenloop --slots 8"] == texts["tokenloop --slots 1"]
        lines.append("")
        differ = sum(x != y for x, y in zip(texts["tokenloop --slots 8"], texts["tokenloop --slots 1"]))
        lines.append("8 streams x %d tokens, greedy, %d threads, tokenloop precision %s; tokenloop --slots 8 texts "
                     "%s --slots 1's" % (NEW, a.threads, "exact" if a.exact else "mixed (the default)",
                                         "equal" if same else "differ in %d of 8 from" % differ))
        report = "\n".join(lines)
        print(report)
        if a.out:
            open(a.out, "w").write(report + "\n")
        return 0 if same else 1
    finally:
        for _, proc, _ in servers:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    sys.exit(main())
