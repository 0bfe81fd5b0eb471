#!/usr/bin/python3
"""Issue 39, item 6: a lesson reads in one language, with one decimal mark and one thousands
separator, the panes' own (en "3.35" and "128,256", vi "3,35" and "128.256").

    vi_text.py TOKENLOOP MODEL_DIR LESSONS_DIR PROBE_DIR LESSON_C

Plays every lesson of LESSONS_DIR and the probe lesson of PROBE_DIR headlessly in English and in
Vietnamese (`tokenloop lesson check --lang L --verbose`) and sets each step's narration against
its template in the lesson file, so each {field}'s value is known. Then, for every step:
  - a number field's value is in the language's form (grouped from four digits, the language's
    decimal mark; a probability as the Logits pane prints it; the server's port as it is);
  - the rest of the Vietnamese (the lesson's own words and what core writes into it: a stop's
    detail, where the budget came from, why text is held, a comparison's outcome) has no figure
    with an English mark and no English sentence (no English function word outside quotes and
    outside what the model or the tokenizer wrote);
  - the lesson's own numbers (not a field's) of four digits or more are grouped, in both languages;
  - a bundled step's (and lesson title's) Vietnamese is not its English.
And on the probe (a run whose values do not depend on time): the vocabulary reads as the Logits
title prints it (config.json's vocab_size grouped), and each deterministic figure is the same in
both languages with the marks swapped; a stop's detail and a budget's source carry the same
figures in Vietnamese as in English, in Vietnamese words.
"""
import json
import os
import re
import subprocess
import sys

TOKENLOOP, MODEL, LESSONS, PROBE, LESSON_C = sys.argv[1:6]
MIN_STEPS = int(sys.argv[6]) if len(sys.argv) > 6 else 60   # narrated steps the lessons hold at least
failures = []


def check(cond, msg):
    if not cond:
        print("FAIL " + msg)
        failures.append(msg)
    return cond


def c_array(src, name):
    m = re.search(r"%s\[\]\s*=\s*\{(.*?)\};" % re.escape(name), src, re.S)
    if not m:
        raise SystemExit("%s not found in %s" % (name, LESSON_C))
    return set(re.findall(r'"([^"]+)"', m.group(1)))


SRC = open(LESSON_C, encoding="utf-8").read()
NUM_FIELDS = c_array(SRC, "num_fields")
DTYPE_NUM = c_array(SRC, "dtype_num_parts")
CMP_NUM = c_array(SRC, "cmp_num_parts")
# text that core words (checked like the lesson's own words); every other text field is what
# the model, the tokenizer or the request wrote, in whatever language they wrote it
CORE_TEXT = {"stop_detail", "budget_source", "hold_reason", "stop_reason", "last_kind", "device", "dtype",
             "file_dtype", "served_finish_reason"}


def is_num(field):
    if field.startswith("dtype."):
        return field.split(".")[-1] in DTYPE_NUM
    if field.startswith("cmp."):
        return field.split(".")[-1] in CMP_NUM
    if field.startswith("batch."):   # core/lesson_batch.c: every batch field is a number but the shape
        return field != "batch.shape"
    return field in NUM_FIELDS


def is_core_text(field):
    return field in CORE_TEXT or (field.startswith("cmp.") and field.endswith(".outcome"))


def play(dirname, lang):
    """{lesson id: [narration of step 1, ...]} from lesson check --verbose."""
    r = subprocess.run([TOKENLOOP, "lesson", "check", "--dir", dirname, "--lang", lang, "--verbose", "--model", MODEL],
                       capture_output=True, text=True, timeout=600)
    check(r.returncode == 0, "lesson check --dir %s --lang %s: status %d: %s" % (dirname, lang, r.returncode,
                                                                                 r.stderr.strip()[-300:]))
    out, lesson, step = {}, None, None
    for line in r.stdout.split("\n"):
        m = re.match(r"== (\S+): ", line)
        if m:
            lesson, step = m.group(1), None
            out[lesson] = []
            continue
        if line.startswith("-- step "):
            out[lesson].append([])
            step = out[lesson][-1]
            continue
        if line.startswith(("cmp ", "lesson ", "lessons: ")):
            step = None
            continue
        if step is not None:
            step.append(line)
    return {k: ["\n".join(s) for s in v] for k, v in out.items()}


