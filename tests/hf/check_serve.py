"""`tokenloop serve` against the `openai` Python client (scripts/requirements-hf.txt), the client
a student's own code would use: the server on the bundled model, then
- /v1/models, /health; /v1/completions (raw text, no template) against generate --ids;
- for held-out questions, a greedy chat completion equals `tokenloop generate --json` in server
  stream mode (text, finish_reason mapped from the stop reason, usage: prompt tokens and
  completion tokens kept apart, trap 1);
- the same request streamed: the deltas add up to the same text, more than one content chunk,
  the final chunk's finish_reason, the usage chunk of stream_options.include_usage, [DONE];
- a stop string (not in the content, finish_reason "stop", tokenloop's stop_reason
  "stop_string"), max_tokens (finish_reason "length");
- a client that disconnects mid-stream frees the server for the next request;
- bad requests: wrong API key (401), a temperature out of range (400 naming the parameter), no
  messages, a body that is not JSON, an unknown path (404), each one OpenAI error object.
usage: check_serve.py TOKENLOOP SOURCE_DIR WORK_DIR"""
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request

import openai
from openai import OpenAI

exe, root, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
bundled = os.path.join(root, "assets/models/tl-mini-instruct")
KEY = "class-key"
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAILED:", what)


env = dict(os.environ)
env.pop("TOKENLOOP_MODEL", None)
srv = subprocess.Popen([exe, "serve", "--port", "0", "--api-key", KEY, "--threads", "2"], stderr=subprocess.PIPE,
                       text=True, env=env)
line = srv.stderr.readline()
m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
if not m:
    srv.kill()
    sys.exit("check_serve: the server did not say where it listens: %r" % line)
base = "http://127.0.0.1:%s" % m.group(1)


def drain(proc, sink):
    """the server's stderr after its first line (a sanitizer's report, libmicrohttpd's errors)"""
    for l in proc.stderr:
        sink.append(l)


import threading
server_log = []
threading.Thread(target=drain, args=(srv, server_log), daemon=True).start()
client = OpenAI(base_url=base + "/v1", api_key=KEY, max_retries=0, timeout=120)


