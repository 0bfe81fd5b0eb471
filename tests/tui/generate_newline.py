#!/usr/bin/python3
"""`tokenloop generate` in a terminal ends its answer with a newline, so the shell's next output
starts a line of its own; piped, stdout is exactly the streamed text (as --json's "streamed").

    generate_newline.py TOKENLOOP MODEL_DIR

Exit 77 (skip) when tmux is missing."""
import json
import os
import shutil
import subprocess
import sys
import time

TOKENLOOP, MODEL = sys.argv[1], sys.argv[2]
SOCK = "tlnl-%d" % os.getpid()
ARGS = ["generate", "--model", MODEL, "--prompt", "What is the capital of France?", "--greedy"]


def main():
    if not shutil.which("tmux"):
        print("tmux not installed: skipped")
        return 77
    fails = 0
    piped = subprocess.run([TOKENLOOP] + ARGS, capture_output=True, text=True, timeout=120)
    j = json.loads(subprocess.run([TOKENLOOP] + ARGS + ["--json"], capture_output=True, text=True, timeout=120).stdout)
    if piped.stdout != j["streamed"] or j["streamed"].endswith("\n"):
        print("FAIL piped stdout %r, streamed %r (want equal, no newline of its own)" % (piped.stdout, j["streamed"]))
        fails += 1
    cmd = "%s %s 2>/dev/null; echo END-OF-RUN; sleep 30" % (TOKENLOOP, " ".join("'%s'" % a for a in ARGS))
    base = ["tmux", "-u", "-L", SOCK, "-f", "/dev/null"]
    subprocess.run(base + ["new-session", "-d", "-s", "t", "-x", "120", "-y", "10", "sh", "-c", cmd], check=True)
    try:
        screen = ""
        for _ in range(300):
            screen = subprocess.run(base + ["capture-pane", "-p", "-t", "t"], capture_output=True, text=True).stdout
            if "END-OF-RUN" in screen:
                break
            time.sleep(0.1)
        lines = screen.splitlines()
        ok = j["streamed"] in lines and "END-OF-RUN" in lines
        print(("ok   " if ok else "FAIL ") + "in a terminal the answer has its own line: %r" % lines[:3])
        fails += not ok
    finally:
        subprocess.run(base + ["kill-server"], capture_output=True)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