def template_regex(t, fields):
    """A regex for the narration of template t: each {field} a group (its name appended to
    fields), each [[NAME|a|b|c|d]] the four sentences as alternatives."""
    out, i = [], 0
    while i < len(t):
        if t.startswith("[[", i) and "]]" in t[i:]:
            end = t.index("]]", i)
            alts = t[i + 2:end].split("|")[1:]
            out.append("(?:" + "|".join(template_regex(a, fields) for a in alts) + ")")
            i = end + 2
            continue
        m = re.match(r"\{([a-z0-9_.]+)\}", t[i:])
        if m:
            fields.append(m.group(1))
            out.append("(?P<g%d>.*?)" % (len(fields) - 1))
            i += m.end()
            continue
        out.append(re.escape(t[i]))
        i += 1
    return "".join(out)


def parts(template, text):
    """(the lesson's own words, [(field, value)]) of one narration, or None when it does not
    follow its template."""
    fields = []
    m = re.fullmatch(template_regex(template, fields), text, re.S)
    if not m:
        return None
    vals, own, at = [], [], 0
    spans = sorted((m.span("g%d" % k), fields[k]) for k in range(len(fields)) if m.group("g%d" % k) is not None)
    for (a, b), f in spans:
        own.append(text[at:a])
        own.append("\u2063")   # where a value was: nothing joins across it
        vals.append((f, text[a:b]))
        at = b
    own.append(text[at:])
    return "".join(own), vals


def num_form(v, lang, field):
    if v == "n/a":
        return True
    if field.split(".")[-1] == "served_port":
        return re.fullmatch(r"\d+", v) is not None
    dec, grp = (",", ".") if lang == "vi" else (".", ",")
    if "_prob" in field:
        return re.fullmatch(r"[<>]?\d+(%s\d+)?%%" % re.escape(dec), v) is not None
    return re.fullmatch(r"-?\d{1,3}(%s\d{3})*(%s\d+)?(e-\d+)?" % (re.escape(grp), re.escape(dec)), v) is not None


# English words a Vietnamese sentence never needs ("so" is Vietnamese: "so với", compared with) (the lesson's technical terms, prompt, token,
# greedy, are not among them); whole words, case-insensitive
ENGLISH = ["the", "of", "and", "is", "are", "was", "were", "from", "with", "at", "by", "for", "it", "its", "this",
           "that", "these", "not", "new", "tokens", "budget", "expected", "when", "which", "what", "how", "why",
           "has", "have", "be", "been", "will", "would", "can", "only", "each", "every", "after", "before",
           "than", "then", "there", "they", "you", "your", "we", "an", "or", "but", "into", "about", "if",
           "bytes", "generated", "text", "lowered", "request", "default", "context", "partial_word",
           "incomplete_utf8", "stop_prefix", "none", "lower", "same", "higher", "undecided", "nothing", "set"]
ENGLISH_RE = re.compile(r"(?<![\w.-])(%s)(?![\w-])" % "|".join(ENGLISH), re.I)
QUOTED = re.compile(r'"[^"\n]*"|`[^`\n]*`|\u201c[^\u201d]*\u201d')
# a figure: digits with marks between them; not inside a name (q4_0, Llama 3.1, tl-mini)
FIGURE = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)*(?![\w])")


def own_figures_ok(text, lang, what):
    text = re.sub(r"Llama \d+\.\d+", "Llama", text)
    dec, grp = (",", ".") if lang == "vi" else (".", ",")
    bad = [f for f in FIGURE.findall(text)
           if not re.fullmatch(r"\d{1,3}(%s\d{3})*(%s\d+)?" % (re.escape(grp), re.escape(dec)), f)
           and not re.fullmatch(r"\d{1,3}", f)]
    check(not bad, "%s: figures not in the %s form: %s" % (what, lang, bad[:5]))


def kept(node, out):
    """{"saved.NAME": FIELD} of every remember action in a lesson (compare sides included)."""
    if isinstance(node, dict):
        r = node.get("remember")
        if isinstance(r, dict) and "as" in r:
            out["saved." + r["as"]] = r["field"]
        for v in node.values():
            kept(v, out)
    elif isinstance(node, list):
        for v in node:
            kept(v, out)
    return out


