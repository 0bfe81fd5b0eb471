#!/usr/bin/env python3
"""generate --synthetic (issue 38): random weights of a published shape, labelled as such, with
the floor read beside the steps. The tiny shape (3 MB) runs here; the cache figures are set
against this machine's sysfs, read here independently of tokenloop.
argv[1]: tokenloop."""
import glob, json, os, subprocess, sys

fails = 0


def check(cond, msg):
    global fails
    if not cond:
        fails += 1
        print("FAIL", msg, file=sys.stderr)


def llc_bytes():
    """The largest data or unified cache sysfs lists for cpu0 (0 when none)."""
    best = 0
    for d in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*"):
        try:
            kind = open(os.path.join(d, "type")).read().strip()
            size = open(os.path.join(d, "size")).read().strip()
        except OSError:
            continue
        if kind == "Instruction":
            continue
        mult = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}.get(size[-1], 1)
        best = max(best, int(size.rstrip("KMG")) * mult)
    return best


def main():
    exe = sys.argv[1]
    r = subprocess.run([exe, "generate", "--synthetic", "tiny", "--ids", "1,2,3", "--greedy",
                        "--max-new-tokens", "8", "--json"], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "generate --synthetic tiny: %s" % r.stderr.strip())
    if r.returncode != 0:
        return 1
    d = json.loads(r.stdout)
    check(d["synthetic"] == "tiny", "synthetic: %r" % d["synthetic"])
    check(len(d["generated_ids"]) == 8, "8 tokens: %r" % d["generated_ids"])
    # 7 decode steps: reads after the 1st, 4th and 7th
    check(d["floor_reads"] == 3, "floor_reads %r, expected 3" % d["floor_reads"])
    check(d["floor_lo_ms"] <= d["floor_ms"] <= d["floor_hi_ms"], "floor outside its spread: %r" % d)
    check(abs(d["floor_ms"] - d["step_bytes"] / d["bandwidth_gbs"] / 1e6) < 1e-6 * d["floor_ms"],
          "floor is not step_bytes / bandwidth")
    if d["below_floor"]:
        # the cause: the ratio it was decided from (the pairs' median) under the reads' spread
        check(d["tpot_over_floor"] is None and d["floor_ratio_measured"] is not None
              and d["floor_ratio_measured"] < d["floor_lo_ms"] / d["floor_ms"], "below_floor without cause: %r" % d)
    else:   # each read paired with the decode pass before it, as bench pairs them
        check(d["floor_pairs"] == 3 and d["tpot_over_floor"] is not None and d["tpot_over_floor"] > 0,
              "tpot_over_floor %r from %r pairs" % (d["tpot_over_floor"], d["floor_pairs"]))
    llc = llc_bytes()
    check((d["llc_bytes"] or 0) == llc, "llc_bytes %r, sysfs says %d" % (d["llc_bytes"], llc))
    want = "no" if not llc else "fit" if d["weight_bytes"] <= llc else "near" if d["weight_bytes"] <= 2 * llc else "no"
    check(d["weights_in_cache"] == want, "weights_in_cache %r, expected %r" % (d["weights_in_cache"], want))
    # the bundled model is not random
    r = subprocess.run([exe, "generate", "--ids", "128000,9906", "--greedy", "--max-new-tokens", "2", "--json"],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0 and json.loads(r.stdout)["synthetic"] is None, "bundled: synthetic is not null")
    print("generate_synthetic: %d failed" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
