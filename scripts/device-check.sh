#!/usr/bin/env bash
# The CUDA backend's check on a lent GPU machine (an H200: no network, probably none of the
# -dev packages), within one overall deadline, the most important step first:
#   1. configure + build the program and the gpu tests (the carried .debs of
#      scripts/device-debs when pkg-config cannot find the system's libraries),
#   2. the headline: the device's read bandwidth (gpu_dump --bandwidth), then
#      `tokenloop bench --synthetic llama-3.1-8b --device cuda` (30-token prompt, 64 new):
#      TTFT, TPOT, floor = bytes per step / read bandwidth, TPOT / floor (goal <= 1.10),
#   3. ctest -L gpu (with the Q8_0/Q4_0 kernels' tests, which have never run on a device),
#      then the same 8B bench with --dtype q4_0: bytes per step, TPOT, TPOT / floor,
#   4. compute-sanitizer memcheck on a small shape (bench --synthetic tiny: prefill through
#      cuBLAS, decode graph capture and replay, fused launches, top-k), then on
#      `test_cuda_engine quant` (every Q8_0/Q4_0 kernel, prefill and the decode graph),
#   5. transformers' generate() on the same 8B shape with random bf16 weights, eager and
#      compiled (torch.compile, static cache), timed the same way, when torch is there.
# Every step has its own timeout, cut to what is left of the budget, and is skipped with a
# reason when its tool (a device, compute-sanitizer, torch) is missing. The summary is
# printed by bash and Python's standard library alone and written to $OUT/device-summary.txt
# beside the full log $OUT/device-check.log ($OUT if set, else /tmp/tokenloop-device-check).
#   scripts/device-check.sh [BUILD_DIR]      TL_CHECK_BUDGET_S=480 (the overall deadline),
#                                            TL_CHECK_DEPS=carried (the .debs even if not needed),
#                                            TL_CHECK_CMAKE_ARGS="-DTL_CUDA=OFF" (more cmake options)
# Exit status: 0 unless a step that ran failed (the build, the bench, a gpu test, memcheck);
# skipped steps and an unmet goal are reported, not failures. docs/device-check.md says what
# each step shows.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/tokenloop-device-check}
mkdir -p "$out"
log=$out/device-check.log
summary=$out/device-summary.txt
build=${1:-${TMPDIR:-/tmp}/tokenloop-device-build}
budget=${TL_CHECK_BUDGET_S:-480}
t_start=$(date +%s)
deadline=$((t_start + budget))
reserve=15          # kept for the summary
: >"$log"
exec 3>&1 4>&2
exec > >(tee -a "$log") 2>&1

left() { echo $((deadline - $(date +%s) - reserve)); }
say() { printf '\n== %s (t+%ds, %ds left)\n' "$*" $(($(date +%s) - t_start)) "$(left)"; }
# the timeout a step gets: its own cap, cut to what is left
cap() { local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
declare -a steps=()
record() { steps+=("$1|$2|$3"); printf -- '-- %s: %s%s\n' "$1" "$2" "${3:+ ($3)}"; }
status=0
fail() { record "$1" FAILED "$2"; status=1; }
# run NAME CAP CMD...: the command under its timeout; 0 ok, else the status (124: timed out)
run_timed() {
    local t; t=$(cap "$1")
    shift
    if [ "$t" -lt 5 ]; then return 125; fi
    timeout --kill-after=10 "$t" "$@"
}
have() { command -v "$1" >/dev/null 2>&1; }
py=""
for c in python3 /usr/bin/python3 python; do have "$c" && { py=$(command -v "$c"); break; }; done

say "machine"
date -u +"%Y-%m-%d %H:%M UTC"
uname -srm
nvidia-smi --query-gpu=name,memory.total,clocks.max.memory,driver_version,compute_cap --format=csv,noheader 2>/dev/null || echo "nvidia-smi: not available"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$nvcc" ] && "$nvcc" --version | tail -1 || { echo "nvcc: not found"; nvcc=""; }
cmake --version 2>/dev/null | head -1 || echo "cmake: not found"
echo "python: ${py:-none}; budget ${budget}s; build $build; output $out"

# ---- 1. configure + build --------------------------------------------------------------
say "1. configure + build"
cm_args=(-DCMAKE_BUILD_TYPE=Release)
# machine code for this device alone (a third of nvcc's time); the default set without one
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
case "$cc" in [0-9][0-9]|[0-9][0-9][0-9]) cm_args+=(-DTL_CUDA_ARCHS="${cc}-real") ;; esac
[ -n "$nvcc" ] && cm_args+=(-DCMAKE_CUDA_COMPILER="$nvcc")
# TL_CHECK_CMAKE_ARGS: more options (the rehearsal without CUDA: -DTL_CUDA=OFF)
read -r -a extra <<<"${TL_CHECK_CMAKE_ARGS:-}"
cm_args+=("${extra[@]}")
deps="system (pkg-config)"
# TL_CHECK_DEPS=carried: the carried packages even where pkg-config finds the system's (rehearsal)
if [ "${TL_CHECK_DEPS:-}" = carried ] ||
   ! { have pkg-config && pkg-config --exists libcjson libpcre2-8 libutf8proc ncursesw; }; then
    prefix=$build/deps
    if "$root/scripts/device-debs.sh" unpack "$prefix" >/dev/null; then
        deps="carried .debs (scripts/device-debs) in $prefix"
        cm_args+=(-DTL_DEPS_PREFIX="$prefix")
    else
        deps="none: unpacking scripts/device-debs failed"
    fi