def check_step(template, text, lang, what, saved):
    p = parts(template, text)
    if not check(p is not None, "%s: the narration does not follow its template: %r" % (what, text[:200])):
        return None
    own, vals = p
    # a kept value is narrated as the field it was kept from
    fields = [(saved.get(f, f), v) for f, v in vals]
    for f, v in fields:
        if is_num(f):
            check(num_form(v, lang, f), "%s: {%s} = %r is not in the %s form" % (what, f, v, lang))
    # the lesson's words and core's, without quotes; the values the model, tokenizer or request wrote left out
    prose = " ".join([own] + [v for f, v in fields if is_core_text(f)])
    own_figures_ok(QUOTED.sub(" ", own), lang, what + " (the lesson's own figures)")
    if lang == "vi":
        flat = QUOTED.sub(" ", prose)
        hits = sorted({h.lower() for h in ENGLISH_RE.findall(flat)})
        check(not hits, "%s: English in the Vietnamese: %s in %r" % (what, hits, flat[:300]))
        for f, v in fields:
            if is_core_text(f):
                # core's prose: its figures in vi marks (an id stays whole)
                for fig in FIGURE.findall(v):
                    check("." not in fig or re.fullmatch(r"\d{1,3}(\.\d{3})+", fig),
                          "%s: {%s} = %r has a point decimal mark" % (what, f, v))
    return dict(vals)


def swap(v):
    return v.translate(str.maketrans(".,", ",."))


def main():
    vocab = json.load(open(os.path.join(MODEL, "config.json")))["vocab_size"]
    n_steps = 0
    for d in (LESSONS, PROBE):
        files = sorted(f for f in os.listdir(d) if f.endswith(".json"))
        lessons = {}
        for f in files:
            j = json.load(open(os.path.join(d, f), encoding="utf-8"))
            lessons[j["id"]] = j
        played = {lang: play(d, lang) for lang in ("en", "vi")}
        for lid, j in lessons.items():
            vals, saved = {}, kept(j, {})
            for lang in ("en", "vi"):
                got = played[lang].get(lid, [])
                check(len(got) == len(j["steps"]), "%s (%s): %d of %d steps narrated" % (lid, lang, len(got), len(j["steps"])))
                vals[lang] = [check_step(st["say"][lang], got[k], lang, "%s step %d (%s)" % (lid, k + 1, lang), saved)
                              for k, st in enumerate(j["steps"]) if k < len(got)]
                n_steps += len(got)
            if d == LESSONS:
                t = j["title"]
                hits = ENGLISH_RE.findall(QUOTED.sub(" ", t["vi"]))
                check(t["vi"] != t["en"] and not hits, "%s: the Vietnamese title %r (English: %s)" % (lid, t["vi"], hits))
                for k, st in enumerate(j["steps"]):
                    check(st["say"]["vi"] != st["say"]["en"], "%s step %d: the Vietnamese is the English" % (lid, k + 1))
            # the vocabulary, wherever a step names it, as the Logits title prints it
            for lang, sep in (("en", ","), ("vi", ".")):
                want = "{:,}".format(vocab).replace(",", sep)
                for k, v in enumerate(vals[lang]):
                    if v and "vocab" in v:
                        check(v["vocab"] == want, "%s step %d (%s): {vocab} = %r, the Logits title's %r" % (
                            lid, k + 1, lang, v["vocab"], want))
            if d != PROBE:
                continue
            en, vi = vals["en"], vals["vi"]
            # step 1: a greedy pass: the same figures, the marks swapped
            for f in ("vocab", "first_prob", "prompt_tokens", "weight_mb", "saved.vocab"):
                check(en[0] and vi[0] and vi[0].get(f) == swap(en[0].get(f, "?")),
                      "probe: {%s} en %r, vi %r: not the same figure in the two forms" % (
                          f, en[0] and en[0].get(f), vi[0] and vi[0].get(f)))
            check(en[0] and "," in en[0]["vocab"] and "." in vi[0]["vocab"], "probe: the vocabulary is grouped")
            # a stop's detail and a budget's source: Vietnamese words, the English figures
            for k, (e, v) in enumerate(zip(en, vi)):
                for f in ("stop_detail", "budget_source", "saved.src", "hold_reason", "cmp.same.outcome"):
                    if e and v and f in e:
                        check(v[f] != e[f], "probe step %d: {%s} %r is not translated" % (k + 1, f, v[f]))
                        check(re.findall(r"\d+", v[f]) == re.findall(r"\d+", e[f]),
                              "probe step %d: {%s}: figures %r in Vietnamese, %r in English" % (k + 1, f, v[f], e[f]))
    check(n_steps > MIN_STEPS, "%d narrated steps checked" % n_steps)
    print("lesson_vi_text: %d steps, %d failed" % (n_steps, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
