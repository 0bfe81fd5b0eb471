"""The sampler against a float64 NumPy implementation of transformers' pipeline
(TemperatureLogitsWarper -> TopKLogitsWarper -> TopPLogitsWarper -> softmax -> multinomial):
the probabilities after each stage, which tokens each stage cuts, the number kept, and the
frequencies of many draws (a chi-square test); the same seed gives the same tokens. Every
case runs on each vector path of the sampler, one path a run (so each is its own ctest test with
its own time limit): `best` (the kernels the CPU picks, TL_CPU_ISA unset) with the
large-vocabulary draws in full, `avx2` and `generic` forced with fewer draws there. A forced path
that would be the best one anyway (avx2 on a CPU without AVX-512) is skipped: `best` ran it. The sampler computes exp in float (sums in double): its
probabilities are within ~1e-7 relative of these, well inside the tolerances below, and no
case here has a top-p cumulative sum that close to its limit, so the cuts match exactly.

    check_sampler.py SAMPLER_DUMP WORK_DIR [best|avx2|generic]
"""
import json
import math
import os
import subprocess
import sys

import numpy as np

failures = 0
checks = 0


def check(cond, msg):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print("FAIL:", msg)


def softmax(x):
    x = np.asarray(x, dtype=np.float64)
    m = np.max(x[np.isfinite(x)])
    e = np.where(np.isfinite(x), np.exp(x - m), 0.0)
    return e / e.sum()


def pipeline(logits, greedy, t, k, p):
    """-> (probs after temperature, final probs, cut_top_k mask, cut_top_p mask)"""
    x = logits.astype(np.float64)
    V = len(x)
    cut_k = np.zeros(V, bool)
    cut_p = np.zeros(V, bool)
    if greedy:
        final = np.zeros(V)
        final[int(np.argmax(logits))] = 1.0
        return softmax(x), final, cut_k, cut_p
    if t != 1.0:
        x = x / t
    ptemp = softmax(x)
    if k > 0 and k < V:
        kth = np.sort(x)[::-1][k - 1]
        cut_k = x < kth                      # ties with the k-th value stay
        x = np.where(cut_k, -np.inf, x)
    if p < 1.0:
        order = np.argsort(x, kind="stable")  # ascending
        probs = softmax(x)[order]
        cum = np.cumsum(probs)
        remove = cum <= 1 - p
        remove[-1] = False                   # the most likely token always stays
        rm = np.zeros(V, bool)
        rm[order] = remove
        cut_p = rm & ~cut_k
        x = np.where(rm, -np.inf, x)
    return ptemp, softmax(x), cut_k, cut_p


ISA = None    # TL_CPU_ISA for the runs; None: the CPU's best
FULL = True   # the large-vocabulary draws in full (the best path's run)


REPORT_MODEL, REPORT_TEMP = 1, 2   # sampler.h's TL_REPORT_*
REPORT_ALL = REPORT_MODEL | REPORT_TEMP


def run(dump, work, name, logits, greedy, t, k, p, seed, draws, top_n, fields=REPORT_ALL):
    path = os.path.join(work, name + ".f32")
    logits.astype("<f4").tofile(path)
    env = dict(os.environ)
    if ISA:
        env["TL_CPU_ISA"] = ISA
    out = subprocess.run([dump, path, str(len(logits)), str(int(greedy)), repr(t), str(k), repr(p), str(seed),
                          str(draws), str(top_n), str(fields)], check=True, capture_output=True, text=True,
                         env=env).stdout
    return json.loads(out)