fi
echo "dependencies: $deps"
targets=(tokenloop)
gpu_select="-L gpu|cuda"   # step 3's tests
built=0
if ! have cmake; then
    fail build "no cmake"
elif ! run_timed 120 cmake -S "$root" -B "$build" "${cm_args[@]}" >"$build.configure.log" 2>&1; then
    cat "$build.configure.log"
    fail build "configure failed (log above)"
else
    grep -E "CUDA backend|not found|Warning" "$build.configure.log" || true
    have_cuda=$(grep -c "CUDA backend ON" "$build.configure.log")
    # the programs step 3's selection runs, derived from the tests themselves (a list written
    # here drifted once: cuda_blas's program was missing, and ctest said "Not Run"), and
    # gpu_dump, which steps 2 and 4 run by hand
    if [ "$have_cuda" -gt 0 ]; then
        mapfile -t sel < <("$root/scripts/test-targets.sh" "$build" "$gpu_select")
        targets+=("${sel[@]}" gpu_dump)
        echo "programs for ctest $gpu_select: ${sel[*]}"
    fi
    jobs=$(nproc 2>/dev/null || echo 4)
    t_b=$(date +%s)
    run_timed 300 cmake --build "$build" -j"$jobs" --target "${targets[@]}" 2>&1 | grep -Ev '^\[|^-- |^Consolidate' 
    rc=${PIPESTATUS[0]}
    if [ "$rc" -ne 0 ] || [ ! -x "$build/cli/tokenloop" ]; then
        fail build "cmake --build exit $rc"
    else
        built=1
        record build ok "$(($(date +%s) - t_b)) s; CUDA backend $([ "$have_cuda" -gt 0 ] && echo ON || echo OFF); deps: $deps"
        "$build/cli/tokenloop" --version
    fi
fi
dump=$build/tests/gpu/gpu_dump
device=0
if [ "$built" = 1 ] && [ -x "$dump" ] && "$dump" --probe >/dev/null 2>&1; then device=1; fi
no_device="no usable CUDA device$([ "$built" = 1 ] || echo ': nothing built')$([ -x "$dump" ] || [ "$built" = 0 ] || echo ': no CUDA backend in this build')"

# ---- 2. the headline: read bandwidth, 8B bench ------------------------------------------
say "2. headline: read bandwidth + tokenloop bench --synthetic llama-3.1-8b --device cuda"
bw_json=$out/bandwidth.json
bench_json=$out/bench-8b.json
rm -f "$bw_json" "$bench_json"
if [ "$device" = 0 ]; then
    record bandwidth skipped "$no_device"
    record bench-8b skipped "$no_device"
else
    run_timed 60 "$dump" --bandwidth 1.0 >"$bw_json"
    rc=$?
    cat "$bw_json"
    [ "$rc" -eq 0 ] && record bandwidth ok "" || fail bandwidth "gpu_dump --bandwidth exit $rc"
    TL_CUDA_STATS=1 run_timed 180 "$build/cli/tokenloop" bench --synthetic llama-3.1-8b --device cuda \
        --prompt-tokens 30 --new-tokens 64 --json >"$bench_json"
    rc=$?
    cat "$bench_json"
    case $rc in
    0) record bench-8b ok "" ;;
    124|137) fail bench-8b "timed out" ;;
    *) fail bench-8b "exit $rc: a device fault or an error (above)"; rm -f "$bench_json" ;;
    esac
fi

# ---- 3. the gpu tests --------------------------------------------------------------------
say "3. ctest -L gpu"
if [ "$built" = 0 ]; then
    record gpu-tests skipped "nothing built"
elif [ "$device" = 0 ]; then
    (cd "$build" && run_timed 60 ctest $gpu_select --output-on-failure) >"$build.ctest.log" 2>&1
    rc=$?
    tail -15 "$build.ctest.log"
    if grep -q "No tests were found" "$build.ctest.log"; then
        record gpu-tests skipped "$no_device (this build has no gpu tests)"
    elif [ "$rc" -ne 0 ]; then
        fail gpu-tests "ctest exit $rc without a device (cuda_accepts needs none; failures above)"
    else
        record gpu-tests skipped "$no_device (every gpu test skipped with 77; cuda_accepts and cuda_qkernels_host passed)"
    fi
