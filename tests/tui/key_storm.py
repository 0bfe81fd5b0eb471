#!/usr/bin/python3
"""Random input to `tokenloop tui` inside a private tmux server, for --seconds (default 60).

    key_storm.py TOKENLOOP MODEL_DIR [--seconds S] [--seed N]

Sends random keys (printable ASCII and a little Vietnamese, arrows, Home/End/PageUp/PageDown,
Insert/Delete, Esc, Enter, Tab, Backspace, F1-F12, Alt- and Ctrl- keys, Ctrl- and Alt-arrows)
in small bursts (up to 8 ms apart: ~100 a second, as fast as tmux takes them) and resizes the
window at random (down to 1x1) every half second or so, from a seeded RNG (the seed is printed;
--seed replays the same keys, though not the same timing). TERM is tmux-256color or, by the
seed, screen, whose description names no Ctrl- or Alt-arrow: those come as Esc [ 1 ; 5 D and
the like, which the UI must drop whole. Never sent: q and Q (they quit), D (it fills 2.5 GB of
random weights, seconds in Release and minutes under ASan, where the storm would spend its
time waiting; tui_random_weights checks it, and this test that the title never names random
weights), Ctrl-C, Ctrl-Z and Ctrl-\\ (signals the test would have to tell apart from a crash),
Ctrl-S and Ctrl-Q (XON/XOFF would freeze the pane's output). ctest gives it the lessons the
other TUI tests play (TOKENLOOP_LESSONS, TOKENLOOP_LESSON_SHAPE=small), passed on to the UI, for
the same reason as D: lesson 3's pace steps measure the 1B shape for minutes under ASan. Then it closes whatever is open
with Esc and quits with q, and passes when

  - the UI lived through the storm and exited with status 0;
  - no key of the storm became D: the title does not name random weights at the end;
  - its stderr (a file) holds no sanitizer report and nothing at all;
  - the terminal is restored: alternate screen off, echo and icanon on, no UI left on screen.

Exit 77 (skip) when tmux is missing.
"""
import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

SOCK = "tlstorm-%d" % os.getpid()
HERE = os.path.dirname(os.path.abspath(__file__))
SANITIZER = re.compile(r"(AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|ThreadSanitizer|"
                       r"runtime error:|==\d+==ERROR)")

SPECIAL = (["Up", "Down", "Left", "Right", "Home", "End", "PPage", "NPage", "IC", "DC", "Escape",
            "Enter", "Tab", "BTab", "BSpace", "Space"] + ["F%d" % i for i in range(1, 13)])
CTRL = ["C-" + c for c in "abdefghijklmnoprtuvwxy"] + ["C-Space", "C-]", "C-Left", "C-Right"]
ALT = ["M-" + c for c in "abcdegknprstx1"] + ["M-Up", "M-Left"]
PRINTABLE = [c for c in (chr(i) for i in range(0x20, 0x7f)) if c not in "qQD"]
UNICODE = ["\u00e0", "\u1ebf", "\u1edb", "\u01b0", "\u4e2d", "\U0001F600"]


