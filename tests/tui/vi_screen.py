#!/usr/bin/python3
"""The TUI in Vietnamese, end to end: no English string of the message table on screen.

    vi_screen.py TOKENLOOP MODEL_DIR COLS ROWS

Runs `LANG=vi_VN.UTF-8 tokenloop tui` (the language from LANG, as a Vietnamese classroom
machine sets it; the vi_VN locale itself need not be installed) in a private tmux server at
COLS x ROWS, on a Vietnamese question, greedy. Steps three passes, opens the key list, the
lesson list, the first step of lesson 1 and the transformers call, and after each captures the
screen and looks for every English string of tui/i18n_table.h whose Vietnamese differs (and
that no Vietnamese entry uses on purpose, such as a pane's English name): none may appear (as a whole word: "on" inside "token" is not it). Also: numbers use the comma
decimal mark, the screen is sane (no line too wide, no replacement characters).
Exit 77 (skip) when tmux is missing.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata

import i18n_pairs

TOKENLOOP, MODEL, COLS, ROWS = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
SOCK = "tlvi-%d" % os.getpid()
LESSON_DIR = os.environ.get("TOKENLOOP_LESSONS") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                                                  "..", "lessons")
NLESSONS = len([f for f in os.listdir(LESSON_DIR) if f.endswith(".json")])
failures = []


def check(cond, msg):
    print(("ok   %s" if cond else "FAIL %s") % msg)
    if not cond:
        failures.append(msg)
    return cond


# English the Vietnamese screen keeps on purpose, each for its reason (any other English string
# of the tables is looked for): technical terms Vietnamese classes use as they are
TECHNICAL = {
    "Prompt",     # "1 Lời nhắc (Prompt)": the lessons' "ô Prompt", a term used as is
    "template",   # "khuôn mẫu chat (chat template)": transformers' name, apply_chat_template
}


def english_strings():
    pairs = i18n_pairs.pairs()
    out = []
    for en, vi in pairs:
        if en == vi or en.strip() in TECHNICAL:
            continue
        # a format: the literal parts around the conversions, the longest one as the probe
        parts = [p.strip() for p in re.split(r"%[-+ #0-9.*]*[a-zA-Z]", en)]
        probe = max(parts, key=len) if "%" in en else en.strip()
        if len(probe) >= 2 and probe not in vi:
            out.append((en, probe))
    return pairs, out


def found(screen, probe):
    # a word of its own: not inside a longer identifier ("token", "add_generation_prompt",
    # the lesson id "1-template")
    w = r"[A-Za-z0-9_-]"
    pat = (r"(?<!%s)" % w if re.match(w, probe[0]) else "") + re.escape(probe) + \
          (r"(?!%s)" % w if re.match(w, probe[-1]) else "")
    return re.search(pat, screen) is not None


def tmux(*args, check_rc=True):
    r = subprocess.run(["tmux", "-u", "-L", SOCK, "-f", "/dev/null"] + list(args),
                       capture_output=True, text=True, timeout=20)
    if check_rc and r.returncode:
        raise RuntimeError("tmux %s: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout


def capture():
    return tmux("capture-pane", "-p", "-t", "t")


def wait_for(pred, what, timeout=30.0):
    t0, last = time.time(), ""
    while time.time() - t0 < timeout:
        last = capture()
        m = pred(last)
        if m:
            time.sleep(0.3)   # the frame after the one that matched: everything drawn
            return capture(), m
        time.sleep(0.1)
    check(False, "timed out waiting for %s; screen:\n%s" % (what, last))
    return last, None


def width(s):
    return sum(0 if unicodedata.combining(ch) or ch in "\u200d\ufe0f" else
               2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in s)


def no_english(screen, what, probes):
    hits = sorted({en for en, probe in probes if found(screen, probe)})
    where = [l.strip() for l in screen.split("\n") for en, probe in probes if en in hits and found(l, probe)]
    check(not hits, "%s: no English of the table on screen%s" % (what, (": %r in %s" % (hits, where[:3])) if hits else ""))
    lines = screen.rstrip("\n").split("\n")
    check(all(width(l) <= COLS for l in lines) and "\ufffd" not in screen, "%s: the screen is sane" % what)


# figures written with a point: a decimal mark the Vietnamese screen must not use, unless it is a
# model's name ("Llama 3.1") or a thousands grouping ("128.256", the Vietnamese separator)
DOT_DECIMAL = re.compile(r"(?<![\w.])(?<!Llama )\d+\.\d+(?![\w.])")


def one_decimal_mark(text, what):
    bad = [x for x in DOT_DECIMAL.findall(text) if not re.fullmatch(r"\d{1,3}(\.\d{3})+", x)]
    check(not bad, "%s: numbers with a comma decimal mark only%s" % (what, (": %s" % bad[:5]) if bad else ""))


def split_strip(screen, k, n):
    """(the screen without the lesson strip, the strip): the narration keeps its technical words
    (prompt, greedy, temperature) on purpose; the panes around it must have none."""
    lines = screen.split("\n")
    top = next((i for i, l in enumerate(lines) if (" \u00b7 %d/%d \u00b7 " % (k, n)) in l), len(lines))
    end = max(top, len(lines) - 3)
    return "\n".join(lines[:top] + lines[end:]), "\n".join(lines[top:end])


# English prose that core hands the narration (a stop's detail, a budget's source, an expectation
# that failed): never in the Vietnamese strip
PROSE = ["new tokens", "budget from", "(from ", "of the generated text", " at bytes ", "expected ",
         "expectation failed", "nothing remembered"]


def no_prose(text, what):
    flat = re.sub(r"\s+", " ", text)
    hits = [p for p in PROSE if p in flat]
    check(not hits, "%s: no English prose%s" % (what, (": %s in %r" % (hits, flat[:300])) if hits else ""))


def narration_marks():
    """Every step's narration with its values, played headlessly in Vietnamese."""
    r = subprocess.run([TOKENLOOP, "lesson", "check", "--lang", "vi", "--verbose", "--model", MODEL],
                       capture_output=True, text=True, timeout=600)
    step, bad = None, []
    for line in r.stdout.splitlines():
        if line.startswith("-- step") or line.startswith("=="):
            step = line
            continue
        if step and not line.startswith(("lesson ", "cmp ")):
            hits = [x for x in DOT_DECIMAL.findall(line) if not re.fullmatch(r"\d{1,3}(\.\d{3})+", x)]
            hits += [p for p in PROSE if p in line]
            if hits:
                bad.append("%s: %s" % (step, hits[:3]))
    check(not bad, "the narration of every step in Vietnamese: a comma decimal mark, no English prose%s" % (
        ": %s" % bad[:5] if bad else ""))


