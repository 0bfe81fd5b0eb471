#!/usr/bin/python3
"""Builds tests/tokenizer/corpus/manpages.jsonl.xz, the real multilingual text the tokenizer is
checked on against Hugging Face's tokenizers (tests/hf/check_tokenizer.py): every translated
man page of a Debian 12 base system (/usr/share/man/LANG/manN/*.gz: dpkg, apt, man-db, passwd,
login, debianutils, vim ... in 25 languages), the English pages of the same base packages, and
/usr/share/common-licenses. The roff source is kept as it is (markup and all: escapes, quotes
and dots are good tokenizer input). One JSON object per line: path, package, lang, text.

    /usr/bin/python3 tools/hf-corpus/make_corpus.py      # on Debian 12, writes the .xz

Run on another system it makes another corpus; the committed one was made on Debian 12."""
import glob
import gzip
import json
import lzma
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "..", "tests", "tokenizer", "corpus", "manpages.jsonl.xz")
ENGLISH_FROM = ("dpkg", "apt", "man-db", "login", "passwd", "debianutils")


def owners(paths):
    """path -> Debian package, from dpkg -S"""
    own = {}
    for i in range(0, len(paths), 200):
        p = subprocess.run(["dpkg", "-S", *paths[i:i + 200]], capture_output=True, text=True)
        for line in p.stdout.splitlines():
            pkg, _, path = line.partition(": ")
            own[path] = pkg.split(":")[0]
    return own


def main():
    translated = sorted(f for f in glob.glob("/usr/share/man/*/man*/*.gz")
                        if not f.startswith("/usr/share/man/man"))
    english = []
    for pkg in ENGLISH_FROM:
        p = subprocess.run(["dpkg", "-L", pkg], capture_output=True, text=True)
        english += [f for f in p.stdout.splitlines() if f.startswith("/usr/share/man/man") and f.endswith(".gz")]
    english = sorted(set(english))
    own = owners(translated + english)
    records = []
    for f in translated + english:
        lang = f.split("/")[4] if not f.startswith("/usr/share/man/man") else "en"
        try:
            text = gzip.open(f).read().decode("utf-8")
        except UnicodeDecodeError:
            continue
        records.append({"path": f, "package": own.get(f, "?"), "lang": lang, "text": text})
    for f in sorted(glob.glob("/usr/share/common-licenses/*")):
        if os.path.isfile(f) and not os.path.islink(f):
            records.append({"path": f, "package": "base-files", "lang": "en",
                            "text": open(f, encoding="utf-8").read()})
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with lzma.open(OUT, "wt", encoding="utf-8", preset=9) as out:
        for r in records:
            out.write(json.dumps(r, ensure_ascii=False) + "\n")
    size = sum(len(r["text"].encode()) for r in records)
    langs = sorted({r["lang"] for r in records})
    print(f"{OUT}: {len(records)} documents, {size} bytes of text, {len(langs)} languages: {' '.join(langs)}")


if __name__ == "__main__":
    main()