def tmux(*args, check=True):
    r = subprocess.run(["tmux", "-u", "-L", SOCK, "-f", "/dev/null"] + list(args),
                       capture_output=True, text=True, timeout=20)
    if check and r.returncode:
        raise RuntimeError("tmux %s: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout


def random_burst(rng):
    """One send-keys call's worth: (literal?, [keys])."""
    x = rng.random()
    if x < 0.45:
        return True, ["".join(rng.choice(PRINTABLE) for _ in range(rng.randint(1, 6)))]
    if x < 0.50:
        return True, [rng.choice(UNICODE)]
    if x < 0.80:
        return False, [rng.choice(SPECIAL) for _ in range(rng.randint(1, 4))]
    if x < 0.92:
        return False, [rng.choice(CTRL)]
    return False, [rng.choice(ALT)]


def random_size(rng):
    x = rng.random()
    if x < 0.1:
        return rng.randint(1, 12), rng.randint(1, 6)   # too small for anything
    if x < 0.3:
        return rng.randint(40, 90), rng.randint(10, 26)
    return rng.randint(60, 220), rng.randint(16, 64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tokenloop")
    ap.add_argument("model")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--seed", type=int, default=None)
    o = ap.parse_args()
    if not shutil.which("tmux"):
        print("tmux not installed: skipped")
        return 77
    seed = o.seed if o.seed is not None else int.from_bytes(os.urandom(4), "little")
    print("key_storm: seed %d (replay: --seed %d), %.0f s" % (seed, seed, o.seconds), flush=True)
    rng = random.Random(seed)

    tmp = tempfile.mkdtemp(prefix="tlstorm")
    status, stty, errf = (os.path.join(tmp, n) for n in ("status", "stty", "stderr"))
    env = ["LANG=C.UTF-8", "LC_ALL=C.UTF-8"]
    # the sanitizers' settings as ctest gave them, and the suppression of ncurses' known leak
    # and the lessons' folder and shape as ctest gave them (the quick ones: see CMakeLists.txt)
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "TOKENLOOP_LESSONS", "TOKENLOOP_LESSON_SHAPE"):
        if os.environ.get(k):
            env.append("%s=%s" % (k, os.environ[k]))
    env.append("LSAN_OPTIONS=print_suppressions=0:suppressions=" + os.path.join(HERE, "lsan.supp"))
    # TERM=screen names no Ctrl+arrow or Alt+arrow: those arrive as Esc [ 1 ; 5 D and the like,
    # which the UI must drop whole (its tail would be keys: D fills 2.5 GB of random weights)
    term = rng.choice(["tmux-256color", "screen"])
    print("key_storm: TERM=%s" % term, flush=True)
    cmd = "TERM=%s %s tui --model %s 2>%s; echo $? > %s; stty -a > %s; sleep 120" % (
        term, o.tokenloop, o.model, errf, status, stty)
    args = ["new-session", "-d", "-s", "t", "-x", "120", "-y", "40"]
    for e in env:
        args += ["-e", e]
    tmux(*args, "sh", "-c", cmd)
    failures = []
    keys = bursts = resizes = 0
    try:
        tmux("set-option", "-t", "t", "status", "off")
        t0 = time.time()
        while "quit" not in tmux("capture-pane", "-p", "-t", "t") and time.time() - t0 < 60:
            time.sleep(0.1)
        if not os.path.exists(status):
            t0 = time.time()
            next_resize = t0 + rng.uniform(0.15, 0.75)
            while time.time() - t0 < o.seconds:
                if os.path.exists(status):
                    failures.append("the UI ended during the storm (after %d keys)" % keys)
                    break
                if time.time() >= next_resize:
                    c, r = random_size(rng)
                    tmux("resize-window", "-t", "t", "-x", str(c), "-y", str(r), check=False)
                    resizes += 1
                    next_resize = time.time() + rng.uniform(0.15, 0.75)
                literal, ks = random_burst(rng)
                tmux("send-keys", "-t", "t", *(["-l"] if literal else []), *ks, check=False)
                keys += len(ks[0]) if literal else len(ks)
                bursts += 1
                time.sleep(rng.uniform(0.0, 0.008))
        else:
            failures.append("the UI never showed its first screen")
        print("key_storm: %d keys in %d bursts, %d resizes" % (keys, bursts, resizes), flush=True)
        # back to a size with room, close the editor, help, lessons or prompt, and quit
        tmux("resize-window", "-t", "t", "-x", "120", "-y", "40", check=False)
        time.sleep(1)
        title = tmux("capture-pane", "-p", "-t", "t", check=False).split("\n")[0]
        if "random weights" in title or "ng\u1eabu nhi\u00ean" in title:
            failures.append("a key of the storm became D (random weights): " + title.strip())
        t0 = time.time()
        while not os.path.exists(status) and time.time() - t0 < 60:
            tmux("send-keys", "-t", "t", "Escape", check=False)
            time.sleep(0.3)
            tmux("send-keys", "-t", "t", "Escape", check=False)
            time.sleep(0.3)
            tmux("send-keys", "-t", "t", "q", check=False)
            for _ in range(20):
                if os.path.exists(status):
                    break
                time.sleep(0.1)
        t0 = time.time()
        while not os.path.exists(stty) and time.time() - t0 < 10:
            time.sleep(0.1)
        time.sleep(0.3)
        code = open(status).read().strip() if os.path.exists(status) else "(still running after q)"
        if code != "0":
            failures.append("exit status %s, expected 0" % code)
        err = open(errf, errors="replace").read() if os.path.exists(errf) else ""
        if SANITIZER.search(err):
            failures.append("sanitizer report on stderr:\n" + err[-6000:])
        elif err.strip():
            failures.append("stderr is not empty:\n" + err[-2000:])
        st = open(stty).read() if os.path.exists(stty) else ""
        if not (re.search(r"(^|\s)echo(\s|$)", st) and re.search(r"(^|\s)icanon(\s|$)", st)):
            failures.append("terminal not restored: echo/icanon off (stty -a: %r)" % st[:300])
        alt = tmux("display-message", "-p", "-t", "t", "#{alternate_on}", check=False).strip()
        if alt != "0":
            failures.append("terminal not restored: alternate screen on (%r)" % alt)
        screen = tmux("capture-pane", "-p", "-t", "t", check=False)
        if "quit" in screen or "tokenloop \u00b7" in screen:
            failures.append("terminal not restored: the UI is still on screen:\n" + screen)
    finally:
        tmux("kill-server", check=False)
    for f in failures:
        print("FAIL " + f)
    print("key_storm: seed %d, %d keys, %d resizes: %s" % (seed, keys, resizes, "FAILED" if failures else "ok"))
    if not failures:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print("key_storm: the UI's stderr is kept in %s" % errf)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
