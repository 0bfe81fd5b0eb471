#!/usr/bin/env bash
# The README's test command. Every test runs once in an optimized build: the threaded parts under
# ThreadSanitizer, the suite under AddressSanitizer + UndefinedBehaviorSanitizer, each fuzz harness
# for a short while; then a Release build (warnings are errors) runs the kernel, engine, quantization
# and lesson tests with the AVX2 and the portable kernels forced, and the tests too slow for the
# sanitizers (label slow; gpu ones skip without a GPU), while the ARM64 kernels run under qemu and
# every source compiles for macOS beside them. The last lines printed are each phase's summary.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh"
"$root/scripts/test-arm64.sh" --deps   # apt-get now: the arm64 run goes beside the release tests
jobs=$(nproc)
# each phase's heading says when it started, in seconds since this script did: the CI's budget
# (20 minutes on 2 cores) is read off these
phase() { echo "== [$SECONDS s] $*"; }
log=$root/build-logs   # each phase's ctest output, for the summary at the end
mkdir -p "$log"

phase "tsan build: threaded code (label tsan; only the programs those tests run are built)"
"$root/scripts/build.sh" --tests "-L tsan" "$root/build-tsan" -DTL_SANITIZE=thread -DTL_WERROR=ON
(cd "$root/build-tsan" && ctest -L tsan --output-on-failure -j"$jobs") | tee "$log/tsan.log"

phase "asan+ubsan build"
"$root/scripts/build.sh" "$root/build-asan" -DTL_SANITIZE=address -DTL_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
(cd "$root/build-asan" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
   ctest -LE 'slow|gpu' --output-on-failure -j"$jobs") | tee "$log/asan.log"

phase "fuzz smoke: each libFuzzer harness for 6 s (clang, ASan+UBSan; label fuzz; only the harnesses built)"
CC=clang cmake -S "$root" -B "$root/build-fuzz" -DTL_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTL_FUZZ_SECONDS=6 >/dev/null
mapfile -t harnesses < <("$root/scripts/test-targets.sh" "$root/build-fuzz" "-L fuzz")
cmake --build "$root/build-fuzz" -j"$jobs" --target "${harnesses[@]}" 2>&1 | grep -v '^\[' || true
(cd "$root/build-fuzz" && ctest -L fuzz --output-on-failure -j"$jobs") | tee "$log/fuzz.log"

phase "release build"
"$root/scripts/build.sh" "$root/build" -DTL_WERROR=ON
cd "$root/build"
# Most laptops have AVX2 and no AVX-512, some only the portable kernels: the kernel, engine,
# quantization and lesson tests again with each of those sets forced, whatever this CPU has (less
# the slow ones: lesson_check_loaded forces AVX2 itself).
for isa in avx2 generic; do
  phase "release build: kernel, engine, quant and lesson tests with TL_CPU_ISA=$isa"
  TL_CPU_ISA=$isa ctest -R '^(kernels_|engine_|quant_|lesson_)' -LE slow --output-on-failure -j"$jobs" |
    tee "$log/$isa.log"
done
# The slow tests are mostly TUI walks, one at a time (tmux_tui), which leave a core idle much of
# the time: the ARM64 run under qemu and the macOS compile check go beside them, each to its log.
cd "$root"
phase "arm64 (in the background): the kernel, engine, tokenizer and template tests cross-built, under qemu-aarch64"
bash "$root/scripts/test-arm64.sh" --ci "$root/build-arm64" >"$log/arm64.log" 2>&1 &
arm_pid=$!
phase "macOS (in the background): every source compiled for aarch64-macos and x86_64-macos (zig cc), warnings as errors"
bash "$root/scripts/check-macos.sh" "$root/build-check-macos" >"$log/macos.log" 2>&1 &
mac_pid=$!
trap 'kill $arm_pid $mac_pid 2>/dev/null || true' EXIT
phase "release build: the tests the sanitizer builds leave out (label slow; gpu)"
(cd "$root/build" && ctest -L 'slow|gpu' --output-on-failure -j"$jobs") | tee "$log/release.log"
failed=0
for job in "arm64 $arm_pid" "macos $mac_pid"; do
  set -- $job
  wait "$2" || failed=1
  echo "== $1 (its log, build-logs/$1.log)"
  cat "$log/$1.log"
done
trap - EXIT
((failed == 0)) || { echo "test.sh: the arm64 or macOS check failed (above)" >&2; exit 1; }
summary() { printf '%-40s %s\n' "$1" "$(grep -E '^[0-9]+% tests passed' "$log/$2.log" | tail -1)"; }
phase "summary"
summary "tsan (label tsan)" tsan
summary "asan+ubsan (all but slow, gpu)" asan
summary "fuzz smoke" fuzz
summary "release, TL_CPU_ISA=avx2" avx2
summary "release, TL_CPU_ISA=generic" generic
summary "release (slow, gpu)" release
printf '%-40s %s\n' "arm64 under qemu" "$(grep -E '^test-arm64: passed' "$log/arm64.log" | tail -1)"
printf '%-40s %s\n' "macOS compile check" "$(grep -E '^check-macos: ' "$log/macos.log" | tail -1)"
