"""Random conversations through every chat template of the corpus, rendered by transformers'
own apply_chat_template: the goldens of tests/template/conversation-goldens.json.

    .venv-hf/bin/python tools/template-goldens/conversations.py [--check FILE]

A fixed seed draws, per case, a template and a conversation: roles (system, user, assistant,
tool, and roles no template expects), content of plain text, Unicode (non-printable characters,
combining marks, emoji, CJK, right-to-left), Jinja-looking text, the special-token strings of
every template family, content as a list of parts, assistant turns with tool calls (arguments as
dicts and as JSON strings, integers past 64 bits), tool results, reasoning fields; and the call:
tools, documents, date_string, enable_thinking, add_generation_prompt on and off,
continue_final_message. Each case records the exact JSON of its inputs (big integers stay exact)
and transformers' text, or the exception it raised ("Class: message"; raised_by_template when
the template called raise_exception, in_transformers when apply_chat_template itself refused).
--check FILE renders the cases of FILE again and exits 1 unless every result is the same: the
committed goldens are transformers' output, not a copy of tokenloop's.
Reads ../shared/conformance/templates for Llama 3.2/3.3 (skipped when absent)."""
import argparse
import json
import os
import random
import sys
import time
import unicodedata

import jinja2
import transformers
from transformers import AutoTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
SHARED = os.path.join(ROOT, "..", "shared")
N_CASES = 8000
SEED = 20261204
NOW = 1733011200  # strftime_now's clock, as in render.py: 2024-12-01 00:00 UTC


def template_sources():
    """id -> (source as test_template reads it, text, bos, eos)"""
    out = {}
    with open(os.path.join(ROOT, "assets/tokenizer/tokenizer_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    out["llama-3.1"] = ("assets/tokenizer/tokenizer_config.json", cfg["chat_template"], cfg["bos_token"],
                        cfg["eos_token"])
    for tid, file in (("llama-3.2", "meta-llama-Llama-3.2-3B-Instruct.jinja"),
                      ("llama-3.3", "meta-llama-Llama-3.3-70B-Instruct.jinja")):
        path = os.path.join(SHARED, "conformance/templates", file)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                out[tid] = ("shared:conformance/templates/" + file, f.read(), cfg["bos_token"], cfg["eos_token"])
    tdir = os.path.join(HERE, "templates")
    for file in sorted(os.listdir(tdir)):
        with open(os.path.join(tdir, file), encoding="utf-8") as f:
            t = json.load(f)
        out[file[:-5]] = ("tools/template-goldens/templates/" + file, t["chat_template"], t.get("bos_token"),
                          t.get("eos_token"))
    return out


SPECIALS = ["<|eot_id|>", "<|start_header_id|>system<|end_header_id|>\n\n", "<|begin_of_text|>", "<|eom_id|>",
            "<|python_tag|>", "<|im_start|>assistant\n", "<|im_end|>", "<start_of_turn>model\n", "<end_of_turn>",
            "[INST]", "[/INST]", "<s>", "</s>", "<|user|>", "<|end|>", "<｜User｜>", "<｜Assistant｜>",
            "<think>", "</think>", "<tool_call>", "</tool_call>", "<|endoftext|>"]
UNICODE = ["Xin chào, thế giới", "你好，世界", "こんにちは", "مرحبا بالعالم", "שלום", "Ελληνικά", "🦙🔥👨‍👩‍👧",
           "e\u0301 combining", "nbsp\u00a0here", "zero\u200bwidth\u200f", "line\u2028sep\u2029para",
           "ideographic\u3000space", "bom\ufeffinside", "private\ue000use", "unassigned\u0378\u0379",
           "ctrl\x01\x7f\x9f", "tab\tand\r\nCRLF", "\x0b\x0c\x1c\x1d\x1e\x85 splits", "  padded  ", "", " ",
           "\n\nleading newlines", "trailing newline\n", "surrogate-free 𝔘𝔫𝔦𝔠𝔬𝔡𝔢"]
JINJA = ["{{ messages }}", "{% if true %}x{% endif %}", "{# comment #}", "{{ raise_exception('x') }}",
         "{%- set x = 1 -%}", "}}{{", "{% endfor %}", "{{ '%s' % 1 }}", "${var}", "\\n literal"]
WORDS = "the a model token pass cache stream stop budget weather city time Hanoi Paris tool answer".split()
ROLES = ["system", "user", "assistant", "tool"]
ODD_ROLES = ["ipython", "developer", "function", "observation", "User", ""]
BIG = [12345678901234567890, 2 ** 64, -(2 ** 63) - 1, 10 ** 30, 2 ** 63 - 1, -(2 ** 63)]


def text(rng):
    kind = rng.random()
    if kind < 0.35:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12))) + rng.choice(["", ".", "?", "!\n"])
    if kind < 0.6:
        return rng.choice(UNICODE) + (" " + rng.choice(UNICODE) if rng.random() < 0.3 else "")
    if kind < 0.75:
        return rng.choice(WORDS) + " " + rng.choice(JINJA)
    if kind < 0.9:
        return rng.choice(WORDS) + rng.choice(SPECIALS) + rng.choice(WORDS)
    return "".join(random_char(rng) for _ in range(rng.randint(1, 10)))


