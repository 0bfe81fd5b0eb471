#!/usr/bin/env python3
"""The layering rules of docs/ARCHITECTURE.md, checked from the #include lines.

usage: check_layers.py [ROOT]   (ROOT: the source tree, default this file's parent's parent)

A unit is a source file together with its header of the same name in the same folder
(serve/slots.c and serve/slots.h), so that "calls" reads as "includes the header of".
It fails (exit 1, one line per finding) when
  - two units include each other, or two source files call each other (each calls a function
    the other defines), outside core/jinja/, which is one interpreter, and core/quant*.c (every dtype's rows, the K-quants in quant_k.c); or
  - a file under core/ includes a file under kernels/: core reaches the kernels only through
    the registry in core/include/tokenloop/backend.h.
Only includes that resolve to a file of the tree count (system headers do not); a name is
looked up beside the including file, then in the include folders the build gives. Calls are
read from the text (comments and strings left out): a non-static function defined at the start
of a line, and NAME( anywhere else; a call through a pointer or a table is not seen.
It prints what it read on success, so a run that read nothing is seen to.
"""
import os
import re
import sys

SOURCE_DIRS = ("core", "kernels", "cli", "serve", "tui")
EXTENSIONS = (".c", ".h", ".cu", ".cuh")
# the build's include folders (CMakeLists.txt: core/include everywhere, core privately, the
# folder of each library for its own headers)
INCLUDE_DIRS = ("core/include", "core", ".")
ONE_UNIT = ("core/jinja/", "core/quant")   # quant.c and quant_k.c: every dtype's rows, the K-quants apart
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
# a definition: at the start of a line, not static, a name, its parameters, then the body
DEFINITION = re.compile(r'^(?!static\b|typedef\b|#)[A-Za-z_][\w \t*]*?\b([A-Za-z_]\w*)\s*\([^;{]*?\)\s*'
                        r'(?:__attribute__\(\(.*?\)\)\s*)?\{', re.M)
CALL = re.compile(r'\b([A-Za-z_]\w*)\s*\(')


def sources(root):
    for top in SOURCE_DIRS:
        for folder, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith(EXTENSIONS):
                    yield os.path.relpath(os.path.join(folder, f), root)


def resolve(root, including, name):
    for base in (os.path.dirname(including),) + INCLUDE_DIRS:
        path = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(root, path)):
            return path
    return None


def unit(path):
    return os.path.splitext(path)[0]


def code_of(text):
    """The text without comments and string literals."""
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    text = re.sub(r'//[^\n]*', '', text)
    return re.sub(r'"(\\.|[^"\\\n])*"', '""', text)


def mutual_calls(root, files):
    code = {}
    defined_in = {}
    for f in files:
        if f.endswith((".c", ".cu")):
            with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
                code[f] = code_of(fh.read())
            for name in DEFINITION.findall(code[f]):
                defined_in.setdefault(name, set()).add(f)
    calls = {}   # file -> {file: a function of it that the first calls}
    for f, text in code.items():
        for name in sorted(set(CALL.findall(text))):
            if f in defined_in.get(name, ()):
                continue   # its own definition: one per architecture (mm_avx512bf16.c, mv_bfdot_neon.c)
            for g in defined_in.get(name, ()):
                if g != f:
                    calls.setdefault(f, {}).setdefault(g, name)
    found = []
    for a in sorted(calls):
        for b in sorted(calls[a]):
            if a < b and a in calls.get(b, {}) and not all(u.startswith(ONE_UNIT) for u in (a, b)):
                found.append(f"{a} and {b} call each other: {a} calls {calls[a][b]}(), {b} calls {calls[b][a]}()")
    return len(defined_in), found


def check(root):
    files = list(sources(root))
    edges = {}   # unit -> {unit: (file, included file)}
    problems = []
    n_includes = 0
    for f in files:
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for name in INCLUDE.findall(text):
            target = resolve(root, f, name)
            if target is None:
                continue
            n_includes += 1
            if f.startswith("core/") and target.startswith("kernels/"):
                problems.append(f"{f} includes {target}: core reaches the kernels only through "
                                "core/include/tokenloop/backend.h")
            a, b = unit(f), unit(target)
            if a != b:
                edges.setdefault(a, {}).setdefault(b, (f, target))
    for a in sorted(edges):
        for b in sorted(edges[a]):
            if a < b and a in edges.get(b, {}):
                if all(u.startswith(ONE_UNIT) for u in (a, b)):
                    continue
                fa, ta = edges[a][b]
                fb, tb = edges[b][a]
                problems.append(f"{a} and {b} include each other: {fa} includes {ta}, {fb} includes {tb}")
    n_functions, found = mutual_calls(root, files)
    return files, n_includes, n_functions, problems + found


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files, n_includes, n_functions, problems = check(root)
    if not files:
        print(f"check_layers: no source files under {root}", file=sys.stderr)
        return 1
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"check_layers: {len(files)} files, {n_includes} includes within the tree, {n_functions} functions: "
          "no pair of units includes or calls each other outside core/jinja and core/quant*, core includes nothing from kernels/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