else
    (cd "$build" && run_timed 240 ctest $gpu_select -j4 --timeout 200 --output-on-failure)
    rc=$?
    case $rc in
    0) record gpu-tests ok "" ;;
    124|137) fail gpu-tests "timed out" ;;
    *) fail gpu-tests "ctest exit $rc (failures above)" ;;
    esac
fi

# ---- 3b. the 8B bench on Q4_0 weights (after the tests: its kernels are new) ---------------
say "3b. tokenloop bench --synthetic llama-3.1-8b --device cuda --dtype q4_0"
q4_json=$out/bench-8b-q4_0.json
rm -f "$q4_json"
if [ "$device" = 0 ]; then
    record bench-8b-q4_0 skipped "$no_device"
else
    TL_CUDA_STATS=1 run_timed 150 "$build/cli/tokenloop" bench --synthetic llama-3.1-8b --device cuda --dtype q4_0 \
        --prompt-tokens 30 --new-tokens 64 --json >"$q4_json"
    rc=$?
    cat "$q4_json"
    case $rc in
    0) record bench-8b-q4_0 ok "" ;;
    124|137) fail bench-8b-q4_0 "timed out" ;;
    125) record bench-8b-q4_0 skipped "no time left"; rm -f "$q4_json" ;;
    *) fail bench-8b-q4_0 "exit $rc: a device fault or an error (above)"; rm -f "$q4_json" ;;
    esac
fi

# ---- 4. compute-sanitizer memcheck, small shape -----------------------------------------
say "4. compute-sanitizer memcheck: bench --synthetic tiny (prefill 20 tokens, 8 decode steps)"
san=""
for c in "$(command -v compute-sanitizer || true)" "${nvcc:+$(dirname "$nvcc")/compute-sanitizer}" \
         /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
    if [ -n "$c" ] && [ -x "$c" ]; then san=$c; break; fi
done
if [ "$device" = 0 ]; then
    record memcheck skipped "$no_device"
elif [ -z "$san" ]; then
    record memcheck skipped "compute-sanitizer not found"
else
    run_timed 120 "$san" --tool memcheck --leak-check full --error-exitcode 3 \
        "$build/cli/tokenloop" bench --synthetic tiny --device cuda --prompt-tokens 20 --new-tokens 8 \
        >"$out/memcheck.log" 2>&1
    rc=$?
    tail -25 "$out/memcheck.log"
    case $rc in
    0) record memcheck ok "$(grep -m1 'ERROR SUMMARY' "$out/memcheck.log" | sed 's/^=* *//')" ;;
    124|137) fail memcheck "timed out" ;;
    *) fail memcheck "exit $rc: $(grep -m1 'ERROR SUMMARY' "$out/memcheck.log" | sed 's/^=* *//')" ;;
    esac
    # the Q8_0/Q4_0 kernels: embed, x's quantization, the products at 1 and 8 tokens, the graph
    run_timed 120 "$san" --tool memcheck --leak-check full --error-exitcode 3 \
        "$build/tests/gpu/test_cuda_engine" quant >"$out/memcheck-quant.log" 2>&1
    rc=$?
    tail -8 "$out/memcheck-quant.log"
    case $rc in
    0) record memcheck-q ok "test_cuda_engine quant: $(grep -m1 'ERROR SUMMARY' "$out/memcheck-quant.log" | sed 's/^=* *//')" ;;
    124|137) fail memcheck-q "timed out" ;;
    125) record memcheck-q skipped "no time left" ;;
    *) fail memcheck-q "exit $rc: $(grep -m1 'ERROR SUMMARY' "$out/memcheck-quant.log" | sed 's/^=* *//')" ;;
    esac
fi

# ---- 5. transformers generate(), eager and compiled --------------------------------------
say "5. transformers generate() on the 8B shape: eager, then torch.compile"
hf_json=$out/transformers.json
rm -f "$hf_json"
if [ -z "$py" ] || ! "$py" -c "import torch, transformers; assert torch.cuda.is_available()" >/dev/null 2>&1; then
    if [ -n "$py" ] && "$py" -c "import torch, transformers" >/dev/null 2>&1; then
        record transformers skipped "torch sees no CUDA device"
    else
        record transformers skipped "no python with torch and transformers"
    fi
else
    PYTHONUNBUFFERED=1 run_timed 300 "$py" "$root/scripts/device-check-hf.py" "$hf_json"
    rc=$?
    case $rc in
    0) record transformers ok "" ;;
    124|137) record transformers "timed out" "what finished is in the summary" ;;
    *) fail transformers "exit $rc" ;;
    esac
fi

