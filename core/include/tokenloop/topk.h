/* The best few scores of a pass, and the softmax statistics that give their probabilities,
 * without the other 128,000: what a GPU hands the host each step when nothing else is asked.
 * This is the reference the CUDA kernel is tested against. */
#ifndef TOKENLOOP_TOPK_H
#define TOKENLOOP_TOPK_H

#define TL_TOPK_MAX 64

/* The k (1..TL_TOPK_MAX, at most n) largest of v[0..n), descending; ties go to the lower
 * index and NaN ranks below everything. *sumexp = sum of exp(v[i] - vals[0]) over the
 * non-NaN v (0 when all are -inf), so a candidate's softmax probability is
 * exp(vals[j] - vals[0]) / *sumexp. The sum is of float exps: relative to the exact sum it
 * is off by at most (4 + |d| + 16) * 2^-24 per term, d = v[i] - vals[0], and terms under
 * e^-87.3 count as 0 (core/vecsel.h).
 * Returns the number filled, or -1 for bad k or n. */
int tl_topk(const float *v, int n, int k, int *ids, float *vals, double *sumexp);

#endif
