#!/usr/bin/env bash
# The README's test command: the threaded parts under ThreadSanitizer, the suite under
# AddressSanitizer + UndefinedBehaviorSanitizer, each fuzz harness for a short while, then a Release
# build (warnings are errors) where the kernel, engine, quantization and lesson tests run with the
# AVX2 and the portable kernels forced, and last every test. ctest's summary of the whole suite is
# the last thing printed.
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

echo "== release build"
"$root/scripts/build.sh" "$root/build" -DTL_WERROR=ON
cd "$root/build"
# Most laptops have AVX2 and no AVX-512, some only the portable kernels: the kernel, engine,
# quantization and lesson tests again with each of those sets forced, whatever this CPU has (less
# the slow ones: lesson_check_loaded forces AVX2 itself).
for isa in avx2 generic; do
  echo "== release build: kernel, engine, quant and lesson tests with TL_CPU_ISA=$isa"
  TL_CPU_ISA=$isa ctest -R '^(kernels_|engine_|quant_|lesson_)' -LE slow --output-on-failure -j"$jobs"
done
echo "== release build: the whole suite"
ctest --output-on-failure -j"$jobs"
