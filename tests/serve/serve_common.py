"""What the serve tests share: a `tokenloop serve` on a free loopback port, its stderr kept (a
sanitizer's report fails the test), its exit on SIGTERM, and the list of failed checks."""
import os
import re
import subprocess
import sys
import threading

failures = []
server_log = []   # every server's stderr after its first line


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAILED:", what)


def env():
    e = dict(os.environ)
    e.pop("TOKENLOOP_MODEL", None)   # the bundled model
    return e


def start(exe, *args):
    """(process, base URL) of `tokenloop serve --port 0 ARGS`"""
    srv = subprocess.Popen([exe, "serve", "--port", "0"] + list(args), stderr=subprocess.PIPE, text=True, env=env())
    first = srv.stderr.readline()
    m = re.search(r"http://127\.0\.0\.1:(\d+)", first)
    if not m:
        srv.kill()
        sys.exit("the server did not say where it listens: %r" % first)
    threading.Thread(target=lambda: server_log.extend(srv.stderr), daemon=True).start()
    return srv, "http://127.0.0.1:%s" % m.group(1)


def stop(srv):
    """SIGTERM: the server must exit 0"""
    srv.terminate()
    try:
        rc = srv.wait(timeout=60)
    except subprocess.TimeoutExpired:
        srv.kill()
        rc = "killed"
    check(rc == 0, "the server exits 0 on SIGTERM (got %s)" % rc)


def finish(summary):
    if failures or server_log:
        sys.stderr.write("the server's stderr:\n" + "".join(server_log)[-6000:])
    print("%s: %d failures" % (summary, len(failures)))
    sys.exit(1 if failures or server_log else 0)