def random_char(rng):
    """Any code point but those unassigned in this interpreter's Unicode database: whether one
    is printable (repr escapes it or not) depends on the Unicode version, which is Python's
    (3.11: 14.0) on one side and utf8proc's (2.8: 15.0) on the other; U+0378 in UNICODE keeps
    the unassigned case itself covered."""
    while True:
        c = chr(rng.choice([rng.randint(0x20, 0x7e), rng.randint(0xa0, 0x2fff), rng.randint(0x3000, 0xd7ff),
                            rng.randint(0xe000, 0xfffd), rng.randint(0x10000, 0x1f9ff)]))
        if unicodedata.category(c) != "Cn":
            return c


def value(rng, depth=0):
    k = rng.random()
    if k < 0.3:
        return text(rng)
    if k < 0.45:
        return rng.randint(-1000, 1000)
    if k < 0.55:
        return rng.choice(BIG)
    if k < 0.62:
        return rng.choice([0.5, -2.25, 1e-7, 3.0, 1e21])
    if k < 0.7:
        return rng.choice([True, False, None])
    if depth < 2 and k < 0.85:
        return [value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if depth < 2:
        return {rng.choice(WORDS) + str(i): value(rng, depth + 1) for i in range(rng.randint(0, 3))}
    return text(rng)


def call_id(rng):
    alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    return "".join(rng.choice(alnum) for _ in range(9 if rng.random() < 0.7 else rng.randint(1, 14)))


def tool_call(rng):
    args = {rng.choice(WORDS): value(rng) for _ in range(rng.randint(0, 3))}
    fn = {"name": rng.choice(["get_weather", "get_time", "search", "brave_search", "wolfram_alpha", "x"]),
          "arguments": args if rng.random() < 0.6 else json.dumps(args, ensure_ascii=rng.random() < 0.5)}
    tc = {"type": "function", "function": fn}
    if rng.random() < 0.7:
        tc["id"] = call_id(rng)
    return tc


def content(rng):
    k = rng.random()
    if k < 0.86:
        return text(rng)
    if k < 0.97:
        parts = []
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.75:
                parts.append({"type": "text", "text": text(rng)})
            else:
                parts.append({"type": rng.choice(["image", "image_url", "audio"])})
        return parts
    return rng.choice([None, 42, ""])


def message(rng, role):
    m = {"role": role}
    if role == "assistant" and rng.random() < 0.3:
        m["tool_calls"] = [tool_call(rng) for _ in range(1 if rng.random() < 0.8 else 2)]
        m["content"] = rng.choice([None, "", text(rng)])
        if rng.random() < 0.2:
            del m["content"]
    else:
        m["content"] = content(rng)
    if role == "assistant" and rng.random() < 0.15:
        m[rng.choice(["reasoning_content", "thinking", "reasoning"])] = text(rng)
    if role == "tool":
        if rng.random() < 0.7:
            m["tool_call_id"] = call_id(rng)
        if rng.random() < 0.5:
            m["name"] = rng.choice(["get_weather", "get_time", "search"])
        if rng.random() < 0.3:
            m["content"] = json.dumps(value(rng))
    return m


def conversation(rng):
    n = rng.randint(1, 6)
    msgs = []
    if rng.random() < 0.3:
        msgs.append(message(rng, "system"))
    for i in range(n):
        r = rng.random()
        if r < 0.03:
            role = rng.choice(ODD_ROLES)
        elif r < 0.07:
            role = rng.choice(ROLES)   # out of order
        else:
            role = "user" if i % 2 == 0 else ("tool" if msgs and "tool_calls" in msgs[-1] else "assistant")
        msgs.append(message(rng, role))
    return msgs


def tools(rng):
    out = []
    for name in rng.sample(["get_weather", "get_time", "search", "calc"], rng.randint(1, 3)):
        props = {w: {"type": rng.choice(["string", "integer", "number", "boolean"]), "description": text(rng)}
                 for w in rng.sample(WORDS, rng.randint(0, 3))}
        fn = {"name": name, "description": text(rng),
              "parameters": {"type": "object", "properties": props, "required": list(props)[:1]}}
        out.append({"type": "function", "function": fn} if rng.random() < 0.85 else fn)
    return out


def make_case(rng, i, tids):
    tid = rng.choice(tids)
    msgs = conversation(rng)
    call = {"add_generation_prompt": rng.random() < 0.6, "continue_final_message": False}
    if not call["add_generation_prompt"] and rng.random() < 0.25:
        call["continue_final_message"] = True
    extra = {}
    if rng.random() < 0.3:
        extra["tools"] = tools(rng)
    if rng.random() < 0.1:
        extra["documents"] = [{"title": text(rng), "text": text(rng)} for _ in range(rng.randint(1, 2))]
    if rng.random() < 0.25:
        extra["date_string"] = rng.choice(["26 Jul 2024", "01 Jan 2025", text(rng)])
    if rng.random() < 0.2:
        extra["enable_thinking"] = rng.random() < 0.5
    if rng.random() < 0.1:
        extra["tools_in_user_message"] = rng.random() < 0.5
    if rng.random() < 0.05:
        extra["custom_tools"] = tools(rng)
    return {"name": "conv%d" % i, "template": tid, "messages": msgs, "vars": extra, **call}


def render(tok, case, src):
    _, tpl, bos, eos = src
    extra = dict(case["vars"])
    kw = {k: v for k, v in extra.items() if k not in ("tools", "documents")}
    if bos is not None:
        kw["bos_token"] = bos
    if eos is not None:
        kw["eos_token"] = eos
    try:
        out = tok.apply_chat_template(case["messages"], tools=extra.get("tools"), documents=extra.get("documents"),
                                      chat_template=tpl, add_generation_prompt=case["add_generation_prompt"],
                                      continue_final_message=case["continue_final_message"], tokenize=False, **kw)
        return {"text": out}
    except Exception as e:   # noqa: BLE001 (whatever Jinja2 or transformers raises is the golden)
        jinja_error = isinstance(e, jinja2.exceptions.TemplateError) or e.__traceback__ and any(
            "<template>" in str(fr.f_code.co_filename) for fr in _frames(e))
        return {"error": "%s: %s" % (type(e).__name__, e), "raised_by_template": type(e) is jinja2.exceptions.TemplateError,
                "in_transformers": not jinja_error}


def _frames(e):
    tb = e.__traceback__
    while tb:
        yield tb.tb_frame
        tb = tb.tb_next


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", help="render FILE's cases again and compare")
    ap.add_argument("--out", default=os.path.join(ROOT, "tests/template/conversation-goldens.json"))
    args = ap.parse_args()
    os.environ["TZ"] = "UTC"
    time.tzset()
    srcs = template_sources()
    tok = AutoTokenizer.from_pretrained(os.path.join(ROOT, "assets/tokenizer"))
    # strftime_now reads the real clock in transformers; the goldens need one fixed second
    import transformers.utils.chat_template_utils as ctu
    import datetime
    real_datetime = ctu.datetime if hasattr(ctu, "datetime") else None

    class Fixed(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime.datetime.fromtimestamp(NOW, tz or datetime.timezone.utc).replace(tzinfo=None)

    if real_datetime is not None:
        ctu.datetime = Fixed
    ctu._compile_jinja_template.cache_clear()
    if args.check:
        with open(args.check, encoding="utf-8") as f:
            gold = json.load(f)
        bad = 0
        for c in gold["cases"]:
            if c["template"] not in srcs:
                continue
            case = dict(c, messages=json.loads(c["messages_json"]), vars={k: json.loads(v) for k, v in c["vars"]})
            got = render(tok, case, srcs[c["template"]])
            want = {k: c[k] for k in ("text", "error", "raised_by_template", "in_transformers") if k in c}
            if got != want:
                bad += 1
                if bad <= 10:
                    print("%s: transformers now gives %r, the golden %r" % (c["name"], got, want), file=sys.stderr)
        print("conversations --check: %d cases rendered again by transformers %s, %d differ from %s" %
              (len(gold["cases"]), transformers.__version__, bad, args.check))
        sys.exit(1 if bad else 0)
    rng = random.Random(SEED)
    tids = sorted(srcs)
    cases = []
    for i in range(N_CASES):
        case = make_case(rng, i, tids)
        res = render(tok, case, srcs[case["template"]])
        cases.append({"name": case["name"], "template": case["template"],
                      "messages_json": json.dumps(case["messages"], ensure_ascii=False),
                      "vars": [[k, json.dumps(v, ensure_ascii=False)] for k, v in case["vars"].items()],
                      "add_generation_prompt": case["add_generation_prompt"],
                      "continue_final_message": case["continue_final_message"], **res})
    out = {"generator": "tools/template-goldens/conversations.py (seed %d)" % SEED,
           "transformers": transformers.__version__, "jinja2": jinja2.__version__,
           "python_unicode": unicodedata.unidata_version, "now": str(NOW),
           "templates": {t: {"source": s[0], "bos_token": s[2], "eos_token": s[3]} for t, s in srcs.items()},
           "cases": cases}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=0, separators=(",", ":"))
        f.write("\n")
    n_err = sum("error" in c for c in cases)
    print("%d cases (%d renders, %d raises) -> %s" % (len(cases), len(cases) - n_err, n_err, args.out))


if __name__ == "__main__":
    main()
