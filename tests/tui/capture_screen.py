#!/usr/bin/python3
"""Captures a real session's screen as text for tui/README-panes.md (not a test).

    capture_screen.py TOKENLOOP MODEL_DIR [COLS ROWS] [KEYS...]

Opens `tokenloop tui --model MODEL_DIR` in a private tmux server, presses Space once (the
prefill), then `r` (run to the stop), waits for the stop and prints the pane. Extra KEYS are
sent after that (tmux key names)."""
import os
import re
import subprocess
import sys
import time

exe, model = sys.argv[1], sys.argv[2]
cols = int(sys.argv[3]) if len(sys.argv) > 3 else 160
rows = int(sys.argv[4]) if len(sys.argv) > 4 else 48
extra = sys.argv[5:]
sock = "tlcap-%d" % os.getpid()


def tmux(*a):
    return subprocess.run(["tmux", "-u", "-L", sock, "-f", "/dev/null"] + list(a), capture_output=True,
                          text=True, timeout=20).stdout


def wait(pattern, timeout=120):
    t0 = time.time()
    while time.time() - t0 < timeout:
        s = tmux("capture-pane", "-p", "-t", "c")
        if re.search(pattern, s):
            return s
        time.sleep(0.2)
    raise SystemExit("timed out waiting for %r" % pattern)


tmux("new-session", "-d", "-s", "c", "-x", str(cols), "-y", str(rows), "-e", "LANG=C.UTF-8",
     "%s tui --model %s; sleep 30" % (exe, model))
try:
    tmux("set-option", "-t", "c", "status", "off")
    tmux("resize-window", "-t", "c", "-x", str(cols), "-y", str(rows))
    wait(r"next: prefill")
    tmux("send-keys", "-t", "c", "Space")
    wait(r"next: decode token 2|stopped")
    tmux("send-keys", "-t", "c", "r")
    wait(r"stopped \(")
    for k in extra:
        tmux("send-keys", "-t", "c", k)
        time.sleep(0.5)
    sys.stdout.write(tmux("capture-pane", "-p", "-t", "c"))
    tmux("send-keys", "-t", "c", "q")
finally:
    tmux("kill-server")
