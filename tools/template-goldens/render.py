#!/usr/bin/python3
"""Renders the chat-template goldens with Python Jinja2 set up as transformers' apply_chat_template
sets it up (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, the
{% generation %} tag, raise_exception, strftime_now, tojson as json.dumps). Run with Debian's
/usr/bin/python3 (python3-jinja2) from anywhere:

    /usr/bin/python3 tools/template-goldens/render.py

Writes tests/template/goldens.json (every template x case x add_generation_prompt) and
tests/template/micro-goldens.json (the hand-written feature templates in micro_cases.py) and
tests/template/random-goldens.json (random_cases.py: random templates, a fixed seed).
strftime_now reads the time from $TOKENLOOP_NOW (Unix seconds, UTC), which this script fixes,
as the C engine does."""
import json
import os
import sys
from datetime import datetime, timezone

import jinja2
from jinja2 import nodes
from jinja2.exceptions import TemplateError
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
NOW = "1733011200"  # 2024-12-01 00:00:00 UTC
os.environ["TOKENLOOP_NOW"] = NOW


class Raised(TemplateError):
    pass


def raise_exception(message):
    raise Raised(message)


def strftime_now(fmt):
    t = os.environ.get("TOKENLOOP_NOW")
    now = datetime.fromtimestamp(int(t), tz=timezone.utc) if t else datetime.now()
    return now.strftime(fmt)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


class Generation(Extension):
    """transformers' AssistantTracker: {% generation %}...{% endgeneration %} renders its body."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_run"), [], [], body).set_lineno(lineno)

    def _run(self, caller):
        return caller()


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[Generation, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(env, source, context):
    try:
        return {"text": env.from_string(source).render(**context)}
    except Raised as e:
        return {"error": str(e), "raised": True}
    except Exception as e:  # the C engine must fail too; its wording may differ
        return {"error": f"{type(e).__name__}: {e}", "raised": False}


def token(t):
    return t.get("content") if isinstance(t, dict) else t


def load_templates():
    """(id, source path as the C test resolves it, template text, bos, eos)"""
    out = []
    with open(os.path.join(ROOT, "assets/tokenizer/tokenizer_config.json")) as f:
        llama = json.load(f)
    bos, eos = token(llama.get("bos_token")), token(llama.get("eos_token"))
    out.append(("llama-3.1", "assets/tokenizer/tokenizer_config.json", llama["chat_template"], bos, eos))
    for name, file in (("llama-3.2", "meta-llama-Llama-3.2-3B-Instruct.jinja"),
                       ("llama-3.3", "meta-llama-Llama-3.3-70B-Instruct.jinja")):
        path = os.path.join(SHARED, "conformance/templates", file)
        with open(path) as f:
            out.append((name, "shared:conformance/templates/" + file, f.read(), bos, eos))
    tdir = os.path.join(HERE, "templates")
    for file in sorted(os.listdir(tdir)):
        with open(os.path.join(tdir, file)) as f:
            t = json.load(f)
        out.append((file[:-5], "tools/template-goldens/templates/" + file, t["chat_template"],
                    t.get("bos_token"), t.get("eos_token")))
    return out


def main():
    env = environment()
    with open(os.path.join(HERE, "cases.json")) as f:
        cases = json.load(f)
    goldens = []
    for tid, src_path, text, bos, eos in load_templates():
        for case in cases:
            for agp in (False, True):
                ctx = {"messages": case["messages"], "tools": None, "documents": None,
                       "add_generation_prompt": agp}
                if bos is not None:
                    ctx["bos_token"] = bos
                if eos is not None:
                    ctx["eos_token"] = eos
                ctx.update(case.get("vars", {}))
                rec = {"template": tid, "source": src_path, "case": case["name"],
                       "add_generation_prompt": agp}
                rec.update(render(env, text, ctx))
                goldens.append(rec)
    tests = os.path.join(ROOT, "tests/template")
    with open(os.path.join(tests, "goldens.json"), "w") as f:
        json.dump({"now": NOW, "jinja2": jinja2.__version__, "renders": goldens}, f,
                  ensure_ascii=False, indent=1)
        f.write("\n")
    sys.path.insert(0, HERE)
    from micro_cases import CASES
    out = []
    for name, template, context in CASES:
        rec = {"name": name, "template": template, "context": context}
        rec.update(render(env, template, context))
        out.append(rec)
    import copy
    from random_cases import make
    rnd = []
    cases = make(20241201, 3000)
    for name, template, context in cases:
        rec = {"name": name, "template": template}
        rec.update(render(env, template, copy.deepcopy(context)))
        rnd.append(rec)
    with open(os.path.join(tests, "random-goldens.json"), "w") as f:
        json.dump({"now": NOW, "jinja2": jinja2.__version__, "context": cases[0][2], "renders": rnd},
                  f, ensure_ascii=False, indent=0)
        f.write("\n")
    with open(os.path.join(tests, "micro-goldens.json"), "w") as f:
        json.dump({"now": NOW, "jinja2": jinja2.__version__, "renders": out}, f,
                  ensure_ascii=False, indent=1)
        f.write("\n")
    ok = sum(1 for g in goldens if "text" in g)
    print(f"{len(goldens)} renders ({ok} texts, {len(goldens) - ok} errors), {len(out)} micro, "
          f"{len(rnd)} random ({sum('text' in r for r in rnd)} texts)",
          file=sys.stderr)


if __name__ == "__main__":
    main()
