#!/usr/bin/python3
"""D: random weights of Llama 3.2 1B's shape stand in for the model opened, and come back
(issue 38: a teacher opens weights that reach memory without restarting), in tmux at 100x30.

    random_weights.py TOKENLOOP MODEL_DIR

The title bar names the model as loaded; D says it is filling 2.5 GB, then the title bar and the
Timing pane name random weights of the 1B shape, and Space's prefill and the steps after it run
on them (the Timing pane's floor is some hundreds of MB at least, not the bundled 35.7 MB); D
again gives the bundled model back, named in the title bar, and Space runs on it.
Exit 77 (skip) when tmux is missing.
"""
import os
import re
import shutil
import subprocess
import sys
import time

TOKENLOOP, MODEL = sys.argv[1], sys.argv[2]
SOCK = "tlrandom-%d" % os.getpid()
failures = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        failures.append(msg)
    return cond


def tmux(*args, check_rc=True):
    r = subprocess.run(["tmux", "-u", "-L", SOCK, "-f", "/dev/null"] + list(args),
                       capture_output=True, text=True, timeout=60)
    if check_rc and r.returncode:
        raise RuntimeError("tmux %s: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout


def capture():
    return tmux("capture-pane", "-p", "-t", "t")


def wait_for(pred, what, timeout=120.0):
    t0, last = time.time(), ""
    while time.time() - t0 < timeout:
        last = capture()
        if pred(last):
            return last
        time.sleep(0.05)
    check(False, "timed out waiting for %s; screen:\n%s" % (what, last))
    return None


def title(s):
    return s.split("\n")[0] if s else ""


def floor_gb(s):
    """The Timing pane's floor line: 'floor 2.47 GB ÷ ...' -> bytes in GB."""
    m = re.search(r"floor ([\d.,]+) (MB|GB) \u00f7", s or "")
    if not m:
        return None
    v = float(m.group(1).replace(",", ""))
    return v / 1000 if m.group(2) == "MB" else v


def main():
    if not shutil.which("tmux"):
        print("tmux not installed: skipped")
        return 77
    cmd = "%s tui --model %s --lang en --prompt Hello; sleep 30" % (TOKENLOOP, MODEL)
    tmux("new-session", "-d", "-s", "t", "-x", "100", "-y", "30", "-e", "LANG=C.UTF-8",
         "-e", "LC_ALL=C.UTF-8", "sh", "-c", cmd)
    try:
        tmux("set-option", "-t", "t", "status", "off")
        s = wait_for(lambda s: "1 Prompt" in s, "the first screen")
        if s is None:
            return 1
        tmux("send-keys", "-t", "t", "Escape")
        check("tl-mini-instruct" in title(s) and "random" not in title(s), "the title bar names the model opened: " + title(s))
        tmux("send-keys", "-t", "t", "D")
        s = wait_for(lambda s: "llama-3.2-1b (random weights)" in title(s), "the random weights in the title bar")
        if s is None:
            return 1
        check("the tokens are noise" in s, "the status line says the tokens are noise and the pace is real")
        tmux("send-keys", "-t", "t", "6")
        for _ in range(3):
            tmux("send-keys", "-t", "t", "Space")
            time.sleep(0.5)
        s = wait_for(lambda s: re.search(r"generated 3", s) and floor_gb(s), "three passes on the random weights")
        gb = floor_gb(s)
        check(gb is not None and gb > 1.0, "the floor reads the 1B shape's weights (%s GB), not the bundled 0.04 GB" % gb)
        check("random weights of a published shape" in (s or ""), "the Timing pane names the weights as random")
        tmux("send-keys", "-t", "t", "D")
        s = wait_for(lambda s: "tl-mini-instruct" in title(s), "the model opened in the title bar again")
        if s is not None:
            check("random" not in title(s), "the title bar no longer says random weights: " + title(s))
            check("model opened is back" in s, "the status line says the model is back")
            tmux("send-keys", "-t", "t", "Space")
            s = wait_for(lambda s: re.search(r"generated 1", s) and floor_gb(s), "a pass on the model opened")
            gb = floor_gb(s)
            check(gb is not None and gb < 0.1, "the floor reads the bundled weights again (%s GB)" % gb)
        tmux("send-keys", "-t", "t", "q")
    finally:
        tmux("kill-server", check_rc=False)
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