def failed_expectation(probes):
    """A lesson whose expectation fails on this model says why in Vietnamese: the words, and a
    number compared (step 2: the model's top_p against 0.5) with the panes' decimal mark."""
    import json
    d = tempfile.mkdtemp(prefix="tlvil")
    with open(os.path.join(d, "1-fails.json"), "w") as f:
        json.dump({"id": "1-fails", "title": {"en": "Fails", "vi": "Sai"},
                   "steps": [{"say": {"en": "a", "vi": "b"}, "expect": [{"stop_reason": "eos"}],
                              "actions": [{"user": "Count from 1 to 50."}, {"max_new_tokens": 3}, {"run": True}]},
                             {"say": {"en": "c", "vi": "d"}, "expect": [{"top_p": {"lt": 0.5}}]},
                             {"say": {"en": "e", "vi": "g"}, "actions": [{"force": "Paris and Rome"}]}]}, f)
    with open(os.path.join(MODEL, "generation_config.json")) as f:
        top_p_en = "%g" % json.load(f)["top_p"]
    top_p = top_p_en.replace(".", ",")   # 0.9: "0,9"
    sock = SOCK + "-f"
    cmd = "env -u LC_ALL -u LC_MESSAGES LANG=vi_VN.UTF-8 TOKENLOOP_LESSONS=%s %s tui --model %s; sleep 30" % (d, TOKENLOOP, MODEL)
    base = ["tmux", "-u", "-L", sock, "-f", "/dev/null"]
    subprocess.run(base + ["new-session", "-d", "-s", "t", "-x", str(COLS), "-y", str(ROWS), "sh", "-c", cmd], check=True)
    try:
        def cap():
            return subprocess.run(base + ["capture-pane", "-p", "-t", "t"], capture_output=True, text=True).stdout
        t0 = time.time()
        while "tho\u00e1t" not in cap() and time.time() - t0 < 30:
            time.sleep(0.1)
        subprocess.run(base + ["send-keys", "-t", "t", "l"])
        time.sleep(0.5)
        subprocess.run(base + ["send-keys", "-t", "t", "Enter"])
        s = ""
        while time.time() - t0 < 60:
            s = cap()
            if "\u2717" in s:
                break
            time.sleep(0.1)
        flat = re.sub(r"[\s\u2502]+", " ", s)
        check('stop_reason l\u00e0 "max_new_tokens", mong \u0111\u1ee3i "eos"' in flat and "expected" not in flat,
              "a failed expectation is said in Vietnamese: %s" % flat[flat.find("\u2717"):][:120])
        subprocess.run(base + ["send-keys", "-t", "t", "Space"])
        t1 = time.time()
        while time.time() - t1 < 30:
            s = cap()
            if " \u00b7 2/2 \u00b7 " in s and "\u2717" in s:
                time.sleep(0.3)   # the frame after the one that matched: everything drawn
                s = cap()
                break
            time.sleep(0.1)
        flat = re.sub(r"[\s\u2502]+", " ", s)
        want = "top_p l\u00e0 %s, mong \u0111\u1ee3i nh\u1ecf h\u01a1n 0,5" % top_p
        check(want in flat and "expected" not in flat and " lt " not in flat,
              "a failed comparison is said in Vietnamese, with comma decimals (%s): %s" % (
                  want, flat[flat.find("\u2717"):][:120]))

        # v: the same failure in English, then in Vietnamese again, as the step showed it
        def after_v(text, what):
            subprocess.run(base + ["send-keys", "-t", "t", "v"])
            t2, flat = time.time(), ""
            while time.time() - t2 < 10:
                flat = re.sub(r"[\s\u2502]+", " ", cap())
                if text in flat:
                    break
                time.sleep(0.1)
            check(text in flat, "v: %s (%s): %s" % (what, text, flat[flat.find("\u2717"):][:120]))
        after_v("top_p is %s, expected lt 0.5" % top_p_en, "the failure in English")
        after_v(want, "in Vietnamese again")

        # an action that fails: core's error in Vietnamese, the lesson's file and action names kept
        subprocess.run(base + ["send-keys", "-t", "t", "Space"])
        t1, flat = time.time(), ""
        while time.time() - t1 < 30:
            flat = re.sub(r"[\s\u2502]+", " ", cap())
            if " \u00b7 3/3 \u00b7 " in flat and "\u00b7 " in flat and "Paris and Rome" in flat:
                time.sleep(0.3)
                flat = re.sub(r"[\s\u2502]+", " ", cap())
                break
            time.sleep(0.1)
        want = ('th\u1ea5t b\u1ea1i: %s: b\u01b0\u1edbc 3: thao t\u00e1c "force": force: "Paris and Rome" '
                'kh\u00f4ng ph\u1ea3i l\u00e0 m\u1ed9t token duy nh\u1ea5t' % os.path.join(d, "1-fails.json"))
        check(want in flat and "is not a single token" not in flat and "step 3" not in flat,
              "an action's failure is said in Vietnamese: %s" % flat[flat.find("3/3"):][:220])
        after_v('action failed: %s: step 3: action "force": force: "Paris and Rome" is not a single token'
                % os.path.join(d, "1-fails.json"), "the action's failure in English")
    finally:
        subprocess.run(base + ["kill-server"], capture_output=True)
        shutil.rmtree(d, ignore_errors=True)


