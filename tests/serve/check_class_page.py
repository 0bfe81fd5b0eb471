"""The class page of `tokenloop serve` (GET /) in headless Chromium (Debian's chromium), driven
over the DevTools protocol on a pipe (--remote-debugging-pipe: JSON messages ending in NUL on
file descriptors 3 and 4, so nothing but the standard library is needed). The page sends one
streamed chat request and fills the DOM as the chunks arrive; this script waits for it to say
it is done, then reads the DOM: the text equals `tokenloop generate --json` in server stream mode,
one table row per content chunk with the server's token time and the client's receive time (never
going back), the client's TTFT at least the server's (a client cannot see a token before the
server had it), the finish reason and the usage.
usage: check_class_page.py TOKENLOOP SOURCE_DIR WORK_DIR"""
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse

exe, root, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
chromium = shutil.which("chromium") or shutil.which("chromium-browser")
if not chromium:
    sys.exit("check_class_page: chromium is not installed (scripts/deps.sh installs Debian's chromium)")
env = dict(os.environ)
env.pop("TOKENLOOP_MODEL", None)
bundled = os.path.join(root, "assets/models/tl-mini-instruct")
QUESTION = "What is the capital of France?"


class Browser:
    """Chromium with the DevTools protocol on a pipe: send() a command, wait for its answer."""

    def __init__(self):
        self.to_r, self.to_w = os.pipe()
        self.from_r, self.from_w = os.pipe()
        # chromium reads commands on fd 3 and writes answers on fd 4
        self.proc = subprocess.Popen(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--user-data-dir=" + os.path.join(work, "profile"), "--remote-debugging-pipe", "about:blank"],
            pass_fds=(3, 4), preexec_fn=self._fds, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(self.to_r)
        os.close(self.from_w)
        self.buf = b""
        self.next_id = 0

    def _fds(self):
        os.dup2(self.to_r, 3)
        os.dup2(self.from_w, 4)

    def send(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_w, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        while time.time() < deadline:
            while b"\0" in self.buf:
                raw, self.buf = self.buf.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self.next_id:
                    if "error" in reply:
                        raise RuntimeError("%s: %s" % (method, reply["error"]))
                    return reply.get("result", {})
            self.buf += os.read(self.from_r, 1 << 16)
        raise TimeoutError(method)

    def close(self):
        try:
            self.send("Browser.close", timeout=5)
        except Exception:   # noqa: BLE001 (it may already be gone)
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAILED:", what)


ref = json.loads(subprocess.run([exe, "generate", "--model", bundled, "--prompt", QUESTION, "--greedy",
                                 "--stream-mode", "server", "--max-new-tokens", "24", "--json", "--top", "1"],
                                capture_output=True, text=True, env=env, check=True).stdout)
srv = subprocess.Popen([exe, "serve", "--port", "0", "--api-key", "page-key"], stderr=subprocess.PIPE, text=True,
                       env=env)
port = re.search(r":(\d+),", srv.stderr.readline()).group(1)
browser = None
try:
    browser = Browser()
    # a key in the URL is not read (it would sit in the history and on a shared screen): the
    # request goes without one, the server says 401 and the page asks for the key
    url = "http://127.0.0.1:%s/?%s" % (port, urllib.parse.urlencode(
        {"q": QUESTION, "auto": "1", "key": "page-key", "max_tokens": "24"}))
    target = browser.send("Target.createTarget", {"url": url})["targetId"]
    session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

    def js(expr):
        r = browser.send("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session)
        return r.get("result", {}).get("value")

    def wait_done():
        deadline = time.time() + 60
        while time.time() < deadline and js("document.body && document.body.dataset.done") != "1":
            time.sleep(0.1)

    wait_done()
    asked = js("document.getElementById('summary').textContent") or ""
    check("error 401" in asked and "asks for a key" in asked, "a key in the URL only: %r" % asked)
    # the key typed into the page's field, then Send
    js("document.getElementById('key').value = 'page-key'; document.getElementById('go').click()")
    time.sleep(0.2)
    wait_done()
    page = js("""JSON.stringify({
        text: document.getElementById('text').textContent,
        rows: [...document.querySelectorAll('#chunks tbody tr')].map(tr => [...tr.cells].map(td => td.textContent)),
        ids: Object.fromEntries([...document.querySelectorAll('#summary span')].map(s => [s.id, s.textContent]))})""")
    page = json.loads(page) if page else {}
    check(page.get("text") == ref["streamed"], "the page's text %r vs generate %r" % (page.get("text"), ref["streamed"]))
    rows = page.get("rows", [])
    check(len(rows) > 1 and "".join(json.loads(r[1]) for r in rows) == ref["streamed"],
          "one row per chunk, adding up to the text (%d rows)" % len(rows))
    server_ms = [float(r[2]) for r in rows]
    client_ms = [float(r[3]) for r in rows]
    check(server_ms == sorted(server_ms) and client_ms == sorted(client_ms), "the two clocks never go back")
    ids = page.get("ids", {})
    ttft_c = float(ids.get("client-ttft", "nan").split()[0])
    ttft_s = float(ids.get("server-ttft", "nan").split()[0])
    check(ttft_c >= ttft_s, "client TTFT %s >= server TTFT %s" % (ttft_c, ttft_s))
    check(ids.get("finish") == ("length" if ref["stop_reason"] == "max_new_tokens" else "stop"),
          "finish_reason %r for %s" % (ids.get("finish"), ref["stop_reason"]))
    check(ids.get("usage", "").startswith("%d prompt + %d completion" % (len(ref["prompt_ids"]), len(ref["generated_ids"]))),
          "usage %r" % ids.get("usage"))
    print("class page in %s: %d chunks, client TTFT %.1f ms (server %.1f ms), text %r" %
          (subprocess.run([chromium, "--version"], capture_output=True, text=True).stdout.strip(), len(rows), ttft_c,
           ttft_s, page.get("text")))
finally:
    if browser:
        browser.close()
    srv.terminate()
    srv.wait(timeout=30)
print("class page: %d failures" % len(failures))
sys.exit(1 if failures else 0)
