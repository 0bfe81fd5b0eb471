#!/usr/bin/env bash
# The README's test command: every test, in a Release build (warnings are errors), then again
# under AddressSanitizer + UndefinedBehaviorSanitizer, then the threaded parts under
# ThreadSanitizer, then each fuzz harness for a short while. ctest's summary is the last thing printed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh"
jobs=$(nproc)

echo "== tsan build: threaded code (label tsan; only the programs those tests run are built)"
"$root/scripts/build.sh" --tests "-L tsan" "$root/build-tsan" -DTL_SANITIZE=thread -DTL_WERROR=ON
(cd "$root/build-tsan" && ctest -L tsan --output-on-failure -j"$jobs")

echo "== asan+ubsan build"
"$root/scripts/build.sh" "$root/build-asan" -DTL_SANITIZE=address -DTL_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
(cd "$root/build-asan" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
   ctest -LE 'slow|gpu' --output-on-failure -j"$jobs")

echo "== fuzz smoke: each libFuzzer harness for 6 s (clang, ASan+UBSan; label fuzz)"
CC=clang cmake -S "$root" -B "$root/build-fuzz" -DTL_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTL_FUZZ_SECONDS=6 >/dev/null
cmake --build "$root/build-fuzz" -j"$jobs" 2>&1 | grep -v '^\[' || true
(cd "$root/build-fuzz" && ctest -L fuzz --output-on-failure -j"$jobs")

echo "== release build: the whole suite"
"$root/scripts/build.sh" "$root/build" -DTL_WERROR=ON
cd "$root/build" && ctest --output-on-failure -j"$jobs"
