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
- logprobs + top_logprobs, streamed and not: the tokens' bytes map back to the ids generate
  --json chose, one entry per completion token (the EOS too), and every log probability equals
  torch's log_softmax of transformers' LlamaForCausalLM on the same ids (the model's own
  distribution: also when temperature 1.5 chose the tokens);
- curl -N: the bytes on the wire are OpenAI's framing, "data: {json}\n\n" ... "data: [DONE]\n\n";
- a client that disconnects mid-stream frees the server for the next request;
- bad requests, a table (BAD below): each row's status, error.type and error.param.
usage: check_serve.py TOKENLOOP SOURCE_DIR WORK_DIR"""
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import openai
from openai import OpenAI

exe, root, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
bundled = os.path.join(root, "assets/models/tl-mini-instruct")
KEY = "class-key"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_common import check, env, start, stop  # noqa: E402
from serve_common import finish as finish_test  # noqa: E402 (the tests use "finish" for finish_reason)

env = env()
# bad command lines: exit 2 and one line naming the option, before any socket is opened
for args, what in ((["--bogus"], "--bogus"), (["--port", "x"], "--port"), (["--slots", "0"], "--slots"),
                   (["--port"], "--port"), (["--exact", "--bf16-activations"], "at most one of"),
                   (["--host", "no-such-host.invalid"], "--host")):
    p = subprocess.run([exe, "serve"] + args, capture_output=True, text=True, env=env, timeout=30)
    last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
    check(p.returncode == 2 and last.startswith("tokenloop: ") and what in last,
          "serve %s: exit %d, %r" % (" ".join(args), p.returncode, last))
srv, base = start(exe, "--api-key", KEY, "--threads", "2", "--exact")   # torch runs float32
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
    mode = [] if "--temperature" in extra else ["--greedy"]
    p = subprocess.run([exe, "generate", "--model", bundled, "--prompt", q] + mode + ["--stream-mode", "server",
                        "--json", "--top", "1", "--threads", "2", "--exact"] + list(extra), capture_output=True, text=True,
                       env=env)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


try:
    check(raw("GET", "/health") == (200, {"status": "ok", "slots": 1, "busy": 0, "waiting": 0, "queue": 8, "batch": 0}),
          "/health: %r" % (raw("GET", "/health"),))
    models = client.models.list()
    check([x.id for x in models.data] == ["tl-mini-instruct"], "/v1/models: %r" % models)
    m = client.models.retrieve("tl-mini-instruct")
    check(m.id == "tl-mini-instruct" and m.object == "model", "models.retrieve: %r" % m)
    try:
        client.models.retrieve("gpt-4o")
        check(False, "models.retrieve of a model this server does not have succeeded")
    except openai.NotFoundError as e:
        check(e.body.get("code") == "model_not_found", "models.retrieve('gpt-4o'): %r" % e.body)
    # no max_tokens: the budget is the rest of the context (OpenAI's), so a greedy answer ends on
    # EOS, as generate does with a budget it never reaches
    ref = generate("What is the capital of France?", "--max-new-tokens", "2000")
    r = client.chat.completions.create(model="x", messages=[{"role": "user", "content": "What is the capital of France?"}],
                                       temperature=0)
    ext = r.model_extra.get("tokenloop", {})
    check(r.choices[0].finish_reason == "stop" and ext.get("stop_reason") == "eos" and ext.get("budget_source") == "context"
          and r.choices[0].message.content == ref["streamed"] and ref["stop_reason"] == "eos",
          "no max_tokens: %r %r, generate %r" % (r.choices[0], ext, ref["streamed"]))
    # content as OpenAI's list of text parts, streamed: the same answer as the parts joined with "\n"
    parts = [{"type": "text", "text": "What is the capital"}, {"type": "text", "text": "of France?"}]
    got = "".join(ch.choices[0].delta.content or "" for ch in client.chat.completions.create(
        model="x", messages=[{"role": "user", "content": parts}], temperature=0, max_tokens=32, stream=True) if ch.choices)
    ref = generate("What is the capital\nof France?", "--max-new-tokens", "32")
    check(got == ref["streamed"], "streamed text parts: %r, generate on the joined text %r" % (got, ref["streamed"]))
    print("models.retrieve; no max_tokens ends on EOS (budget_source context); streamed text parts = the joined text")

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
                            "--stream-mode", "server", "--max-new-tokens", "24", "--json", "--top", "1", "--exact"],
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

    # logprobs: against transformers' own forward pass on the same ids
    import torch
    from tokenizers import Tokenizer
    from transformers import LlamaForCausalLM
    hf = LlamaForCausalLM.from_pretrained(bundled, dtype=torch.float32).eval()
    vocab = Tokenizer.from_file(os.path.join(bundled, "tokenizer.json"))
    # GPT-2's byte-level alphabet: the token strings of tokenizer.json back to bytes
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    to_char = {b: chr(b) for b in keep}
    extra = 0
    for b in range(256):
        if b not in to_char:
            to_char[b] = chr(256 + extra)
            extra += 1
    from_char = {c: b for b, c in to_char.items()}
    special = {t.content for t in vocab.get_added_tokens_decoder().values()}
    id_of = {}
    for t, i in vocab.get_vocab(with_added_tokens=True).items():
        id_of[t.encode() if t in special else bytes(from_char[c] for c in t)] = i

    def ref_logprobs(ids, n_prompt):
        with torch.no_grad():
            lg = hf(torch.tensor([ids])).logits[0, n_prompt - 1:len(ids) - 1].double()
        return torch.log_softmax(lg, dim=-1)

    worst, n_entries = 0.0, 0

    def check_logprobs(what, content, prompt_ids, gen_ids, top):
        global worst, n_entries
        ids = [id_of.get(bytes(e["bytes"])) for e in content]
        check(ids == gen_ids, "%s: logprobs' tokens %s are not the generated ids %s" % (what, ids[:8], gen_ids[:8]))
        if ids != gen_ids:
            return
        ref = ref_logprobs(prompt_ids + gen_ids, len(prompt_ids))
        for k, e in enumerate(content):
            row = ref[k]
            check(e["token"] == bytes(e["bytes"]).decode("utf-8", "replace"), "%s: token %r" % (what, e["token"]))
            alts = e["top_logprobs"]
            check(len(alts) == top, "%s: %d top_logprobs, asked %d" % (what, len(alts), top))
            for a in [e] + alts:
                worst = max(worst, abs(a["logprob"] - float(row[id_of[bytes(a["bytes"])]])))
            if top:   # the alternatives are the model's best: the k-th is torch's k-th (ties aside)
                best = torch.topk(row, top).values
                worst = max(worst, max(abs(a["logprob"] - float(b)) for a, b in zip(alts, best)))
            n_entries += 1

    for q in qs[:3]:
        msgs = [{"role": "user", "content": q}]
        ref = generate(q, "--max-new-tokens", "32")
        r = client.chat.completions.create(model="x", messages=msgs, temperature=0, max_tokens=32, logprobs=True,
                                           top_logprobs=5)
        lp = [e.model_dump() for e in r.choices[0].logprobs.content]
        check(len(lp) == r.usage.completion_tokens, "%r: %d logprobs for %d tokens" % (q, len(lp), r.usage.completion_tokens))
        check_logprobs(repr(q), lp, ref["prompt_ids"], ref["generated_ids"], 5)
        streamed = []
        for ch in client.chat.completions.create(model="x", messages=msgs, temperature=0, max_tokens=32, logprobs=True,
                                                 top_logprobs=2, stream=True):
            for c in ch.choices:
                if c.logprobs and c.logprobs.content:
                    streamed += [e.model_dump() for e in c.logprobs.content]
        check_logprobs("%r streamed" % q, streamed, ref["prompt_ids"], ref["generated_ids"], 2)
    # sampled at temperature 1.5: the tokens are the sampler's, the log probabilities still the model's
    ref = generate(qs[1], "--max-new-tokens", "24", "--temperature", "1.5", "--top-k", "0", "--top-p", "1",
                   "--seed", "11")
    r = client.chat.completions.create(model="x", messages=[{"role": "user", "content": qs[1]}], temperature=1.5,
                                       top_p=1, seed=11, max_tokens=24, logprobs=True, extra_body={"top_k": 0})
    check_logprobs("temperature 1.5", [e.model_dump() for e in r.choices[0].logprobs.content], ref["prompt_ids"],
                   ref["generated_ids"], 0)
    check(worst <= 2e-3, "logprobs differ from torch's log_softmax by up to %.2e" % worst)
    print("logprobs: %d tokens (greedy, streamed, temperature 1.5) map to generate's ids; |logprob - torch| <= %.1e"
          % (n_entries, worst))

    # curl -N, as the README shows it: the bytes on the wire
    body = json.dumps({"messages": [{"role": "user", "content": qs[0]}], "temperature": 0, "max_tokens": 48,
                       "stream": True})
    wire = subprocess.run(["curl", "-sN", base + "/v1/chat/completions", "-H", "Authorization: Bearer " + KEY,
                           "-d", body], capture_output=True, timeout=120).stdout.decode()
    events = wire.split("\n\n")
    check(wire.endswith("data: [DONE]\n\n") and events[-1] == "" and events[-2] == "data: [DONE]"
          and all(e.startswith("data: {") and "\n" not in e for e in events[:-2]), "curl -N framing: %r" % wire[-300:])
    chunks = [json.loads(e[6:]) for e in events[:-2]]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    check(text == generate(qs[0], "--max-new-tokens", "48")["streamed"], "curl -N text %r" % text)
    print("curl -N: %d events, then data: [DONE]" % len(chunks))

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

    # bad requests: OpenAI's error objects, one row each (name, method, path, body, key, status,
    # error.type, error.param; "*" a param of any value)
    hi = [{"role": "user", "content": "hi"}]
    long = [{"role": "user", "content": "word " * 5000}]
    BAD = [
        ("wrong key", "GET", "/v1/models", None, "wrong", 401, "authentication_error", None),
        ("no key", "POST", "/v1/chat/completions", {"messages": hi}, None, 401, "authentication_error", None),
        ("not JSON", "POST", "/v1/chat/completions", b'{"messages": [', KEY, 400, "invalid_request_error", None),
        ("not an object", "POST", "/v1/chat/completions", [1, 2], KEY, 400, "invalid_request_error", None),
        ("no messages", "POST", "/v1/chat/completions", {"model": "x"}, KEY, 400, "invalid_request_error", "messages"),
        ("messages not a list", "POST", "/v1/chat/completions", {"messages": "hi"}, KEY, 400, "invalid_request_error", "messages"),
        ("empty conversation", "POST", "/v1/chat/completions", {"messages": []}, KEY, 400, "invalid_request_error", "messages"),
        ("message not an object", "POST", "/v1/chat/completions", {"messages": ["hi"]}, KEY, 400, "invalid_request_error", "messages"),
        ("unknown role", "POST", "/v1/chat/completions", {"messages": [{"role": "wizard", "content": "hi"}]}, KEY, 400,
         "invalid_request_error", "messages"),
        ("no content", "POST", "/v1/chat/completions", {"messages": [{"role": "user"}]}, KEY, 400, "invalid_request_error", "messages"),
        ("content a number", "POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": 7}]}, KEY, 400,
         "invalid_request_error", "messages"),
        ("prompt past the context", "POST", "/v1/chat/completions", {"messages": long}, KEY, 400, "invalid_request_error", "messages"),
        ("temperature 5", "POST", "/v1/chat/completions", {"messages": hi, "temperature": 5}, KEY, 400, "invalid_request_error", "temperature"),
        ("temperature a string", "POST", "/v1/chat/completions", {"messages": hi, "temperature": "hot"}, KEY, 400,
         "invalid_request_error", "temperature"),
        ("top_p 0", "POST", "/v1/chat/completions", {"messages": hi, "top_p": 0}, KEY, 400, "invalid_request_error", "top_p"),
        ("max_tokens 0", "POST", "/v1/chat/completions", {"messages": hi, "max_tokens": 0}, KEY, 400, "invalid_request_error", "max_tokens"),
        ("max_tokens -5", "POST", "/v1/chat/completions", {"messages": hi, "max_tokens": -5}, KEY, 400, "invalid_request_error", "max_tokens"),
        ("max_tokens huge", "POST", "/v1/chat/completions", {"messages": hi, "max_tokens": 10 ** 12}, KEY, 400,
         "invalid_request_error", "max_tokens"),
        ("max_completion_tokens 0", "POST", "/v1/chat/completions", {"messages": hi, "max_completion_tokens": 0}, KEY, 400,
         "invalid_request_error", "max_completion_tokens"),
        ("n 2", "POST", "/v1/chat/completions", {"messages": hi, "n": 2}, KEY, 400, "invalid_request_error", "n"),
        ("presence_penalty", "POST", "/v1/chat/completions", {"messages": hi, "presence_penalty": 1}, KEY, 400,
         "invalid_request_error", "presence_penalty"),
        ("logit_bias", "POST", "/v1/chat/completions", {"messages": hi, "logit_bias": {"1": 5}}, KEY, 400,
         "invalid_request_error", "logit_bias"),
        ("tools", "POST", "/v1/chat/completions", {"messages": hi, "tools": []}, KEY, 400, "invalid_request_error", "tools"),
        ("stream a string", "POST", "/v1/chat/completions", {"messages": hi, "stream": "yes"}, KEY, 400, "invalid_request_error", "stream"),
        ("stop a number", "POST", "/v1/chat/completions", {"messages": hi, "stop": 3}, KEY, 400, "invalid_request_error", "stop"),
        ("five stop strings", "POST", "/v1/chat/completions", {"messages": hi, "stop": list("abcde")}, KEY, 400,
         "invalid_request_error", "stop"),
        ("top_logprobs 21", "POST", "/v1/chat/completions", {"messages": hi, "logprobs": True, "top_logprobs": 21}, KEY, 400,
         "invalid_request_error", "top_logprobs"),
        ("top_logprobs without logprobs", "POST", "/v1/chat/completions", {"messages": hi, "top_logprobs": 2}, KEY, 400,
         "invalid_request_error", "top_logprobs"),
        ("logprobs on completions", "POST", "/v1/completions", {"prompt": "Hi", "logprobs": 2}, KEY, 400,
         "invalid_request_error", "logprobs"),
        ("messages on completions", "POST", "/v1/completions", {"messages": hi}, KEY, 400, "invalid_request_error", "messages"),
        ("empty prompt", "POST", "/v1/completions", {"prompt": ""}, KEY, 400, "invalid_request_error", "prompt"),
        ("body over 8 MiB", "POST", "/v1/chat/completions", b"x" * (8 << 20 | 1), KEY, 413, "invalid_request_error", None),
        ("unknown path", "GET", "/v2/nothing", None, KEY, 404, "invalid_request_error", None),
        ("GET a POST route", "GET", "/v1/chat/completions", None, KEY, 405, "invalid_request_error", None),
    ]
    for name, method, path, body, key, status, etype, param in BAD:
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        code, got = raw(method, path, data, key=key)
        err = got.get("error", {}) if isinstance(got, dict) else {}
        check(code == status and err.get("type") == etype and err.get("param") == param and err.get("message"),
              "bad request %r: %d %r (want %d %s %s)" % (name, code, got, status, etype, param))
    print("%d bad requests: each its status, error type and param" % len(BAD))
    check(srv.poll() is None, "the server is still running after the bad requests")
finally:
    stop(srv)

# --slots 2 --queue 1 --no-batch: two students at once, each with a KV cache of their own on one
# copy of the weights and passes of their own, so a seeded answer is the same bits as alone (a
# batched pass rounds otherwise; check_serve_load.py runs the batch); a third request waits for a
# slot, a fourth is told to come back (429 + Retry-After)
srv, base = start(exe, "--slots", "2", "--queue", "1", "--threads", "1", "--exact", "--no-batch")
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
    # the fourth goes in once /health shows both slots busy and the third waiting (a fixed
    # sleep lost the race on a loaded CI machine), with a body the server would accept, so
    # only the full queue can refuse it
    deadline, state = time.time() + 20, {}
    while time.time() < deadline:
        with urllib.request.urlopen(base + "/health", timeout=5) as h:
            state = json.loads(h.read())
        if state.get("busy") == 2 and state.get("waiting") == 1:
            break
        time.sleep(0.01)
    check(state.get("busy") == 2 and state.get("waiting") == 1, "slots full and one waiting: %r" % state)
    fourth = seeded(4, 8)
    fourth.update(fourth.pop("extra_body"))   # as the openai client sends extra_body: at the top level
    req = urllib.request.Request(base + "/v1/chat/completions", method="POST", data=json.dumps(fourth).encode())
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
    print("--slots 2 --no-batch: two seeded streams at once equal the same requests alone; a third waited; "
          "a fourth got 429")
finally:
    stop(srv)
finish_test("openai %s against tokenloop serve" % openai.__version__)
