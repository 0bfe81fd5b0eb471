#!/usr/bin/python3
"""End-to-end test of `tokenloop tui` inside a private tmux server at a fixed size.

    tmux_e2e.py TOKENLOOP MODEL_DIR COLS ROWS [LONG_MODEL_DIR]

MODEL_DIR is the bundled model when there is one. LONG_MODEL_DIR (default MODEL_DIR) is used
where a run must last: a random checkpoint never chooses EOS, so pausing a run is always tested.

Sends keys, captures the pane and asserts on what is on screen: the templated prompt with
<|start_header_id|>; after one Space a TTFT figure and k rows of logits with ids; after `r` a
stop reason; after Left one token fewer; after a resize no garbage; `q` exits with status 0 and
the terminal restored; SIGTERM also restores it. Every wait has a timeout; the tmux server is
killed on every exit path. Exit 77 (skip) when tmux is missing.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata

TOKENLOOP, MODEL, COLS, ROWS = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
LONG_MODEL = sys.argv[5] if len(sys.argv) > 5 else MODEL
if not os.path.exists(os.path.join(MODEL, "config.json")):
    sys.exit("%s: the bundled model is missing" % MODEL)
SOCK = "tltest-%d" % os.getpid()
failures = []


def tmux(*args, check=True):
    r = subprocess.run(["tmux", "-u", "-L", SOCK, "-f", "/dev/null"] + list(args),
                       capture_output=True, text=True, timeout=20)
    if check and r.returncode:
        raise RuntimeError("tmux %s: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout


def capture(escapes=False):
    return tmux("capture-pane", "-p", "-t", "t", *(["-e"] if escapes else []))


def wait_for(pred, what, timeout=30.0):
    t0 = time.time()
    last = ""
    while time.time() - t0 < timeout:
        last = capture()
        m = pred(last)
        if m:
            return last, m
        time.sleep(0.1)
    check(False, "timed out waiting for %s; screen:\n%s" % (what, last))
    return last, None


def check(cond, msg):
    if cond:
        print("ok   %s" % msg.splitlines()[0])
    else:
        print("FAIL %s" % msg)
        failures.append(msg)
    return cond


def width(s):
    w = 0
    for ch in s:
        if unicodedata.combining(ch) or ch in "\u200d\ufe0f":
            continue
        w += 2 if unicodedata.east_asian_width(ch) in "WF" else 1
    return w


def screen_sane(screen, cols, rows, what):
    lines = screen.split("\n")
    if lines and lines[-1] == "":
        lines = lines[:-1]
    ok = check(len(lines) <= rows, "%s: %d lines fit %d rows" % (what, len(lines), rows))
    wide = [l for l in lines if width(l) > cols]
    ok &= check(not wide, "%s: no line wider than %d columns %s" % (what, cols, wide[:1]))
    ok &= check("\ufffd" not in screen, "%s: no replacement characters" % what)
    # the title bar: from the program's name, or on a narrow terminal from the model's (it
    # gives up its name first, so the settings stay whole)
    names = ("tokenloop", os.path.basename(os.path.normpath(MODEL)), os.path.basename(os.path.normpath(LONG_MODEL)))
    ok &= check(lines[0].lstrip().startswith(names), "%s: the title on row 0" % what)
    ok &= check(len(lines) == rows and "quit" in lines[rows - 1], "%s: the footer on the last row" % what)
    ok &= check(len(lines) == rows and re.match(r"\s*(next:|stopped|running|paused)", lines[rows - 2]) is not None,
                "%s: the status line on row %d: %r" % (what, rows - 2, lines[rows - 2] if len(lines) == rows else ""))
    return ok


def generated(screen):
    m = re.search(r"generated (\d+)", screen)
    return int(m.group(1)) if m else None


def logit_rows(screen):
    # "  ▶   1     271  piece   45.84  100% ..." : rank then id, inside the logits pane
    rows = []
    for line in screen.split("\n"):
        for seg in line.split("\u2502"):
            m = re.match(r"\s*(?:F?\u25b6)?\s*(\d+)\s+(\d+)\s\s\S.*?\s(-?\d+\.\d\d|-?inf)\s+(\S+%)", seg)
            if m:
                rows.append((int(m.group(1)), int(m.group(2))))
    return rows


def main():
    global SOCK
    if not shutil.which("tmux"):
        print("tmux not installed: skipped")
        return 77
    tmp = tempfile.mkdtemp(prefix="tltui")
    status = os.path.join(tmp, "status")
    stty = os.path.join(tmp, "stty")
    cmd = ("%s tui --model %s; echo $? > %s; stty -a > %s; sleep 60" %
           (TOKENLOOP, MODEL, status, stty))
    tmux("new-session", "-d", "-s", "t", "-x", str(COLS), "-y", str(ROWS), "-e", "LANG=C.UTF-8",
         "-e", "LC_ALL=C.UTF-8", "sh", "-c", cmd)
    try:
        tmux("set-option", "-t", "t", "status", "off")
        tmux("resize-window", "-t", "t", "-x", str(COLS), "-y", str(ROWS), check=False)
        big = COLS >= 120 and ROWS >= 32
        s, m = wait_for(lambda s: re.search(r"next: prefill (\d+) tokens", s), "the first screen", 60)
        check("<|start_header_id|>" in s, "the templated prompt shows <|start_header_id|>")
        check(m is not None, "the status line says what Space will do (%s)" % (m.group(0) if m else "-"))
        n_prompt = int(m.group(1)) if m else 0
        check(re.search(r"Prompt \u00b7 %d tokens" % n_prompt, s) is not None or not big,
              "the prompt pane counts %d tokens" % n_prompt)
        screen_sane(s, COLS, ROWS, "first screen")

        tmux("send-keys", "-t", "t", "Space")
        # the whole frame, not its first pane: on a loaded machine a capture can fall between the
        # Timing pane's line and the last logits row / the status line (CI saw 9 rows once)
        wait_for(lambda s: re.search(r"TTFT (\d+\.\d+ ms|\d+\.\d+ s)", s) and len(logit_rows(s)) == 10
                 and "next: decode token 2" in s, "the frame after the prefill")
        s, m = wait_for(lambda s: re.search(r"TTFT (\d+\.\d+ ms|\d+\.\d+ s)", s), "a TTFT figure")
        check(m is not None, "after one Space: TTFT %s" % (m.group(1) if m else "-"))
        rows = logit_rows(s)
        check([r[0] for r in rows] == list(range(1, 11)), "after one Space: 10 logits rows ranked 1..10: %s" % rows)
        check(all(0 <= r[1] < 128256 for r in rows), "the logits rows carry token ids in the vocabulary")
        check(generated(s) == 1, "one token generated after the prefill (%s)" % generated(s))
        check("next: decode token 2" in s, "the status line moves on to decode token 2")

        # Enter on the third row forces that token instead: the row is marked F▶
        third = rows[2][1] if len(rows) >= 3 else -1
        tmux("send-keys", "-t", "t", "Down", "Down", "Enter")
        s, m = wait_for(lambda s: re.search(r"F\u25b6\s+3\s+%d\s" % third, s), "the forced row", 20)
        check(m, "Enter on row 3 forces token %d (marked F\u25b6)" % third)
        check(generated(s) == 1, "forcing replaces the choice, it adds no token (%s)" % generated(s))

        tmux("send-keys", "-t", "t", "r")
        s, m = wait_for(lambda s: re.search(r"(STOPPED: |stop: )(eos|stop_string|max_new_tokens)", s), "a stop reason", 120)
        check(m is not None, "after r: stop reason %s" % (m.group(2) if m else "-"))
        g = generated(s)
        check(g is not None and g >= 1, "after r: %s tokens generated" % g)

        tmux("send-keys", "-t", "t", "Left")
        s, m = wait_for(lambda s: generated(s) == (g or 0) - 1 and re.search(r"next: decode token", s),
                        "one token fewer", 20)
        check(m is not None, "after Left: %s -> %s generated, generation can go on" % (g, generated(s)))

        # resize: smaller then back; the screen is redrawn for each size without leftovers
        for c, r in ((60, 18), (COLS, ROWS)):
            tmux("resize-window", "-t", "t", "-x", str(c), "-y", str(r))
            tabbed = not (c >= 120 and r >= 32)

            def redrawn(s, c=c, r=r, tabbed=tabbed):
                lines = s.split("\n")
                return (len(lines) >= r and "quit" in lines[r - 1] and "quit" not in "".join(lines[:r - 1])
                        and ("1 Prompt  2 Tokens" in s) == tabbed)
            s, _ = wait_for(redrawn, "the redraw at %dx%d" % (c, r), 20)
            screen_sane(s, c, r, "after a resize to %dx%d" % (c, r))
            check(("1 Prompt  2 Tokens" in s) == tabbed, "after a resize to %dx%d: %s" % (c, r, "tabs" if tabbed else "all panes"))

        # ? shows every key; any key closes it
        tmux("send-keys", "-t", "t", "?")
        s, m = wait_for(lambda s: "run to the stop" in s and "step back one token" in s, "the help", 10)
        check(m, "? shows the key list")
        tmux("send-keys", "-t", "t", "Escape")
        s, m = wait_for(lambda s: "run to the stop" not in s, "the help to close", 10)
        check(m, "any key closes the help")

        # d: the weights in the next dtype. The answer goes (the status line says where its
        # figures are kept); after a run on each, the Timing pane has a row per dtype
        def table_rows(s):
            return [l for l in s.split("\n") if re.search(r"(\u25b6|\s)\s(bf16|q8_0|q4_0)\s+\d+\.\d+ MB", l)]
        for k, dt in enumerate(("q8_0", "q4_0", "bf16")):
            tmux("send-keys", "-t", "t", "d")
            s, m = wait_for(lambda s, dt=dt: re.search(r"next: prefill %d tokens" % n_prompt, s)
                            and ((dt + " weights") in s.split("\n")[0]) == (dt != "bf16"), "the %s weights" % dt, 60)
            check(m, "d: the weights are %s, the title says so, the next step prefills again" % dt)
            if k == 0:
                check("kept in the Timing table" in s or not big and "weights q8_0" in s,
                      "d: the status line says the answer's figures stay in the Timing table")
            if dt != "bf16":
                tmux("send-keys", "-t", "t", "r")
                wait_for(lambda s: re.search(r"(STOPPED: |stop: )", s), "a stop on %s" % dt, 120)
        rows = table_rows(s)
        check([re.search(r"(bf16|q8_0|q4_0)", r).group(1) for r in rows] == ["bf16", "q8_0", "q4_0"],
              "after d three times: the Timing table has a row per dtype %s" % rows)
        check(len(rows) == 3 and "\u25b6 bf16" in rows[0], "the current dtype (bf16 again) is marked")
        screen_sane(s, COLS, ROWS, "the dtype table")
        # back where the test was: an answer on bf16, one token stepped back
        tmux("send-keys", "-t", "t", "r")
        wait_for(lambda s: re.search(r"(STOPPED: |stop: )", s), "a stop on bf16", 120)
        tmux("send-keys", "-t", "t", "Left")
        wait_for(lambda s: re.search(r"next: decode token", s), "one token back on bf16", 20)

        # a with tokens on screen: the first press only says what it would throw away
        tmux("send-keys", "-t", "t", "a")
        s, m = wait_for(lambda s: "a again = add_generation_prompt off" in s, "the start-over warning", 20)
        check(m and re.search(r"next: decode token", s), "a once: the answer stays and the status says it would go")
        # a again: add_generation_prompt off re-renders at once: fewer prompt tokens; on again: back
        tmux("send-keys", "-t", "t", "a")
        s, m = wait_for(lambda s: re.search(r"next: prefill (\d+) tokens", s), "a re-render", 20)
        n_off = int(m.group(1)) if m else -1
        check(0 < n_off < n_prompt, "a: without the generation prompt %d < %d tokens" % (n_off, n_prompt))
        tmux("send-keys", "-t", "t", "a")
        s, m = wait_for(lambda s: re.search(r"next: prefill %d tokens" % n_prompt, s), "the generation prompt back", 20)
        check(m, "a again: %d tokens" % n_prompt)

        # e: edit the message in place; Vietnamese, CJK and emoji keep every border in its column
        text = "Xin ch\u00e0o th\u1ebf gi\u1edbi \u4e2d\u6587\u5b57 \U0001F600 \u1ec7"
        tmux("send-keys", "-t", "t", "e")
        wait_for(lambda s: "user message (Enter" in s, "the editor", 10)
        tmux("send-keys", "-t", "t", "C-u")
        tmux("send-keys", "-t", "t", "-l", text)
        tmux("send-keys", "-t", "t", "Enter")
        s, m = wait_for(lambda s: text in s and "user message (Enter" not in s, "the edited message in the prompt", 20)
        check(m, "e: the edited message is in the rendered prompt")
        if m:
            bad = [l for l in s.split("\n") if l.startswith("\u2502") and width(l) != COLS and width(l) != COLS // 2]
            check(not bad, "wide characters: every pane line keeps its border column %s" % bad[:1])
        screen_sane(s, COLS, ROWS, "after editing")

        # i: a typed <|eot_id|> is a special token (one id) until content is plain text (seven)
        tmux("send-keys", "-t", "t", "e")
        wait_for(lambda s: "user message (Enter" in s, "the editor", 10)
        tmux("send-keys", "-t", "t", "C-u")
        tmux("send-keys", "-t", "t", "-l", "Hi<|eot_id|>there")
        tmux("send-keys", "-t", "t", "Enter")
        s, m = wait_for(lambda s: "user message (Enter" not in s and re.search(r"next: prefill (\d+) tokens", s),
                        "the injected message", 20)
        n_special = int(m.group(1)) if m else -1
        tmux("send-keys", "-t", "t", "i")
        s, m = wait_for(lambda s: "content as plain text" in s and re.search(r"next: prefill (\d+) tokens", s)
                        and int(re.search(r"next: prefill (\d+) tokens", s).group(1)) != n_special,
                        "plain-text content", 20)
        n_plain = int(re.search(r"next: prefill (\d+) tokens", s).group(1)) if m else -1
        check(m and n_plain == n_special + 6, "i: <|eot_id|> typed in the message, %d tokens as a special token, "
              "%d as plain text (want 6 more)" % (n_special, n_plain))
        tmux("send-keys", "-t", "t", "i")
        s, m = wait_for(lambda s: "content as plain text" not in s and "next: prefill %d tokens" % n_special in s,
                        "special tokens in content again", 20)
        check(m, "i again: the typed marker is the special token again")

        # l: the lessons panel lists the lessons; Esc hides it
        tmux("send-keys", "-t", "t", "l")
        # (the opening strip has the same header: wait for the list itself)
        s, m = wait_for(lambda s: "Lessons (l)" in s and "1-template" in s, "the lessons panel", 10)
        check(m, "l opens the lessons panel")
        check("1-template" in s, "the lessons panel lists lesson 1")
        tmux("send-keys", "-t", "t", "Enter")
        s, m = wait_for(lambda s: re.search(r" \u00b7 1/\d+", s), "lesson 1, step 1", 60)
        check(m, "Enter starts lesson 1 at step 1")
        check(m and "\u2713 checked" in s, "step 1's expectations hold on the bundled model")
        n_steps = int(re.search(r" \u00b7 1/(\d+)", s).group(1)) if m else 0
        for k in range(2, n_steps + 1):
            tmux("send-keys", "-t", "t", "Right")
            s, m = wait_for(lambda s: re.search(r" \u00b7 %d/\d+" % k, s) and re.search(r"\u2713 checked|\u2717", s),
                            "lesson 1, step %d" % k, 60)
            check(m, "\u2192 advances to step %d" % k)
            check(m and "\u2713 checked" in s, "step %d's expectations hold on the bundled model" % k)
        tmux("send-keys", "-t", "t", "Escape")
        s, m = wait_for(lambda s: "Lessons (l)" not in s, "the lessons panel to close", 10)
        check(m, "Esc closes the lessons panel")

        # colours unless NO_COLOR: SGR colour codes on screen
        esc = capture(escapes=True)
        check(re.search(r"\x1b\[[0-9;]*(3[0-7]|4[0-7]|38;5)[;m]", esc) is not None, "colours are used")

        tmux("send-keys", "-t", "t", "q")
        t0 = time.time()
        while not os.path.exists(stty) and time.time() - t0 < 20:
            time.sleep(0.1)
        time.sleep(0.2)
        code = open(status).read().strip() if os.path.exists(status) else "(none)"
        check(code == "0", "q exits with status 0 (got %s)" % code)
        st = open(stty).read() if os.path.exists(stty) else ""
        check(re.search(r"(^|\s)echo(\s|$)", st) and re.search(r"(^|\s)icanon(\s|$)", st),
              "the terminal is restored: echo and icanon are on again")
        alt = tmux("display-message", "-p", "-t", "t", "#{alternate_on}").strip()
        check(alt == "0", "the terminal is restored: alternate screen off (%s)" % alt)
    finally:
        tmux("kill-server", check=False)

    # SIGTERM while open, in monochrome (NO_COLOR): restored, status 143, no colour codes
    status2 = os.path.join(tmp, "status2")
    stty2 = os.path.join(tmp, "stty2")
    # the inner shell writes its pid and becomes tokenloop, in the foreground of the terminal
    cmd = ("sh -c 'echo $$ > %s/pid; exec env NO_COLOR=1 %s tui --model %s'; echo $? > %s; stty -a > %s; sleep 60" %
           (tmp, TOKENLOOP, MODEL, status2, stty2))
    SOCK += "b"   # a fresh server: the first one may still be shutting down
    tmux("new-session", "-d", "-s", "t", "-x", str(COLS), "-y", str(ROWS), "-e", "LANG=C.UTF-8",
         "-e", "LC_ALL=C.UTF-8", "sh", "-c", cmd)
    try:
        tmux("set-option", "-t", "t", "status", "off")
        tmux("resize-window", "-t", "t", "-x", str(COLS), "-y", str(ROWS), check=False)
        s, m = wait_for(lambda s: re.search(r"next: prefill", s), "the first screen (NO_COLOR)", 60)
        esc = capture(escapes=True)
        check(re.search(r"\x1b\[[0-9;]*(3[0-7]|4[0-7]|38;5)[;m]", esc) is None, "NO_COLOR: no colour codes")
        if COLS >= 120:
            check("mono" in s.split("\n")[0], "NO_COLOR: the title says mono")
        pid = int(open(os.path.join(tmp, "pid")).read())
        os.kill(pid, 15)
        t0 = time.time()
        while not os.path.exists(stty2) and time.time() - t0 < 20:
            time.sleep(0.1)
        time.sleep(0.2)
        code = open(status2).read().strip() if os.path.exists(status2) else "(none)"
        check(code == "143", "SIGTERM: exit status 128+15 (got %s)" % code)
        st = open(stty2).read() if os.path.exists(stty2) else ""
        check(re.search(r"(^|\s)echo(\s|$)", st) and re.search(r"(^|\s)icanon(\s|$)", st),
              "SIGTERM: the terminal is restored")
    finally:
        tmux("kill-server", check=False)

    # q during a run: the generation thread is cancelled and joined, exit 0, terminal restored
    status3 = os.path.join(tmp, "status3")
    stty3 = os.path.join(tmp, "stty3")
    # also the entry point with no arguments: `tokenloop` opens the TUI on $TOKENLOOP_MODEL
    cmd = ("TOKENLOOP_MODEL=%s %s; echo $? > %s; stty -a > %s; sleep 60" % (LONG_MODEL, TOKENLOOP, status3, stty3))
    SOCK += "c"
    tmux("new-session", "-d", "-s", "t", "-x", str(COLS), "-y", str(ROWS), "-e", "LANG=C.UTF-8",
         "-e", "LC_ALL=C.UTF-8", "sh", "-c", cmd)
    try:
        tmux("set-option", "-t", "t", "status", "off")
        tmux("resize-window", "-t", "t", "-x", str(COLS), "-y", str(ROWS), check=False)
        s, m = wait_for(lambda s: re.search(r"next: prefill", s), "the first screen of `tokenloop`", 60)
        check(m and "<|start_header_id|>" in s, "`tokenloop` without arguments opens the TUI")
        # a long run streams on screen while it runs; any key pauses it
        tmux("send-keys", "-t", "t", "m")
        wait_for(lambda s: "max_new_tokens (0" in s, "the max_new_tokens editor", 10)
        tmux("send-keys", "-t", "t", "C-u")
        tmux("send-keys", "-t", "t", "-l", "1000")
        tmux("send-keys", "-t", "t", "Enter")
        s, m = wait_for(lambda s: re.search(r"generated 0/1000|0 of 1000 new tokens", s), "the new budget", 20)
        check(m, "m sets max_new_tokens to 1000 (%s)" % (m.group(0) if m else "-"))
        tmux("send-keys", "-t", "t", "r")
        s, m = wait_for(lambda s: re.search(r"running: (\d+) chunks", s), "the run in progress", 30)
        check(m, "r: the screen repaints while the background thread generates (%s)" % (m.group(0) if m else "-"))
        # the seam itself: chunks the generation thread put into the queue, those the screen took
        s, m = wait_for(lambda s: re.search(r"queue: ([1-9]\d*) put, (\d+) taken, (\d+) waiting", s),
                        "the queue's counts", 30)
        check(m and int(m.group(1)) >= int(m.group(2)) and int(m.group(3)) == int(m.group(1)) - int(m.group(2)),
              "the Stream pane counts the iterator queue while it runs (%s)" % (m.group(0) if m else "-"))
        tmux("send-keys", "-t", "t", "x")
        s, m = wait_for(lambda s: "paused" in s, "the pause", 30)
        g = generated(s)
        check(m and g is not None and 0 < g < 1000, "any key pauses the run (%s of 1000 tokens)" % g)
        tmux("send-keys", "-t", "t", "r", "q")
        t0 = time.time()
        while not os.path.exists(stty3) and time.time() - t0 < 30:
            time.sleep(0.1)
        time.sleep(0.2)
        code = open(status3).read().strip() if os.path.exists(status3) else "(none)"
        check(code == "0", "q during a run: exit status 0 (got %s)" % code)
        st = open(stty3).read() if os.path.exists(stty3) else ""
        check(re.search(r"(^|\s)echo(\s|$)", st) and re.search(r"(^|\s)icanon(\s|$)", st),
              "q during a run: the terminal is restored")
    finally:
        tmux("kill-server", check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    # Ctrl-C (SIGINT from the terminal) and a fatal signal (SIGSEGV) also restore the terminal
    for n, (how, want) in enumerate((("C-c", "130"), (11, "139"))):
        d = tempfile.mkdtemp(prefix="tltui")
        st_file, stty_file = os.path.join(d, "status"), os.path.join(d, "stty")
        # the outer shell ignores SIGINT so that it lives to record the status (tokenloop installs
        # its own handler, which replaces the inherited "ignore")
        cmd = ("trap '' INT; sh -c 'echo $$ > %s/pid; exec %s tui --model %s'; echo $? > %s; stty -a > %s; sleep 60" %
               (d, TOKENLOOP, MODEL, st_file, stty_file))
        SOCK += "d%d" % n
        tmux("new-session", "-d", "-s", "t", "-x", str(COLS), "-y", str(ROWS), "-e", "LANG=C.UTF-8",
             "-e", "LC_ALL=C.UTF-8", "sh", "-c", cmd)
        try:
            tmux("set-option", "-t", "t", "status", "off")
            wait_for(lambda s: re.search(r"next: prefill", s), "the first screen", 60)
            if how == "C-c":
                tmux("send-keys", "-t", "t", "C-c")
            else:
                os.kill(int(open(os.path.join(d, "pid")).read()), how)
            t0 = time.time()
            while not os.path.exists(stty_file) and time.time() - t0 < 20:
                time.sleep(0.1)
            time.sleep(0.2)
            code = open(st_file).read().strip() if os.path.exists(st_file) else "(none)"
            what = "Ctrl-C" if how == "C-c" else "SIGSEGV"
            check(code == want, "%s: exit status %s (got %s)" % (what, want, code))
            st = open(stty_file).read() if os.path.exists(stty_file) else ""
            check(re.search(r"(^|\s)echo(\s|$)", st) and re.search(r"(^|\s)icanon(\s|$)", st),
                  "%s: the terminal is restored" % what)
        finally:
            tmux("kill-server", check=False)
            shutil.rmtree(d, ignore_errors=True)
    print("tui_tmux_%dx%d: %d failed" % (COLS, ROWS, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
