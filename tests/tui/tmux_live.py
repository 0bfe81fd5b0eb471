#!/usr/bin/python3
"""Settings changed mid-answer, the two streamers on one answer, trap 2 and the transformers
call, in `tokenloop tui --async` on the bundled model at 160x48.

    tmux_live.py TOKENLOOP

- Stepping by hand with pauses: the Timing pane's headline is the pass, not the wall clock.
- T (temperature up) after 4 tokens keeps them: the Tokens pane still counts 4, Space makes a 5th.
- h switches the streamer and replays it over the same tokens: the Stream pane's title says
  server, the token count is unchanged, the printed text is the answer's.
- r then w: with --async the unsynchronized clock reads < 10% of the synchronized pass.
- c shows the transformers call for the current settings.
Exit 77 (skip) when tmux is missing.
"""
import os
import re
import shutil
import subprocess
import sys
import time

TOKENLOOP = sys.argv[1]
SOCK = "tllive-%d" % os.getpid()
failures = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg.splitlines()[0] if cond else "FAIL " + msg)
    if not cond:
        failures.append(msg)
    return cond


def tmux(*args, check_rc=True):
    r = subprocess.run(["tmux", "-u", "-L", SOCK, "-f", "/dev/null"] + list(args),
                       capture_output=True, text=True, timeout=20)
    if check_rc and r.returncode:
        raise RuntimeError("tmux %s: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout


def key(k):
    tmux("send-keys", "-t", "t", k)


def wait_for(pred, what, timeout=30.0):
    t0 = time.time()
    last = ""
    while time.time() - t0 < timeout:
        last = tmux("capture-pane", "-p", "-t", "t")
        m = pred(last)
        if m:
            return last, m
        time.sleep(0.1)
    check(False, "timed out waiting for %s; screen:\n%s" % (what, last))
    return last, None


def generated(s):
    m = re.search(r"Tokens \u00b7 prompt \d+ \u00b7 generated (\d+)", s)
    return int(m.group(1)) if m else -1


def ms(text):
    """'3.01 ms' or '12.3 \u00b5s' or '1.20 s' -> ms."""
    m = re.match(r"([\d.]+) (ms|\u00b5s|us|s)\b", text)
    if not m:
        return None
    v = float(m.group(1))
    return {"ms": v, "\u00b5s": v / 1e3, "us": v / 1e3, "s": v * 1e3}[m.group(2)]


def pane_command():
    return tmux("display-message", "-p", "-t", "t", "#{pane_current_command}", check_rc=False).strip()


def wait_exit(seconds):
    """Until the pane's shell has moved on from tokenloop (to its `sleep`)."""
    t0 = time.time()
    while time.time() - t0 < seconds:
        if pane_command() not in ("tokenloop", ""):
            return True
        time.sleep(0.1)
    return False


def stop_app():
    """A UI still running is killed outright before the server goes: the server's SIGHUP could
    reach it inside LeakSanitizer's exit-time check under ASan, which then spun at 100% of a core
    for the rest of a CI run (seen once, 14 minutes, after a q that had not finished exiting)."""
    if pane_command() != "tokenloop":
        return
    pid = tmux("display-message", "-p", "-t", "t", "#{pane_pid}", check_rc=False).strip()
    if pid.isdigit():
        subprocess.run(["pkill", "-KILL", "-P", pid], capture_output=True)


def main():
    if not shutil.which("tmux"):
        print("tmux not installed: skipped")
        return 77
    tmux("new-session", "-d", "-s", "t", "-x", "160", "-y", "48", "-e", "LANG=C.UTF-8", "-e", "LC_ALL=C.UTF-8",
         "sh", "-c", "%s tui --async --lang en; sleep 30" % TOKENLOOP)
    try:
        tmux("set-option", "-t", "t", "status", "off")
        tmux("resize-window", "-t", "t", "-x", "160", "-y", "48", check_rc=False)
        wait_for(lambda s: "next: prefill" in s, "the first screen", 60)
        key("Escape")          # the opening strip
        key("g")
        for i in range(4):
            key("Space")
            wait_for(lambda s, i=i: generated(s) == i + 1, "token %d" % (i + 1))
            time.sleep(0.6)    # a teacher's pause
        s, m = wait_for(lambda s: re.search(r"pace (\S+ \S+)(?: per token)? = the (?:synchronized )?pass", s), "the hand-stepping pace")
        check(m is not None, "stepped by hand: the headline pace is the decode pass")
        w = re.search(r"wall clock (\S+ \S+)/token includes your pauses", s)
        check(w is not None and ms(w.group(1)) >= 500, "the wall clock is labelled as holding the pauses (%s)" %
              (w.group(1) if w else "-"))
        if m and w:
            # each gap held a 600 ms pause: the pace must not hold it (a sanitizer build is slower)
            check(ms(m.group(1)) < ms(w.group(1)) - 300, "the pace %s leaves the pauses out (wall %s)" % (m.group(1), w.group(1)))

        # from here on, sample hotter: the four tokens stay
        key("g")
        key("T")
        # the notice and the title bar come in one frame: wait for both (a capture can land mid-frame)
        s, _ = wait_for(lambda s: "from the next token on" in s and "T 0.70" in s.split("\n")[0],
                        "the settings notice and the new temperature in the title bar")
        check(generated(s) == 4, "g, T after 4 tokens: still 4 tokens (%d)" % generated(s))
        check("T 0.70" in s.split("\n")[0], "the title bar shows the new temperature")
        # the Logits header names the pass that made its rows (greedy), and that the change is next
        hl = [l for l in s.split("\n") if "argmax" in l or "sampled" in l]
        check(re.search(r"greedy \(argmax\) .*changed: next token", s) is not None,
              "(%s) g, T:" % (hl[0].strip() if hl else "-") + " the Logits header still names the greedy pass of its rows and says the new settings apply next")
        key("Space")
        s, _ = wait_for(lambda s: generated(s) == 5, "a 5th token")
        check(generated(s) == 5, "Space: the 5th token is made with the new settings")
        check(re.search(r"sampled \u00b7 temperature 0.70", s) is not None and "changed: next token" not in s,
              "Space: the Logits header names the new pass's settings, with no note")

        # the other streamer over the same tokens
        key("h")
        # the title and the notice come in one frame: wait for both (a capture can land mid-frame)
        s, _ = wait_for(lambda s: re.search(r"4 Stream \u00b7 server", s) and "replayed over the same" in s,
                        "the server streamer")
        check(generated(s) == 5, "h: the same 5 tokens, replayed through the server streamer")
        check("replayed over the same 5 tokens" in s, "h says it replayed the same tokens")
        key("h")
        s, _ = wait_for(lambda s: "TextStreamer(skip_prompt, skip_special_tokens)" in s, "hf again")
        check(generated(s) == 5, "h again: still 5 tokens")

        # trap 2 on the CPU: run to the stop with the wrong readings shown
        key("n")
        key("g")
        key("r")
        s, _ = wait_for(lambda s: "STOPPED" in s, "the stop", 60)
        key("w")
        s, m = wait_for(lambda s: re.search(r"WRONG 2: unsynchronized clock: TPOT (\S+ \S+)", s), "the wrong reading 2")
        # (the pass may be labelled as including the sampler's statistics: "+top 64, sums")
        p = re.search(r"pass (\S+ \S+) (?:\(\+top 64, sums\) )?= the chart", s) or \
            re.search(r"decode pass (\S+ \S+) \(synchronized", s)
        if check(m is not None and p is not None, "async: both readings on screen"):
            u, sy = ms(m.group(1)), ms(p.group(1))
            check(u is not None and sy and u < 0.1 * sy,
                  "--async: the unsynchronized clock reads %s, < 10%% of the synchronized pass %s" % (m.group(1), p.group(1)))

        # m says what 0 means for this model (its generation_config.json sets no budget)
        key("m")
        s, _ = wait_for(lambda s: "max_new_tokens (0:" in s, "the budget editor")
        check("max_new_tokens (0: none set, so transformers' default 20):" in s, "m: 0 is transformers' default 20 here")
        key("Escape")
        # one token on screen: a's warning counts it in the singular
        key("n")
        key("Space")
        wait_for(lambda s: generated(s) == 1, "one token")
        key("a")
        s, _ = wait_for(lambda s: "a again" in s, "a's warning")
        check("starts over, the 1 token goes" in s, "a with one token: 'the 1 token goes'")
        key("Escape")
        # the generated token selected: its choice and its bytes both whole (two rows if need be)
        key("2")
        key("Up")
        s, _ = wait_for(lambda s: re.search(r"#\d+ generated id", s), "the selected token's detail")
        m = re.search(r"bytes(?: [0-9a-f]{2})+\s*\u2502", s)
        check(re.search(r"rank \d+", s) is not None and m is not None,
              "the selected token: rank and every byte on screen (%s)" % (m.group(0) if m else "-"))

        key("c")
        s, _ = wait_for(lambda s: "model.generate(" in s, "the transformers call")
        check("apply_chat_template(messages, add_generation_prompt=True" in s, "c: the template call")
        check("TextStreamer(tok, skip_prompt=True, skip_special_tokens=True)" in s, "c: the streamer as the session runs it")
        check("do_sample=False" in s, "c: greedy is do_sample=False")
        key("Escape")
        key("q")
        check(wait_exit(30), "q: the UI exits")
    finally:
        stop_app()
        tmux("kill-server", check_rc=False)
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
