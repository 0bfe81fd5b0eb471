#!/usr/bin/env python3
"""No lesson narration names a comparison its numbers contradict (issue 38).

Plays lessons with `tokenloop lesson check --verbose`, which prints each step's narration and
then every compare action's outcome with the two medians and spreads it was decided from. For
each [[NAME|lower|same|higher|undecided]] choice in a step's text (the lesson file is read here,
independently of the player) it checks that
  - the outcome follows from the medians: "lower" needs a < b by more than same_within of the
    smaller, "higher" the reverse, "same" at most that far apart, "undecided" further apart
    (the quartile test is core's; the medians must never contradict the word);
  - the narration holds the literal text of the chosen sentence and of no other.
argv: tokenloop, model dir, then (--dir DIR | ID) [LANG...] groups: see main().
"""
import json, os, re, subprocess, sys

fails = 0


def fail(msg):
    global fails
    fails += 1
    print("FAIL", msg, file=sys.stderr)


def says(text, sentence):
    """Whether text holds the sentence: its literal text verbatim and in one piece, each
    {placeholder} one value (a number, a dtype name: no spaces)."""
    parts = re.split(r"\{[^{}]*\}", sentence)
    return re.search(r"\S*?".join(re.escape(p) for p in parts), text) is not None


def parse(out):
    """step number -> (narration, {name: (outcome, a, b, within)})"""
    steps, cur = {}, None
    lines = out.splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^-- step (\d+)$", lines[i])
        if m:
            cur = int(m.group(1))
            steps[cur] = [lines[i + 1] if i + 1 < len(lines) else "", {}]
            i += 2
            continue
        m = re.match(r"^cmp (\S+) (lower|same|higher|undecided) a (\S+) \[\S+ \S+\] b (\S+) \[\S+ \S+\] runs (\d+) same_within (\S+)$", lines[i])
        if m and cur is not None:
            steps[cur][1][m.group(1)] = (m.group(2), float(m.group(3)), float(m.group(4)), int(m.group(5)), float(m.group(6)))
        i += 1
    return steps


def check_numbers(where, name, outcome, a, b, runs, within):
    if runs < 5 and not where.startswith("compare-probe"):
        fail(f"{where}: {name}: {runs} runs a side, the lessons use 5 or more")
    small, diff = min(a, b), abs(a - b)
    apart = diff > within * small + 1e-9 * max(1.0, small)
    if outcome == "lower" and not (a < b and apart):
        fail(f"{where}: {name}: 'lower' but a {a} b {b} (within {within})")
    if outcome == "higher" and not (a > b and apart):
        fail(f"{where}: {name}: 'higher' but a {a} b {b} (within {within})")
    if outcome == "same" and apart:
        fail(f"{where}: {name}: 'same' but a {a} b {b} are more than {within} apart")
    if outcome == "undecided" and not apart:
        fail(f"{where}: {name}: 'undecided' but a {a} b {b} are within {within}: that is 'same'")


def check_lesson(exe, model, lesson_file, args, lang):
    lesson = json.load(open(lesson_file))
    r = subprocess.run([exe, "lesson", "check", *args, "--model", model, "--lang", lang, "--verbose"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"{lesson['id']} ({lang}): lesson check failed: {r.stderr.strip()}")
        return {}
    steps = parse(r.stdout)
    seen = {}
    for si, st in enumerate(lesson["steps"], 1):
        say = st["say"][lang]
        for m in re.finditer(r"\[\[([^|\]]+)\|([^\]]*)\]\]", say):
            name, sentences = m.group(1), m.group(2).split("|")
            where = f"{lesson['id']} ({lang}) step {si}"
            if si not in steps or name not in steps[si][1]:
                fail(f"{where}: no outcome printed for comparison {name}")
                continue
            text, cmps = steps[si]
            outcome, a, b, runs, within = cmps[name]
            seen[(name, outcome)] = seen.get((name, outcome), 0) + 1
            check_numbers(where, name, outcome, a, b, runs, within)
            k = ["lower", "same", "higher", "undecided"].index(outcome)
            if not says(text, sentences[k]):
                fail(f"{where}: {name} was '{outcome}' but the narration does not say so: {text}")
            for j, other in enumerate(sentences):
                if j != k and other != sentences[k] and says(text, other):
                    fail(f"{where}: {name} was '{outcome}' but the narration also says the "
                         f"{['lower', 'same', 'higher', 'undecided'][j]} sentence: {text}")
    return seen


def main():
    exe, model, probe_dir, lessons_dir = sys.argv[1:5]
    ids = sys.argv[5:]
    # the probe: one comparison of equal sides (must be "same"), two decided by token counts,
    # and one of timings whatever it decides
    probe = os.path.join(probe_dir, "compare.json")
    for lang in ("en", "vi"):
        seen = check_lesson(exe, model, probe, ["--dir", probe_dir], lang)
        if seen.get(("eq", "same"), 0) != 1:
            fail(f"probe ({lang}): two equal sides were not narrated as the same: {seen}")
        if seen.get(("len", "lower"), 0) != 1 or seen.get(("nel", "higher"), 0) != 1:
            fail(f"probe ({lang}): token counts 36 < 47 not narrated lower / higher: {seen}")
    langs = os.environ.get("CHECK_COMPARE_LANGS", "en vi").split()   # lesson_pace_1b: en (its vi is lesson_compare's)
    for lid in ids:
        path = os.path.join(lessons_dir, lid + ".json")
        for lang in langs:
            check_lesson(exe, model, path, [lid], lang)
    print(f"check_compare: {fails} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