def compare(dump, work, name, logits, greedy=False, t=1.0, k=0, p=1.0, seed=7, draws=0):
    V = len(logits)
    if not FULL and V > 1000:
        draws = min(draws, 300)   # the other paths: every case, fewer draws at 128,256 (time)
    top_n = min(V, 64)
    logits = logits.astype(np.float32)
    r = run(dump, work, name, logits, greedy, t, k, p, seed, draws, top_n)
    ptemp, final, cut_k, cut_p = pipeline(logits, greedy, t, k, p)
    raw = softmax(logits.astype(np.float64))
    order = np.argsort(-logits.astype(np.float64), kind="stable")[:top_n]
    ids = [c["id"] for c in r["cand"]]
    check(ids == [int(i) for i in order], f"{name}: candidate order {ids[:8]} vs {list(order[:8])}")
    for c in r["cand"]:
        i = c["id"]
        check(abs(c["prob"] - raw[i]) <= 1e-6 + 1e-5 * raw[i], f"{name}: prob of {i}: {c['prob']} vs {raw[i]}")
        if not greedy:
            check(abs(c["prob_temp"] - ptemp[i]) <= 1e-6 + 1e-5 * ptemp[i],
                  f"{name}: prob_temp of {i}: {c['prob_temp']} vs {ptemp[i]}")
            check(bool(c["cut_top_k"]) == bool(cut_k[i]), f"{name}: cut_top_k of {i}")
            check(bool(c["cut_top_p"]) == bool(cut_p[i]), f"{name}: cut_top_p of {i}")
            check(abs(c["prob_final"] - final[i]) <= 1e-6 + 1e-5 * final[i],
                  f"{name}: prob_final of {i}: {c['prob_final']} vs {final[i]}")
    kept = int(np.count_nonzero(final > 0)) if not greedy else 1
    check(r["kept"] == kept, f"{name}: kept {r['kept']} vs {kept}")
    ent = None
    if not greedy:
        ent = -np.sum(ptemp[ptemp > 0] * np.log(ptemp[ptemp > 0]))
        check(abs(r["entropy"] - ent) < 1e-6, f"{name}: entropy {r['entropy']} vs {ent}")
    x64 = logits.astype(np.float64)
    log_z = np.max(x64) + np.log(np.sum(np.exp(x64 - np.max(x64))))
    check(abs(r["log_z"] - log_z) <= 1e-6 * max(1.0, abs(log_z)), f"{name}: log_z {r['log_z']} vs {log_z}")
    outside = 1 - sum(ptemp[c["id"]] for c in r["cand"])
    if not greedy:
        check(abs(r["mass_outside"] - outside) <= 1e-6, f"{name}: mass_outside {r['mass_outside']} vs {outside}")
    # Only the figures asked for are computed (each is a pass over the vocabulary); they equal
    # the reference, the rest are null, and the choice is the same whatever is asked for. The
    # other paths at 128,256 tokens: none asked only (time; their passes differ from AVX-512's
    # only in vecsel.c, which the full reports above check).
    variants = (0, REPORT_MODEL, REPORT_TEMP) if FULL or V <= 1000 else (0,)
    for fields in variants:
        n = min(draws, 50)   # the first of the same seed's draws
        q = run(dump, work, name, logits, greedy, t, k, p, seed, n, top_n, fields)
        tag = f"{name} (fields {fields})"
        check(q["fields"] == fields, f"{tag}: fields {q['fields']}")
        check(q["kept"] == r["kept"], f"{tag}: kept {q['kept']} vs {r['kept']}")
        check(q["draws"] == r["draws"][:n], f"{tag}: other tokens than with every figure")
        model, temp = fields & REPORT_MODEL, fields & REPORT_TEMP
        check((q["log_z"] is None) == (not model), f"{tag}: log_z {q['log_z']}")
        if model:
            check(abs(q["log_z"] - log_z) <= 1e-6 * max(1.0, abs(log_z)), f"{tag}: log_z {q['log_z']} vs {log_z}")
        check((q["entropy"] is None) == (not temp), f"{tag}: entropy {q['entropy']}")
        check((q["mass_outside"] is None) == (not temp), f"{tag}: mass_outside {q['mass_outside']}")
        if temp and ent is not None:
            check(abs(q["entropy"] - ent) < 1e-6, f"{tag}: entropy {q['entropy']} vs {ent}")
            check(abs(q["mass_outside"] - outside) <= 1e-6, f"{tag}: mass_outside {q['mass_outside']} vs {outside}")
        for c, a in zip(q["cand"], r["cand"]):
            i = c["id"]
            check(i == a["id"], f"{tag}: candidate {i} vs {a['id']}")
            check((c["prob"] is None) == (not model), f"{tag}: prob of {i}: {c['prob']}")
            check((c["prob_temp"] is None) == (not temp), f"{tag}: prob_temp of {i}: {c['prob_temp']}")
            if model:
                check(abs(c["prob"] - raw[i]) <= 1e-6 + 1e-5 * raw[i], f"{tag}: prob of {i}: {c['prob']} vs {raw[i]}")
            if temp and not greedy:
                check(abs(c["prob_temp"] - ptemp[i]) <= 1e-6 + 1e-5 * ptemp[i],
                      f"{tag}: prob_temp of {i}: {c['prob_temp']} vs {ptemp[i]}")
            check(c["prob_final"] == a["prob_final"] and c["cut_top_k"] == a["cut_top_k"] and
                  c["cut_top_p"] == a["cut_top_p"], f"{tag}: prob_final or cuts of {i} differ")
    if draws:
        d = np.array(r["draws"])
        check(np.all(final[d] > 0), f"{name}: a draw picked a token that was cut")
        if greedy:
            check(np.all(d == np.argmax(logits)), f"{name}: greedy is the argmax")
        else:
            counts = np.bincount(d, minlength=V).astype(np.float64)
            expect = final * draws
            big = expect >= 5
            chi2 = np.sum((counts[big] - expect[big]) ** 2 / expect[big])
            rest = counts[~big].sum()
            erest = expect[~big].sum()
            dof = int(big.sum()) - 1 + (1 if erest >= 5 else 0)
            if erest >= 5:
                chi2 += (rest - erest) ** 2 / erest
            # Wilson-Hilferty: the 1 - 1e-6 quantile of chi-square(dof)
            z = 4.753
            crit = dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3 if dof > 0 else 0
            check(dof == 0 or chi2 < crit, f"{name}: chi2 {chi2:.1f} >= {crit:.1f} (dof {dof})")
            print(f"{name}: kept {kept}, chi2 {chi2:.1f} (dof {dof}, critical {crit:.1f})")
        again = run(dump, work, name, logits, greedy, t, k, p, seed, draws, top_n)["draws"]
        check(again == r["draws"], f"{name}: same seed, same tokens")
        other = run(dump, work, name, logits, greedy, t, k, p, seed + 1, draws, top_n)["draws"]
        if not greedy and kept > 1:
            check(other != r["draws"], f"{name}: another seed, other tokens")


