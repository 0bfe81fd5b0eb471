"""The TUI's message table (tui/i18n_table.h) and key table (tui/keys_table.h) read by the tmux
tests: their (English, Vietnamese) pairs as text, so a test can say what the screen must (or must
not) show in each language."""
import os
import re

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tui", "i18n_table.h")
KEYS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tui", "keys_table.h")
ERRORS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tui", "i18n_errors.h")


def c_string(lit):
    """The text of a C string literal's body (UTF-8, \\\\ \\" \\n \\t \\xNN escapes)."""
    out = bytearray()
    i = 0
    raw = lit.encode("utf-8")
    while i < len(raw):
        c = raw[i]
        if c == 0x5C:
            n = chr(raw[i + 1])
            if n == "x":
                m = re.match(rb"[0-9A-Fa-f]+", raw[i + 2:])
                out.append(int(m.group(0), 16) & 0xFF)
                i += 2 + len(m.group(0))
                continue
            out += {"n": b"\n", "t": b"\t", "\\": b"\\", '"': b'"'}[n]
            i += 2
            continue
        out.append(c)
        i += 1
    return out.decode("utf-8")


def key_pairs(path=KEYS):
    """The key table's (tui/keys_table.h) footer words and key list texts, as (English,
    Vietnamese): .foot = {"KEY", "English", "Vietnamese"...} and .help = {"KEYS", ...}."""
    text = re.sub(r"/\*.*?\*/", "", open(path, encoding="utf-8").read(), flags=re.S)
    lit = r'"((?:[^"\\]|\\.)*)"'
    found = re.findall(r"\.(?:foot|help)\s*=\s*\{\s*%s\s*,\s*%s\s*,\s*%s" % (lit, lit, lit), text)
    return [(c_string(en), c_string(vi)) for _, en, vi in found]


def pairs(path=TABLE):
    """Every {"English", "Vietnamese"} entry, comments left out; with the key table's pairs
    after the message table's (the footer and the key list say their words from there), then
    core's errors as the screen words them (i18n_errors.h)."""
    text = re.sub(r"/\*.*?\*/", "", open(path, encoding="utf-8").read(), flags=re.S)
    lit = r'"((?:[^"\\]|\\.)*)"'
    out = [(c_string(a), c_string(b)) for a, b in re.findall(r"\{\s*%s\s*,\s*%s\s*\}" % (lit, lit), text)]
    return out + key_pairs() + pairs(ERRORS) if path == TABLE else out
