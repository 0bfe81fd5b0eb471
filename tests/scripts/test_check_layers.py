#!/usr/bin/env python3
"""tools/check_layers.py: the real tree passes, and each rule fails on a small tree that breaks it.

usage: test_check_layers.py SOURCE_ROOT
"""
import os
import subprocess
import sys
import tempfile

ROOT = sys.argv[1]
TOOL = os.path.join(ROOT, "tools", "check_layers.py")
failures = []


def run(root):
    p = subprocess.run([sys.executable, TOOL, root], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def tree(files):
    d = tempfile.mkdtemp(prefix="layers-")
    for path, text in files.items():
        os.makedirs(os.path.join(d, os.path.dirname(path)), exist_ok=True)
        with open(os.path.join(d, path), "w") as f:
            f.write(text)
    return d


def expect(name, files, rc, words):
    got, out = run(tree(files))
    if got != rc or not all(w in out for w in words):
        failures.append(f"{name}: rc {got} (expected {rc}), output {out!r} (expected {words})")


rc, out = run(ROOT)
if rc != 0 or "files" not in out:
    failures.append(f"the source tree: rc {rc}: {out}")
else:
    print(out.strip())

CORE_OK = {"core/include/tokenloop/backend.h": "int tl_x(void);\n",
           "core/backend.c": '#include "tokenloop/backend.h"\nint tl_x(void)\n{\n    return 0;\n}\n'}
expect("core including kernels", {**CORE_OK, "kernels/cpu/mm.h": "int mm(void);\n",
                                  "core/engine.c": '#include "../kernels/cpu/mm.h"\n'},
       1, ["core/engine.c includes kernels/cpu/mm.h"])
expect("headers including each other", {**CORE_OK, "serve/a.h": '#include "b.h"\n', "serve/b.h": '#include "a.h"\n'},
       1, ["serve/a and serve/b include each other"])
expect("a file and another's header, both ways",
       {**CORE_OK, "cli/main.c": '#include "cmd.h"\n', "cli/cmd.h": "int cmd(void);\n",
        "cli/cmd.c": '#include "main.h"\n', "cli/main.h": "int fail(void);\n"},
       1, ["cli/cmd and cli/main include each other"])
expect("two files calling each other",
       {**CORE_OK, "cli/main.c": "int fail(int c)\n{\n    return c;\n}\nint main(void) { return cmd(); }\n",
        "cli/cmd.c": "/* fail( in a comment is no call */\nint cmd(void)\n{\n    return fail(2);\n}\n"},
       1, ["cli/cmd.c and cli/main.c call each other: cli/cmd.c calls fail(), cli/main.c calls cmd()"])
expect("a call one way only", {**CORE_OK, "cli/main.c": "int main(void) { return cmd(); }\n",
                               "cli/cmd.c": "int cmd(void)\n{\n    return 0;\n}\n"}, 0, ["no pair"])
expect("core/jinja may be one interpreter",
       {**CORE_OK, "core/jinja/a.c": '#include "b.h"\nint fa(void)\n{\n    return fb();\n}\n',
        "core/jinja/a.h": "int fa(void);\n", "core/jinja/b.h": '#include "a.h"\nint fb(void);\n',
        "core/jinja/b.c": "int fb(void)\n{\n    return fa();\n}\n"}, 0, ["no pair"])

for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