def cases(dump, work):
    rng = np.random.default_rng(3)
    small = rng.standard_normal(40) * 0.8
    compare(dump, work, "plain", small, draws=20000)
    compare(dump, work, "temperature", small, t=0.6, draws=20000)
    compare(dump, work, "top_k", small, k=7, draws=20000)
    compare(dump, work, "top_p", small, p=0.9, draws=20000)
    compare(dump, work, "llama31_defaults", small, t=0.6, k=50, p=0.9, draws=20000)
    compare(dump, work, "all_three", small, t=1.3, k=12, p=0.75, draws=20000)
    compare(dump, work, "tight_top_p", small, t=0.7, p=0.3, draws=2000)
    compare(dump, work, "greedy", small, greedy=True, draws=50)
    # a top-k at or past the vocabulary's size cuts nothing: the tempered draw over every token
    compare(dump, work, "top_k_past_vocab", small, t=0.7, k=100, draws=20000)
    compare(dump, work, "top_k_vocab", small, t=0.7, k=40, draws=20000)
    ties = np.array([3.0, 1.0, 2.0, 2.0, 2.0, 0.5, -1.0, 2.0, 0.0, -3.0])
    compare(dump, work, "top_k_ties", ties, k=3, draws=5000)         # four tokens tie at the 3rd value
    peaked = np.array([10.0, 0.0, -1.0, -2.0, -5.0])
    compare(dump, work, "top_p_keeps_the_top", peaked, p=0.01, draws=100)
    big = rng.standard_normal(128256).astype(np.float32) * 3.0
    compare(dump, work, "llama_vocab", big, t=0.6, k=50, p=0.9, draws=3000)
    compare(dump, work, "llama_vocab_top_p_only", big, t=0.8, p=0.9, draws=0)
    # top-k past the 64 best, the sampler's threshold pass
    compare(dump, work, "llama_vocab_top_k_200", big, t=0.7, k=200, draws=3000)
    compare(dump, work, "llama_vocab_top_k_200_top_p", big, t=0.7, k=200, p=0.5, draws=3000)
    # a model's peaked scores: the nucleus lies within the best few
    peak = big.copy()
    peak[[17, 90000, 4321, 128255]] += np.float32([22.0, 20.5, 20.0, 19.0])
    compare(dump, work, "llama_vocab_peaked_top_p", peak, t=0.6, p=0.9, draws=3000)
    compare(dump, work, "llama_vocab_peaked_plain", peak, t=0.6, draws=3000)
    # ties: the k-th value shared past the 64th candidate; a top-p cut through equal scores,
    # where transformers' ascending stable sort removes the lower id first
    levels = (np.arange(500) * 7919 % 5).astype(np.float32)
    compare(dump, work, "top_k_ties_past_64", levels, k=70, draws=5000)
    compare(dump, work, "top_k_ties_past_64_top_p", levels, t=0.5, k=70, p=0.3, draws=5000)
    compare(dump, work, "top_p_ties", np.zeros(4, np.float32), p=0.6, draws=4000)
    compare(dump, work, "top_p_ties_levels", levels, p=0.45, draws=5000)
    compare(dump, work, "llama_vocab_flat_top_p", np.zeros(128256, np.float32), p=0.9, draws=0)
    # all scores equal at the vocabulary's size: every setting keeps a tie past the best 64, and
    # the top-p cut runs through that one level by id (the lower ids go)
    flat = np.zeros(128256, np.float32)
    compare(dump, work, "llama_vocab_flat_top_k_top_p", flat, t=0.6, k=50, p=0.9, draws=300)
    compare(dump, work, "llama_vocab_flat_top_k_200", flat, t=0.8, k=200, draws=300)
    compare(dump, work, "llama_vocab_flat_top_k_1000_top_p", flat, t=0.7, k=1000, p=0.95, draws=300)
    compare(dump, work, "llama_vocab_flat_top_p_draws", flat, t=0.6, p=0.9, draws=300)
    # one level of 20,000 equal best scores over a Gaussian rest: the cut runs through the level
    # in a list of candidates, not the whole vocabulary
    level = (rng.standard_normal(128256) * 2.0 - 12.0).astype(np.float32)
    level[rng.choice(128256, 20000, replace=False)] = 3.0
    compare(dump, work, "llama_vocab_level_top_k_top_p", level, t=0.6, k=50, p=0.5, draws=300)
    compare(dump, work, "llama_vocab_level_top_p", level, t=0.9, p=0.3, draws=300)
    # a level of 6,000: few enough that only their e are computed, no pass over the vocabulary
    level6k = (rng.standard_normal(128256) * 2.0 - 12.0).astype(np.float32)
    level6k[rng.choice(128256, 6000, replace=False)] = 3.0
    compare(dump, work, "llama_vocab_level6k_top_k_top_p", level6k, t=0.6, k=50, p=0.5, draws=300)
    # a few tokens far above the rest: their mass alone decides the top-p cut (the bound on
    # the rest is negligible), no pass over the vocabulary
    far = big.copy()
    far[[17, 90000, 4321]] += np.float32([60.0, 59.5, 59.0])
    compare(dump, work, "llama_vocab_far_peaked_top_p", far, t=0.6, p=0.9, draws=1000)
    compare(dump, work, "llama_vocab_far_peaked_top_p_t1", far, p=0.999, draws=1000)
    # a small model's scores: a bulk far below, a thin tail, the best few: the mass below a
    # score is provably negligible, and the tokens above it are few (one compare pass)
    tail = (rng.standard_normal(128256) * 0.5).astype(np.float32)
    tail[rng.choice(128256, 300, replace=False)] = rng.uniform(2, 9, 300).astype(np.float32)
    tail[[5, 700, 64000]] = np.float32([23.0, 14.0, 12.9])
    compare(dump, work, "llama_vocab_tail_top_p", tail, t=0.6, p=0.9, draws=1000)
    # (nearly every token kept: a selection over 128,000 distinct scores, ~5 ms a draw)
    compare(dump, work, "llama_vocab_tail_top_p_wide", tail, t=2.0, p=0.999, draws=40)
    # an untrained model's unused tokens: 120,000 equal scores below a few thousand distinct
    # ones, and a wide nucleus whose cut runs through that level: the sampler's buckets of
    # scores, then of ids within the level (the lower ids go first)
    unused = (rng.standard_normal(128256) * 0.7 + 1.0).astype(np.float32)
    unused[rng.choice(128256, 120000, replace=False)] = -0.25
    compare(dump, work, "llama_vocab_unused_level_top_p", unused, t=1.5, p=0.99, draws=300)
    # top-k past the 64 best with a wide cut: the threshold pass and a selection on keys
    compare(dump, work, "llama_vocab_top_k_1000_top_p", big, t=0.7, k=1000, p=0.95, draws=1000)
    # a tie with the k-th (k < 64) going on past the 64th
    compare(dump, work, "top_k_ties_past_64_small_k", levels, k=40, draws=5000)
    compare(dump, work, "greedy_vocab", big, greedy=True, draws=20)


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def main():
    global ISA, FULL
    dump, work = sys.argv[1], sys.argv[2]
    mode = sys.argv[3] if len(sys.argv) > 3 else "best"
    if mode not in ("best", "avx2", "generic"):
        sys.exit(f"check_sampler: {mode}: expected best, avx2 or generic")
    flags = cpu_flags()
    if mode == "avx2" and not {"avx512f", "avx512bw", "avx512vl"} <= flags:
        print("SKIP: no AVX-512 here, so avx2 is the best path (or missing): the best run covers it")
        sys.exit(77)
    ISA, FULL = (None, True) if mode == "best" else (mode, False)
    work = os.path.join(work, mode)
    os.makedirs(work, exist_ok=True)
    print(f"-- {mode}: TL_CPU_ISA={ISA or os.environ.get('TL_CPU_ISA', '(unset)')}")
    cases(dump, work)
    print(f"generate_sampler {mode}: {checks - failures} passed, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