# ---- summary -----------------------------------------------------------------------------
say "summary"
{
    gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
    echo "tokenloop device check, $(date -u +'%Y-%m-%d %H:%M UTC'), ${gpu:-no GPU (nvidia-smi absent or failed)}, $(uname -n)"
    echo "wall time $(($(date +%s) - t_start)) s of a ${budget} s budget; exit status $status"
    for s in "${steps[@]}"; do
        IFS='|' read -r n st d <<<"$s"
        printf '  %-13s %-8s %s\n' "$n" "$st" "$d"
    done
    if [ -n "$py" ]; then
        "$py" - "$bw_json" "$bench_json" "$hf_json" "$q4_json" <<'PY'
# standard library only: the numbers of the headline and transformers, and the gates
import json, sys

def load(p):
    try:
        with open(p) as f:
            return json.load(f)
    except Exception:
        return None

bw, tl, hf, q4 = (load(p) for p in sys.argv[1:5])
def fmt(v, f):
    return format(v, f) if isinstance(v, (int, float)) else "-"
print()
print("llama-3.1-8b shape, random bf16 weights, 30-token prompt, 64 new tokens (positions 30..94)")
read = bw.get("read_gbps") if bw else None
copy = bw.get("copy_gbps") if bw else None
print(f"  read bandwidth      {fmt(read, '.0f')} GB/s (gpu_dump --bandwidth; copy {fmt(copy, '.0f')} GB/s)")
def bench(r, bf16=None):
    """A tokenloop bench run's lines against the read bandwidth; bf16: for a run of another
    dtype, the bf16 run, whose bytes per step its own are compared with."""
    if not r:
        print("  tokenloop bench     - (not run or failed: see the steps above)")
        return
    sb = r.get("step_bytes")
    floor = sb / (read * 1e9) * 1e3 if sb and read else None
    med = r.get("tpot_ms_median")
    if bf16 is not None:
        print(f"  dtype               {r.get('dtype', '-')}")
    print(f"  TTFT (30 tokens)    {fmt(r.get('ttft_ms'), '.2f')} ms")
    print(f"  TPOT median / p90   {fmt(med, '.3f')} / {fmt(r.get('tpot_ms_p90'), '.3f')} ms"
          f" (best {fmt(r.get('tpot_ms_min'), '.3f')})")
    sb16 = bf16.get("step_bytes") if bf16 else None
    vs = f" ({fmt(sb / sb16 if sb and sb16 else None, '.3f')} x bf16's)" if bf16 is not None else ""
    print(f"  bytes per step      {fmt(sb / 1e9 if sb else None, '.3f')} GB{vs}")
    print(f"  floor               {fmt(floor, '.3f')} ms (bytes per step / read bandwidth)")
    ratio = med / floor if med and floor else None
    own = "bench's own" if bf16 is None else "tpot_over_floor, the bench's own"
    print(f"  TPOT / floor        {fmt(ratio, '.3f')}   ({own}, by its copy probe: "
          f"{fmt(r.get('tpot_over_floor'), '.3f')})")
    if ratio and bf16 is None:
        print(f"  GOAL TPOT <= 1.10 x floor: {'met' if ratio <= 1.10 else 'not met'} ({ratio:.3f})")


bench(tl)
print("the same with --dtype q4_0 (Q4_0 blocks: first run of these kernels; simple, not tuned)")
bench(q4, tl or {})
if hf:
    for mode in ("eager", "compiled"):
        r = hf.get(mode)
        if not r:
            print(f"  transformers {mode:9} - ({hf.get(mode + '_error', 'not run')})")
            continue
        print(f"  transformers {mode:9} TTFT {fmt(r.get('ttft_ms'), '.2f')} ms, TPOT median "
              f"{fmt(r.get('tpot_ms_median'), '.3f')} ms, p90 {fmt(r.get('tpot_ms_p90'), '.3f')} ms")
        if tl and tl.get("tpot_ms_median") and r.get("tpot_ms_median"):
            x = r["tpot_ms_median"] / tl["tpot_ms_median"]
            gate = f"; >= 3x: {'met' if x >= 3 else 'not met'}" if mode == "eager" else ""
            print(f"    tokenloop is {x:.2f}x faster than transformers {mode}{gate}")
    if hf.get("torch_read_gbps"):
        print(f"  torch's read probe  {hf['torch_read_gbps']:.0f} GB/s (x.sum() of 4 GiB bf16), "
              f"torch {hf.get('torch')}, transformers {hf.get('transformers')}")
else:
    print("  transformers        - (not run: see the steps above)")
PY
    else
        echo "  (no python3: the numbers are in $bench_json and $bw_json)"
    fi
    echo "full log: $log"
} >"$summary" 2>&1
cat "$summary"
sleep 1
exec 1>&3 2>&4
exit $status
