#!/usr/bin/env bash
# Runs one libFuzzer harness: run.sh BINARY SECONDS WORKDIR SEEDDIR...
# WORKDIR/corpus grows with the inputs that found new coverage (kept between runs), crashers go
# to WORKDIR/artifacts, the log to WORKDIR/last.log. Prints one summary line; fails on a finding
# (a crash, leak, sanitizer report, timeout or out-of-memory). A slow unit (over 10 s, which a
# loaded machine can turn a bounded input into) is listed, not failed on.
set -uo pipefail
bin=$1 secs=$2 work=$3; shift 3
mkdir -p "$work/corpus" "$work/artifacts"
name=$(basename "$bin")
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  "$bin" -max_total_time="$secs" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/" "$work/corpus" "$@" >"$work/last.log" 2>&1
rc=$?
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/last.log" | tail -1)
cov=$(grep -Eo 'cov: [0-9]+' "$work/last.log" | tail -1 | cut -d' ' -f2)
ft=$(grep -Eo 'ft: [0-9]+' "$work/last.log" | tail -1 | cut -d' ' -f2)
found=$(find "$work/artifacts" -type f ! -name 'slow-unit-*' | wc -l)
slow=$(find "$work/artifacts" -type f -name 'slow-unit-*' | wc -l)
echo "$name: ${secs} s, ${runs:-?} runs, coverage ${cov:-?} edges, ${ft:-?} features, corpus $(ls "$work/corpus" | wc -l) files, findings $found, slow units $slow (rc $rc)"
if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
  tail -n 60 "$work/last.log"
  ls "$work/artifacts"
  exit 1
fi
[ "$slow" -eq 0 ] || echo "$name: slow inputs (kept): $(ls "$work/artifacts" | grep slow-unit | tr '\n' ' ')"
