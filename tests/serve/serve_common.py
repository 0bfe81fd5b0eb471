"""What the serve tests share: a `tokenloop serve` on a free loopback port, its access log in a
file (access_log reads it), its stderr kept (anything there but the server's own "tokenloop serve:"
lines, a sanitizer's report say, fails the test), its exit on SIGTERM, and the list of failed
checks."""
import os
import re
import subprocess
import sys
import tempfile
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


def _keep(stream):
    for line in stream:
        if not line.startswith("tokenloop serve: "):
            server_log.append(line)


def start(exe, *args, env_extra=None):
    """(process, base URL) of `tokenloop serve --port 0 ARGS`; the access log goes to
    srv.access_log (a file name)"""
    log = tempfile.NamedTemporaryFile(prefix="tl-serve-", suffix=".log", delete=False)
    log.close()
    e = env()
    e.update(env_extra or {})
    srv = subprocess.Popen([exe, "serve", "--port", "0", "--log", log.name] + list(args), stderr=subprocess.PIPE,
                           text=True, env=e)
    srv.access_log = log.name
    first = srv.stderr.readline()
    m = re.search(r"http://(127\.0\.0\.1|\[::1\]):(\d+)", first)
    if not m:
        srv.kill()
        sys.exit("the server did not say where it listens: %r" % first)
    threading.Thread(target=_keep, args=(srv.stderr,), daemon=True).start()
    return srv, "http://%s:%s" % (m.group(1), m.group(2))


def access_log(srv):
    with open(srv.access_log) as f:
        return f.read().splitlines()


def stop(srv):
    """SIGTERM: the server must exit 0"""
    srv.terminate()
    try:
        rc = srv.wait(timeout=60)
    except subprocess.TimeoutExpired:
        srv.kill()
        rc = "killed"
    check(rc == 0, "the server exits 0 on SIGTERM (got %s)" % rc)
    try:
        os.unlink(srv.access_log)
    except OSError:
        pass


def finish(summary):
    if failures or server_log:
        sys.stderr.write("the server's stderr:\n" + "".join(server_log)[-6000:])
    print("%s: %d failures" % (summary, len(failures)))
    sys.exit(1 if failures or server_log else 0)