def main():
    if not shutil.which("tmux"):
        print("tmux not installed: skipped")
        return 77
    pairs, probes = english_strings()
    narration_marks()
    failed_expectation(probes)
    check(len(pairs) > 100, "the message table has %d entries, %d to look for" % (len(pairs), len(probes)))
    tmp = tempfile.mkdtemp(prefix="tlvi")
    status = os.path.join(tmp, "status")
    cuts = os.path.join(tmp, "cuts")   # tui/draw.c logs there each text drawn wider than its room
    question = "Th\u1ee7 \u0111\u00f4 c\u1ee7a Ph\u00e1p l\u00e0 g\u00ec?"
    # LANG alone chooses the language: LC_ALL and LC_MESSAGES would come first
    cmd = ("env -u LC_ALL -u LC_MESSAGES LANG=vi_VN.UTF-8 TOKENLOOP_TUI_CUTS=%s %s tui --model %s --prompt '%s'; "
           "echo $? > %s; sleep 60" % (cuts, TOKENLOOP, MODEL, question, status))
    tmux("new-session", "-d", "-s", "t", "-x", str(COLS), "-y", str(ROWS), "sh", "-c", cmd)
    try:
        tmux("set-option", "-t", "t", "status", "off")
        tmux("resize-window", "-t", "t", "-x", str(COLS), "-y", str(ROWS), check_rc=False)
        s, m = wait_for(lambda s: "<|start_header_id|>" in s and "tho\u00e1t" in s, "the first screen", 60)
        check(m, "the first screen is up, in Vietnamese (the footer says tho\u00e1t)")
        no_english(s, "first screen", probes)

        tmux("send-keys", "-t", "t", "g")
        for k in range(1, 4):
            tmux("send-keys", "-t", "t", "Space")
            s, m = wait_for(lambda s, k=k: re.search(r"\u0111\u00e3 sinh %d\b" % k, s), "pass %d" % k, 60)
            check(m, "Space %d: %d generated (\u0111\u00e3 sinh %d)" % (k, k, k))
        no_english(s, "after three passes", probes)
        if COLS >= 160:   # whole lines: the Stream title and the budget line end before the border
            check(re.search(r"Lu\u1ed3ng ra \u00b7 hf TextStreamer\(skip_prompt, skip_special_tokens\)( \u00b7 h: server)? \u2500", s),
                  "the Stream pane's title is whole")
            check(re.search(r"ng\u00e2n s\u00e1ch .*\(kh\u00f4ng ai \u0111\u1eb7t\)\s*\u2502", s),
                  "the budget line is whole")
        ms = re.findall(r"\b\d+[.,]\d+ ms\b", s)
        check(ms and all("," in x for x in ms), "times with a comma decimal mark: %s" % ms[:4])
        if COLS >= 120:
            check(re.search(r"\b-?\d+,\d\d\b", s) and not re.search(r"\b\d+\.\d\d\s+\S*%", s),
                  "logits with a comma decimal mark")

        tmux("send-keys", "-t", "t", "?")
        s, m = wait_for(lambda s: "ch\u1ea1y t\u1edbi khi d\u1eebng" in s, "the key list", 10)
        check(m, "? shows the key list in Vietnamese")
        no_english(s, "key list", probes)
        tmux("send-keys", "-t", "t", "Escape")
        wait_for(lambda s: "ch\u1ea1y t\u1edbi khi d\u1eebng" not in s, "the key list to close", 10)

        # d: the weights in q8_0 (the status line and the title say so), a run on them, and the
        # Timing pane's table of the two dtypes
        tmux("send-keys", "-t", "t", "d")
        s, m = wait_for(lambda s: "tr\u1ecdng s\u1ed1 q8_0" in s and "prefill" in s, "the q8_0 weights", 60)
        check(m, "d: the weights are q8_0, said in Vietnamese")
        no_english(s, "after d", probes)
        tmux("send-keys", "-t", "t", "r")
        wait_for(lambda s: "\u0110\u00c3 D\u1eeaNG" in s or "d\u1eebng: " in s, "a stop on q8_0", 120)
        tmux("send-keys", "-t", "t", "6")
        s, m = wait_for(lambda s: "m\u1ed7i b\u01b0\u1edbc" in s and "q8_0" in s, "the dtype table", 10)
        check(m, "the Timing pane's table of dtypes, in Vietnamese")
        no_english(s, "the dtype table", probes)

        tmux("send-keys", "-t", "t", "l")
        s, m = wait_for(lambda s: "B\u00e0i h\u1ecdc (l)" in s, "the lesson list", 10)
        check(m, "l opens the lesson list in Vietnamese")
        no_english(s, "lesson list", probes)
        # every step of every lesson: no English of the table, one decimal mark
        for li in range(NLESSONS):
            if li:
                tmux("send-keys", "-t", "t", "Down")
                time.sleep(0.2)
            tmux("send-keys", "-t", "t", "Enter")
            s, m = wait_for(lambda s: re.search(r" \u00b7 1/(\d+) \u00b7", s), "lesson %d, step 1" % (li + 1), 120)
            check(m, "Enter starts lesson %d" % (li + 1))
            if not m:
                break
            n = int(m.group(1))
            for k in range(1, n + 1):
                if k > 1:
                    tmux("send-keys", "-t", "t", "Space")
                    s, m = wait_for(lambda s, k=k: (" \u00b7 %d/%d \u00b7 " % (k, n)) in s and re.search(
                        r"\u2713|\u2717|thao t\u00e1c|ch\u01b0a quy\u1ebft", s), "lesson %d, step %d" % (li + 1, k), 180)
                chrome, strip = split_strip(s, k, n)
                no_english(chrome, "lesson %d, step %d (panes)" % (li + 1, k), probes)
                # (a field named in it, such as an undecided step's cmp.pace.outcome, is no English)
                no_english(re.sub(r"\w+(\.\w+)+", "", strip.split("\n")[0]),
                           "lesson %d, step %d (the step's line)" % (li + 1, k), probes)
                no_prose(strip, "lesson %d, step %d (narration)" % (li + 1, k))
                one_decimal_mark(s, "lesson %d, step %d" % (li + 1, k))
            tmux("send-keys", "-t", "t", "Space")   # past the last step: the list
            wait_for(lambda s: "B\u00e0i h\u1ecdc (" in s and "\u25b6" in s, "the lesson list again", 30)
        tmux("send-keys", "-t", "t", "Escape")
        wait_for(lambda s: "B\u00e0i h\u1ecdc (l)" not in s, "the lesson strip to close", 10)

        tmux("send-keys", "-t", "t", "c")
        s, m = wait_for(lambda s: "transformers (ph\u00edm" in s, "the transformers call", 10)
        check(m, "c shows the transformers call")
        no_english(s, "transformers call", probes)
        tmux("send-keys", "-t", "t", "Escape")
        time.sleep(0.3)
        tmux("send-keys", "-t", "t", "q")
        t0 = time.time()
        while not os.path.exists(status) and time.time() - t0 < 20:
            time.sleep(0.1)
        code = open(status).read().strip() if os.path.exists(status) else "(none)"
        check(code == "0", "q exits with status 0 (got %s)" % code)
        # issue 39, item 7, in Vietnamese: nothing this walk showed was drawn cut (tui_cuts_en_*
        # walk the English screens and the z boxes the same way)
        cut = sorted(set(open(cuts, encoding="utf-8", errors="replace").read().splitlines())) \
            if os.path.exists(cuts) else []
        check(not cut, "at %dx%d nothing is drawn cut%s" % (COLS, ROWS, (":\n  " + "\n  ".join(cut[:50])) if cut else ""))
    finally:
        tmux("kill-server", check_rc=False)
        shutil.rmtree(tmp, ignore_errors=True)
    print("tui_vi_%dx%d: %d failed" % (COLS, ROWS, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
