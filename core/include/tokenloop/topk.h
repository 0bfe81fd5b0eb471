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

/* tl_topk's results and the sums a sampler needs, gathered while the last product writes the
 * scores (tl_engine_set_stats): the threads that compute a piece of the vocabulary look at it
 * while it is still in their cache, so no pass over 128,256 scores waits after the product.
 * ids, vals and sumexp are what tl_topk(v, n, k, ...) gives (vals equal; the sum the same
 * float exps, added in another order). The other sums, when asked, with d = v - vals[0]:
 * wsum = sum of exp(d) d (the softmax's entropy: log sumexp - wsum / sumexp); and at a
 * temperature, ds = d * scale: sumexp_s = sum of exp(ds), wsum_s = sum of exp(ds) ds. Sums are
 * 0 when vals[0] is -inf or +inf, as tl_topk's is. */
#define TL_STATS_W 1u        /* wsum */
#define TL_STATS_SCALED 2u   /* sumexp_s (and wsum_s with TL_STATS_W) at `scale` */
typedef struct tl_logit_stats {
    unsigned has;            /* TL_STATS_* computed */
    int k;
    int ids[TL_TOPK_MAX];
    float vals[TL_TOPK_MAX];
    double sumexp, wsum;
    float scale;
    double sumexp_s, wsum_s;
} tl_logit_stats;

/* The same statistics computed from scores already written, in one pass (a benchmark's
 * reference; where a pass gathers them, tl_engine_stats). 0, or -1 for n < 1. */
int tl_logit_stats_compute(const float *v, int n, unsigned what, float scale, tl_logit_stats *out);

#endif
