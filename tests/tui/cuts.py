#!/usr/bin/python3
"""Issue 39, item 7: no line a student reads is cut, at 160x48 or at 80x24.

    cuts.py TOKENLOOP MODEL_DIR COLS ROWS LANG

Runs `tokenloop tui` with TOKENLOOP_TUI_CUTS set (tui/draw.c then appends every text it draws
wider than its room to that file) in a private tmux server at COLS x ROWS in LANG (en or vi):
three passes, the key list, every step of every lesson (each with the strip expanded by z),
the transformers call. Nothing may have been drawn cut: a pane's line wraps or takes a shorter
form, a title too long for its box ends with an ellipsis (drawn whole, so not logged), and the
lesson strip and the text boxes wrap at words and scroll with "↓ more".
Exit 77 (skip) when tmux is missing.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

TOKENLOOP, MODEL, COLS, ROWS, LANG = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
SOCK = "tlcut-%d" % os.getpid()
LESSON_DIR = os.environ.get("TOKENLOOP_LESSONS") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                                                  "..", "lessons")
NLESSONS = len([f for f in os.listdir(LESSON_DIR) if f.endswith(".json")])
failures = []


def check(cond, msg):
    print(("ok   %s" if cond else "FAIL %s") % msg)
    if not cond:
        failures.append(msg)
    return cond


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


def look(what):
    """A screen drawn (the log holds its cuts); what it was, for a failure's message."""
    time.sleep(0.1)
    return capture()


def main():
    if not shutil.which("tmux"):
        print("tmux not installed: skipped")
        return 77
    tmp = tempfile.mkdtemp(prefix="tlcut")
    log = os.path.join(tmp, "cuts")
    status = os.path.join(tmp, "status")
    lang = "vi_VN.UTF-8" if LANG == "vi" else "en_US.UTF-8"
    cmd = ("env -u LC_ALL -u LC_MESSAGES LANG=%s TOKENLOOP_TUI_CUTS=%s %s tui --model %s; echo $? > %s; sleep 60"
           % (lang, log, TOKENLOOP, MODEL, status))
    quit_word = "tho\u00e1t" if LANG == "vi" else "quit"
    tmux("new-session", "-d", "-s", "t", "-x", str(COLS), "-y", str(ROWS), "sh", "-c", cmd)
    try:
        tmux("set-option", "-t", "t", "status", "off")
        tmux("resize-window", "-t", "t", "-x", str(COLS), "-y", str(ROWS), check_rc=False)
        s, m = wait_for(lambda s: "<|start_header_id|>" in s and quit_word in s, "the first screen", 60)
        check(m, "the first screen is up")
        look("first screen")
        for k in range(3):
            tmux("send-keys", "-t", "t", "Space")
            time.sleep(0.5)
        look("after three passes")
        tmux("send-keys", "-t", "t", "?")
        time.sleep(0.5)
        look("key list")
        tmux("send-keys", "-t", "t", "Escape")
        time.sleep(0.3)
        tmux("send-keys", "-t", "t", "l")
        s, m = wait_for(lambda s: "\u25b6" in s, "the lesson list", 10)
        look("lesson list")
        for li in range(NLESSONS):
            if li:
                tmux("send-keys", "-t", "t", "Down")
                time.sleep(0.2)
            tmux("send-keys", "-t", "t", "Enter")
            s, m = wait_for(lambda s: re.search(r" \u00b7 1/(\d+) \u00b7", s), "lesson %d, step 1" % (li + 1), 120)
            if not check(m, "Enter starts lesson %d" % (li + 1)):
                break
            n = int(m.group(1))
            for k in range(1, n + 1):
                if k > 1:
                    tmux("send-keys", "-t", "t", "Space")
                    wait_for(lambda s, k=k: (" \u00b7 %d/%d \u00b7 " % (k, n)) in s and re.search(
                        r"\u2713|\u2717|\?|thao t\u00e1c|action", s), "lesson %d, step %d" % (li + 1, k), 180)
                look("lesson %d, step %d" % (li + 1, k))
                tmux("send-keys", "-t", "t", "z")
                time.sleep(0.4)
                look("lesson %d, step %d, z" % (li + 1, k))
                tmux("send-keys", "-t", "t", "Escape")
                time.sleep(0.3)
            tmux("send-keys", "-t", "t", "Space")   # past the last step: the list
            wait_for(lambda s: "\u25b6" in s, "the lesson list again", 30)
        tmux("send-keys", "-t", "t", "Escape")
        time.sleep(0.5)
        tmux("send-keys", "-t", "t", "c")
        time.sleep(0.5)
        look("transformers call")
        tmux("send-keys", "-t", "t", "Escape")
        time.sleep(0.3)
        tmux("send-keys", "-t", "t", "q")
        t0 = time.time()
        while not os.path.exists(status) and time.time() - t0 < 20:
            time.sleep(0.1)
        check(open(status).read().strip() == "0" if os.path.exists(status) else False, "q exits with status 0")

        cuts = sorted(set(open(log, encoding="utf-8", errors="replace").read().splitlines())) \
            if os.path.exists(log) else []
        if os.environ.get("TL_CUTS_LIST"):   # the audit: every cut line at this size
            print("\n".join(cuts))
        check(not cuts, "at %dx%d nothing is drawn cut%s" % (COLS, ROWS, (":\n  " + "\n  ".join(cuts[:400])) if cuts else ""))
    finally:
        tmux("kill-server", check_rc=False)
        shutil.rmtree(tmp, ignore_errors=True)
    print("tui_cuts_%s_%dx%d: %d failed" % (LANG, COLS, ROWS, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
