"""The sampler against a float64 NumPy implementation of transformers' pipeline
(TemperatureLogitsWarper -> TopKLogitsWarper -> TopPLogitsWarper -> softmax -> multinomial):
the probabilities after each stage, which tokens each stage cuts, the number kept, and the
frequencies of many draws (a chi-square test); the same seed gives the same tokens. Every
case runs on each vector path of the sampler (TL_CPU_ISA=avx512, avx2, generic; one the CPU
lacks falls back to the next), the large-vocabulary draws in full on the first only. The sampler computes exp in float (sums in double): its
probabilities are within ~1e-7 relative of these, well inside the tolerances below, and no
case here has a top-p cumulative sum that close to its limit, so the cuts match exactly.

    check_sampler.py SAMPLER_DUMP WORK_DIR
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


ISA = None


def run(dump, work, name, logits, greedy, t, k, p, seed, draws, top_n):
    path = os.path.join(work, name + ".f32")
    logits.astype("<f4").tofile(path)
    env = dict(os.environ)
    if ISA:
        env["TL_CPU_ISA"] = ISA
    out = subprocess.run([dump, path, str(len(logits)), str(int(greedy)), repr(t), str(k), repr(p), str(seed),
                          str(draws), str(top_n)], check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out)


def compare(dump, work, name, logits, greedy=False, t=1.0, k=0, p=1.0, seed=7, draws=0):
    V = len(logits)
    if ISA != "avx512" and V > 1000:
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
    if not greedy:
        ent = -np.sum(ptemp[ptemp > 0] * np.log(ptemp[ptemp > 0]))
        check(abs(r["entropy"] - ent) < 1e-6, f"{name}: entropy {r['entropy']} vs {ent}")
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


def main():
    global ISA
    dump, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    for ISA in ("avx512", "avx2", "generic"):
        print(f"-- TL_CPU_ISA={ISA}")
        cases(dump, work)
    print(f"generate_sampler: {checks - failures} passed, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