def raw(method, path, body=None, key=KEY):
    req = urllib.request.Request(base + path, data=body, method=method,
                                 headers={"Authorization": "Bearer " + key} if key else {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def generate(q, *extra):
    p = subprocess.run([exe, "generate", "--model", bundled, "--prompt", q, "--greedy", "--stream-mode", "server",
                        "--json", "--top", "1", "--threads", "2"] + list(extra), capture_output=True, text=True,
                       env=env)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


try:
    check(raw("GET", "/health") == (200, {"status": "ok"}), "/health")
    models = client.models.list()
    check([x.id for x in models.data] == ["tl-mini-instruct"], "/v1/models: %r" % models)

    subprocess.run([sys.executable, os.path.join(root, "tools/corpus/gen.py"), "--seed", "1234", "--n", "0",
                    "--out", os.path.join(work, "held")], check=True, stdout=subprocess.DEVNULL)
    qs = [json.loads(l)["question"] for l in open(os.path.join(work, "held", "eval.jsonl"))][5::60][:6]
    qs.append([json.loads(l)["question"] for l in open(os.path.join(work, "held", "long.jsonl"))][0])
    n_chunks = 0
    for q in qs:
        msgs = [{"role": "user", "content": q}]
        ref = generate(q, "--max-new-tokens", "48")
        want_finish = "length" if ref["stop_reason"] == "max_new_tokens" else "stop"
        r = client.chat.completions.create(model="tl-mini-instruct", messages=msgs, temperature=0, max_tokens=48)
        c = r.choices[0]
        check(c.message.content == ref["streamed"] and c.finish_reason == want_finish,
              "%r: %r %s vs generate %r %s" % (q, c.message.content, c.finish_reason, ref["streamed"], ref["stop_reason"]))
        check(r.usage.prompt_tokens == len(ref["prompt_ids"]) and r.usage.completion_tokens == len(ref["generated_ids"])
              and r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens, "%r: usage %r" % (q, r.usage))
        check(r.model_extra.get("tokenloop", {}).get("stop_reason") == ref["stop_reason"], "%r: tokenloop stop_reason" % q)
        parts, finish, usage, content_chunks, token_ms, ext = [], None, None, 0, [], {}
        stream = client.chat.completions.create(model="tl-mini-instruct", messages=msgs, temperature=0, max_tokens=48,
                                                stream=True, stream_options={"include_usage": True})
        for ch in stream:
            if ch.usage:
                usage = ch.usage
            for choice in ch.choices:
                if choice.delta.content:
                    parts.append(choice.delta.content)
                    content_chunks += 1
                    token_ms.append(ch.model_extra["tokenloop"]["token_ms"])
                if choice.finish_reason:
                    finish = choice.finish_reason
                    ext = ch.model_extra.get("tokenloop", {})
        check("".join(parts) == ref["streamed"] and finish == want_finish,
              "%r stream: %r %s vs %r" % (q, "".join(parts), finish, ref["streamed"]))
        check(content_chunks > 1 and usage is not None and usage.completion_tokens == len(ref["generated_ids"]),
              "%r stream: %d content chunks, usage %r" % (q, content_chunks, usage))
        # each chunk carries the server's time of the token that completed it: never before the
        # first token (TTFT), never going back
        check(token_ms == sorted(token_ms) and token_ms[0] >= ext.get("ttft_ms", 1e9) - 1e-6,
              "%r stream: token_ms %s, ttft %s" % (q, token_ms[:4], ext.get("ttft_ms")))
        n_chunks += content_chunks
    print("%d questions: completions and streams equal generate --json; %d content chunks" % (len(qs), n_chunks))

    # /v1/completions: the raw text, no template (BOS from the tokenizer), as generate --ids of
    # the same tokens; streamed, the text chunks add up to it
    for text in ("What is the capital of France?", "Once upon a time"):
        tk = subprocess.run([exe, "tokenize", "--model", bundled, "--text", text, "--add-bos", "--json"],
                            capture_output=True, text=True, env=env)
        ids = json.loads(tk.stdout)["ids"]
        p = subprocess.run([exe, "generate", "--model", bundled, "--ids", ",".join(map(str, ids)), "--greedy",
                            "--stream-mode", "server", "--max-new-tokens", "24", "--json", "--top", "1"],
                           capture_output=True, text=True, env=env)
        ref = json.loads(p.stdout)
        r = client.completions.create(model="x", prompt=text, temperature=0, max_tokens=24)
        check(r.choices[0].text == ref["streamed"] and r.usage.prompt_tokens == len(ids)
              and r.usage.completion_tokens == len(ref["generated_ids"]),
              "completions %r: %r vs generate --ids %r" % (text, r.choices[0].text, ref["streamed"]))
        got = "".join(ch.choices[0].text for ch in client.completions.create(model="x", prompt=text, temperature=0,
                                                                            max_tokens=24, stream=True) if ch.choices)
        check(got == ref["streamed"], "completions stream %r: %r" % (text, got))
        print("/v1/completions %r (no template) -> %r" % (text, r.choices[0].text[:60]))

    # a stop string: cut from the content, as OpenAI and llama.cpp's server do
    q = qs[0]
    ref = generate(q, "--max-new-tokens", "48")
    word = ref["streamed"].split()[2] if len(ref["streamed"].split()) > 2 else ref["streamed"][:2]
    r = client.chat.completions.create(model="x", messages=[{"role": "user", "content": q}], temperature=0, stop=[word])
    want = ref["streamed"][:ref["streamed"].find(word)]
    check(r.choices[0].message.content == want and r.choices[0].finish_reason == "stop"
          and r.model_extra["tokenloop"]["stop_reason"] == "stop_string",
          "stop %r: %r (%s) vs %r" % (word, r.choices[0].message.content, r.model_extra, want))
    r = client.chat.completions.create(model="x", messages=[{"role": "user", "content": qs[-1]}], temperature=0,
                                       max_tokens=3)
    check(r.choices[0].finish_reason == "length" and r.usage.completion_tokens == 3, "max_tokens=3: %r" % r)

    # a client that goes away: the generation stops at the next token and the next request is
    # served at once. Temperature 2 over the whole vocabulary keeps the model off its EOS for hundreds of tokens (seconds of
    # work: the same request unread takes that long, measured first)
    slow = dict(model="x", messages=[{"role": "user", "content": qs[-1]}], temperature=2, top_p=1, seed=7, extra_body={"top_k": 0},
                max_tokens=400)
    t0 = time.time()
    full = client.chat.completions.create(**slow)
    full_s = time.time() - t0
    check(full.usage.completion_tokens >= 100, "the unread request made only %d tokens" % full.usage.completion_tokens)
    stream = client.chat.completions.create(stream=True, **slow)
    for i, ch in enumerate(stream):
        if i == 2:
            break
    stream.close()
    t0 = time.time()
    r = client.chat.completions.create(model="x", messages=[{"role": "user", "content": qs[0]}], temperature=0,
                                       max_tokens=8)
    waited = time.time() - t0
    check(r.choices[0].message.content and waited < full_s / 3, "after a disconnect the next request took %.1f s "
          "(the whole generation takes %.1f s)" % (waited, full_s))
    print("after a client disconnected mid-stream, the next request was answered in %.2f s (the whole "
          "%d-token generation it cut short takes %.2f s)" % (waited, full.usage.completion_tokens, full_s))

    # bad requests: OpenAI's error objects
    try:
        OpenAI(base_url=base + "/v1", api_key="wrong", max_retries=0).models.list()
        check(False, "a wrong key was accepted")
    except openai.AuthenticationError as e:
        check(e.status_code == 401, "wrong key: %r" % e)
    try:
        client.chat.completions.create(model="x", messages=[{"role": "user", "content": "hi"}], temperature=5)
        check(False, "temperature 5 was accepted")
    except openai.BadRequestError as e:
        check(e.status_code == 400 and e.body.get("param") == "temperature", "temperature 5: %r" % e.body)
    code, body = raw("POST", "/v1/chat/completions", b'{"model": "x"}')
    check(code == 400 and body["error"]["param"] == "messages", "no messages: %d %r" % (code, body))
    code, body = raw("POST", "/v1/chat/completions", b'{"messages": [')
    check(code == 400 and "error" in body, "not JSON: %d %r" % (code, body))
    code, body = raw("POST", "/v1/chat/completions", b'{"messages": []}')
    check(code == 400 and "empty conversation" in body["error"]["message"], "empty conversation: %d %r" % (code, body))
    code, body = raw("GET", "/v2/nothing")
    check(code == 404 and "error" in body, "unknown path: %d %r" % (code, body))
    check(srv.poll() is None, "the server is still running after the bad requests")
finally:
    srv.terminate()
    if srv.poll() is not None and srv.returncode not in (0, -15):
        sys.stderr.write("the server ended with %s:\n%s" % (srv.returncode, "".join(server_log)[-6000:]))
    try:
        rc = srv.wait(timeout=30)
    except subprocess.TimeoutExpired:
        srv.kill()
        rc = "killed"
check(rc == 0, "the server exits 0 on SIGTERM (got %s)" % rc)

# --slots 2 --queue 1: two students at once, each with a KV cache of their own on one copy of the
# weights; a third request waits for a slot, a fourth is told to come back (429 + Retry-After)
srv = subprocess.Popen([exe, "serve", "--port", "0", "--slots", "2", "--queue", "1", "--threads", "1"],
                       stderr=subprocess.PIPE, text=True, env=env)
base = "http://127.0.0.1:%s" % re.search(r":(\d+),", srv.stderr.readline()).group(1)
threading.Thread(target=drain, args=(srv, server_log), daemon=True).start()
client = OpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=120)
try:
    def seeded(seed, n=600):
        return dict(model="x", messages=[{"role": "user", "content": qs[-1]}], temperature=2, top_p=1, seed=seed,
                    max_tokens=n, extra_body={"top_k": 0})
    alone = [client.chat.completions.create(**seeded(k)).choices[0].message.content for k in (1, 2)]
    results, events = {}, []

    def run(name, kw):
        try:
            got = []
            for ch in client.chat.completions.create(stream=True, **kw):
                for c in ch.choices:
                    if c.delta.content:
                        got.append(c.delta.content)
                        events.append((time.time(), name))
            results[name] = "".join(got)
        except openai.APIStatusError as e:
            results[name] = e

    ts = [threading.Thread(target=run, args=(k, seeded(k))) for k in (1, 2)]
    for t in ts:
        t.start()
    time.sleep(0.15)
    t3 = threading.Thread(target=run, args=(3, seeded(3, 8)))
    t3.start()
    time.sleep(0.15)
    req = urllib.request.Request(base + "/v1/chat/completions", method="POST",
                                 data=json.dumps(seeded(4, 8)).encode())
    try:
        urllib.request.urlopen(req, timeout=60)
        check(False, "a fourth request with 2 slots busy and the queue full was served")
    except urllib.error.HTTPError as e:
        check(e.code == 429 and e.headers.get("Retry-After") == "1", "the fourth request: %d %s" % (e.code, e.headers))
    for t in ts + [t3]:
        t.join()
    check([results.get(1), results.get(2)] == alone, "two slots at once give what each gives alone (same seeds)")
    check(isinstance(results.get(3), str) and results[3], "the queued request was served: %r" % results.get(3))
    # both streams were producing at the same time: each one's chunks arrive before the other's end
    first = {n: min(t for t, m in events if m == n) for n in (1, 2)}
    last = {n: max(t for t, m in events if m == n) for n in (1, 2)}
    check(first[1] < last[2] and first[2] < last[1], "the two slots' streams overlap in time")
    print("--slots 2: two seeded streams at once equal the same requests alone; a third waited; a fourth got 429")
finally:
    srv.terminate()
    try:
        rc = srv.wait(timeout=30)
    except subprocess.TimeoutExpired:
        srv.kill()
        rc = "killed"
check(rc == 0, "the server exits 0 on SIGTERM (got %s)" % rc)
if failures or server_log:
    sys.stderr.write("the server's stderr:\n" + "".join(server_log)[-6000:])
print("openai %s against tokenloop serve: %d failures" % (openai.__version__, len(failures)))
sys.exit(1 if failures or server_log else 0)
