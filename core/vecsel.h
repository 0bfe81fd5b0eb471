/* The three passes over a pass's scores that choosing a token needs, vectorized: the best k
 * (tl_topk's order), exp sums for the softmax and its entropy, and the ids above a threshold.
 * Each picks AVX-512, AVX2+FMA or portable code at run time (TL_CPU_ISA=generic|avx2|avx512
 * forces one, as for the matmul kernels). Internal to core: sampler.c and topk.c. */
#ifndef TOKENLOOP_VECSEL_H
#define TOKENLOOP_VECSEL_H

#include <stddef.h>
#include <stdint.h>

#include "tokenloop/topk.h"
#include "tokenloop/scores.h"

/* Scores per block of vs_exp's block sums: the draw walks blocks, then one block. A vector
 * lane adds at most TL_VS_BLOCK / 16 terms in float before the block's sum goes to double. */
#define TL_VS_BLOCK 256

/* Below this, exp in float is 0 (normal floats end at e^-87.34): every score that far under
 * the maximum counts as 0, as float softmax gives it. */
#define TL_VS_EXP_MIN TL_SCORES_EXP_MIN

/* The most vs_top keeps (tl_topk's and the sampler's lists). */
#define TL_VS_MAX_K 64

/* The k (1..n, at most TL_VS_MAX_K) largest of v[0..n) into ids/vals, descending, ties to the
 * lower index, NaN as -inf: tl_topk's contract. */
void vs_top(const float *v, int n, int k, int *ids, float *vals);

/* vs_top, and *sum / *wsum as vs_exp(v, n, vals[0], 1, NULL, NULL, sum, wsum) gives them (0 when
 * vals[0] is -inf or +inf): the softmax's sum and entropy with one read of v on AVX-512. */
void vs_top_sum(const float *v, int n, int k, int *ids, float *vals, double *sum, double *wsum);

/* With d = (v[i] - mx) * scale and e = exp(d) in float (0 where d < TL_VS_EXP_MIN or d is NaN):
 * *sum = sum of e, *wsum (if not NULL) = sum of e * d (float lanes per block, blocks in
 * double: each term off by at most (4 + 2 |d| + TL_VS_BLOCK / 16) * 2^-24), e_out (if not NULL)
 * gets every e, bsum (if not NULL) the sum of each TL_VS_BLOCK scores, *sum being their sum.
 * mx must be at least every v: d <= 0. */
void vs_exp(const float *v, int n, float mx, float scale, float *e_out, double *bsum, double *sum, double *wsum);

/* e for one score x as vs_exp(.., mx, scale, ..)'s lanes compute it. */
float vs_exp_one(float x, float mx, float scale);

/* The best k so far as 64-bit rank keys (score, then the lower id), buffered: a score enters
 * only above the k-th best at the last cut, and a full buffer is cut back to k (vecsel.c). */
#define VS_TOPBUF (2 * TL_VS_MAX_K + 32)
typedef struct {
    uint64_t a[VS_TOPBUF];
    int n, k, cap;
    float thr;
} vs_topbuf;

/* tl_logit_stats gathered piece by piece, by one thread each: vs_acc_add for each piece of
 * scores already written (any order), or the CPU's decode kernel through vs_acc_scores as it
 * writes them; vs_acc_finish over all the threads' accumulators once every piece is in. The
 * sums are the kernels' accumulator (core/include/tokenloop/scores.h); the best k are kept here, as
 * tl_topk keeps them. */
typedef struct vs_acc {
    tl_cpu_scores s;     /* first: its offer() finds the list from it */
    vs_topbuf b;
} vs_acc;

void vs_acc_init(vs_acc *a, int k, unsigned want, float scale);
/* Scores v[0..n) of ids i0..i0+n-1. */
void vs_acc_add(vs_acc *a, const float *v, int64_t i0, int n);
tl_cpu_scores *vs_acc_scores(vs_acc *a);
/* The np accumulators' union as tl_logit_stats of the n scores v (which give vals, and the
 * -inf and NaN ids that fill the list when fewer than k scores are above -inf). */
void vs_acc_finish(const vs_acc *parts, int np, const float *v, int n, tl_logit_stats *out);

/* Ids of the v[i] >= thr (NaN never), ascending, into out (room for n); returns how many. */
int vs_ge(const float *v, int n, float thr, int *out);

/* How many v[i] >= thr (NaN never): vs_ge's count without the ids (AVX-512 or portable). */
int vs_count_ge(const float *v, int n, float thr);

/* The ISA chosen: "avx512", "avx2" or "generic". */
const char *vs_isa(void);
/* Forces one of those (tests, for every path this machine runs); -1 if the CPU lacks it. Not
 * for use while another thread is in these functions. */
int vs_set_isa(const char *name);

#endif
