"""scripts/test-targets.sh against ctest's own JSON listing: every program under the build tree
that a test of the selection runs must be among the targets the script derives, so
scripts/device-check.sh and scripts/build.sh --tests build what their ctest step runs.
usage: check_test_targets.py SOURCE_DIR BUILD_DIR 'CTEST ARGS'"""
import json, os, shlex, subprocess, sys

src, build, select = sys.argv[1], os.path.realpath(sys.argv[2]), sys.argv[3]
derived = subprocess.run([os.path.join(src, "scripts/test-targets.sh"), build, select],
                         check=True, capture_output=True, text=True).stdout.split()
listing = json.loads(subprocess.run(["ctest", "--show-only=json-v1", *shlex.split(select)], cwd=build,
                                    check=True, capture_output=True, text=True).stdout)
tests = listing.get("tests", [])
if not tests:
    sys.exit(f"no tests selected by ctest {select}: nothing to check (is the CUDA backend built?)")
missing = []
for t in tests:
    prog = os.path.realpath(t["command"][0]) if t.get("command") else None
    if prog and prog.startswith(build + os.sep):
        name = os.path.basename(prog)
        if name != "tokenloop" and name not in derived:
            missing.append(f"{t['name']} runs {name}")
print(f"{len(tests)} tests selected by ctest {select}; programs derived: {' '.join(derived)}")
if missing:
    sys.exit("not built for them: " + "; ".join(missing))
print("every program they run is derived")
