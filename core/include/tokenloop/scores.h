/* The scores' statistics (tokenloop/topk.h: tl_logit_stats) as a product writes them, one
 * accumulator per thread: every score above a bar goes to `offer` (the owner keeps the best k
 * and raises the bar), and the softmax sums build up against the largest score so far, sixteen
 * terms to a float lane before they move to double (tl_cpu_scores_flush). The AVX-512 BF16
 * decode kernel feeds it sixteen rows at a time while the weights stream in
 * (scores_avx512.h), so the exp costs no time of its own; core/vecsel.c feeds it from scores
 * already written, and merges the threads' accumulators. It lives in core, beside backend.h,
 * because both sides use it: a backend's kernels fill it, core's vector passes read and merge it. */
#ifndef TL_SCORES_H
#define TL_SCORES_H

#include <stddef.h>
#include <stdint.h>
#include "tokenloop/topk.h"

/* Below this, exp in float is 0 (normal floats end at e^-87.34). */
#define TL_SCORES_EXP_MIN (-87.3f)
/* Terms a float lane adds before they move to double. */
#define TL_SCORES_LANE_TERMS 16
/* 2^r on [-1/2, 1/2] as 1 + r (A1 + r (A2 + ...)): a degree-5 fit of the relative error (9.1e-8
 * exact, 1.9e-7 in float arithmetic), the exp of every vector pass over the scores */
#define TL_EXP2_A1 0.693147004f
#define TL_EXP2_A2 0.240222424f
#define TL_EXP2_A3 0.0555073358f
#define TL_EXP2_A4 0.00967151299f
#define TL_EXP2_A5 0.00132647273f
#define TL_LOG2E 1.44269504088896341f

typedef struct tl_cpu_scores tl_cpu_scores;
struct tl_cpu_scores {
    float thr;           /* scores above this are offered */
    float mx;            /* the largest score so far (NaN never counts); the sums are against it */
    unsigned want;       /* TL_STATS_* */
    float scale;         /* the tempered sums' factor (1 / temperature) */
    int64_t next;        /* one past the highest id seen: a piece below it may tie upwards */
    int nlane;           /* terms in each lane */
    float lz[16], lw[16], lzs[16], lws[16];   /* lanes: e, e t, and at scale (t = d log2 e) */
    double z, w, zs, ws; /* sum of e, of e d, and at scale (d = score - mx, or (score - mx) scale) */
    /* x (id) is above thr, or (ge: the piece is out of order) equal to it */
    void (*offer)(tl_cpu_scores *s, float x, int64_t id, int ge);
};

void tl_cpu_scores_init(tl_cpu_scores *s, unsigned want, float scale,
                        void (*offer)(tl_cpu_scores *, float, int64_t, int));
/* The lanes' terms into the double sums. */
void tl_cpu_scores_flush(tl_cpu_scores *s);
/* A new largest score bm: the sums move to it (e' = e r, d' = d - g: sum e'd' = r (sum e d -
 * g sum e)). +inf zeroes them, as tl_topk's sum is 0 then. */
void tl_cpu_scores_raise(tl_cpu_scores *s, float bm);
/* n scores v of ids id0.. one at a time, exp from libm: for a product whose kernel cannot feed
 * the accumulator itself (a fallback when memory runs out). */
void tl_cpu_scores_add(tl_cpu_scores *s, const float *v, int64_t id0, int n);
/* The sums of np accumulators, `stride` bytes apart from `first`, against the largest of their
 * maxima into out's sumexp, wsum, sumexp_s and wsum_s (0 when that maximum is -inf or +inf). */
void tl_cpu_scores_merge(const tl_cpu_scores *first, size_t stride, int np, tl_logit_stats *out);

#endif
