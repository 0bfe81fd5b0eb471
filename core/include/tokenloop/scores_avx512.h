/* The scores' accumulator (scores.h) sixteen scores at a time, in AVX-512 registers: for the
 * decode kernel, which calls it between rows while the weights stream in, and for core's vector
 * passes (core/vecsel.c). The functions carry their target so that a file built for baseline
 * x86-64 can include this header and call them after checking the CPU. */
#ifndef TL_SCORES_AVX512_H
#define TL_SCORES_AVX512_H

#include <immintrin.h>
#include <math.h>

#include "tokenloop/scores.h"

#define TL_AVX512_FN __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma"))) static inline

/* 2^t lane by lane: 2^round(t) * 2^r on the polynomial. Lanes below the float range give
 * garbage the callers mask. */
TL_AVX512_FN __m512 tl_exp2_16(__m512 t)
{
    __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_sub_ps(t, n);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(TL_EXP2_A5), r, _mm512_set1_ps(TL_EXP2_A4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(TL_EXP2_A3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(TL_EXP2_A2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(TL_EXP2_A1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);   /* p * 2^n in one instruction */
}

/* The accumulator's hot part in registers, for a loop that adds many vectors: the lanes, the
 * bar and the maximum broadcast, the lanes' count. The rare paths (an offer, a new maximum, a
 * full lane) go through memory and load it again. */
typedef struct {
    __m512 z, w, zs, ws;
    __m512 thr, mx, c;   /* c: scale * log2 e */
    int n, live;         /* live: mx is finite, so the sums take terms */
} tl_cpu_lanes;

TL_AVX512_FN void tl_cpu_lanes_load(const tl_cpu_scores *s, tl_cpu_lanes *l)
{
    l->z = _mm512_loadu_ps(s->lz);
    l->w = _mm512_loadu_ps(s->lw);
    l->zs = _mm512_loadu_ps(s->lzs);
    l->ws = _mm512_loadu_ps(s->lws);
    l->thr = _mm512_set1_ps(s->thr);
    l->mx = _mm512_set1_ps(s->mx);
    l->c = _mm512_set1_ps(s->scale * TL_LOG2E);
    l->n = s->nlane;
    l->live = s->mx > -INFINITY && s->mx < INFINITY;
}

TL_AVX512_FN void tl_cpu_lanes_store(tl_cpu_scores *s, const tl_cpu_lanes *l)
{
    _mm512_storeu_ps(s->lz, l->z);
    _mm512_storeu_ps(s->lw, l->w);
    _mm512_storeu_ps(s->lzs, l->zs);
    _mm512_storeu_ps(s->lws, l->ws);
    s->nlane = l->n;
}

/* Scores x (as stored at v) of ids id0..id0+15; lanes a caller leaves out hold -inf. ge: ids
 * below ones already seen, so a score equal to the bar is offered too. want: s->want, as a
 * constant where the caller can make it one. */
TL_AVX512_FN void tl_cpu_scores_add16(tl_cpu_scores *s, tl_cpu_lanes *l, __m512 x, const float *v, int64_t id0,
                                      int ge, const unsigned want)
{
    /* (ge: a lane left out holds -inf, which equals a bar still at -inf; it is no score) */
    __mmask16 m = ge ? _mm512_cmp_ps_mask(x, l->thr, _CMP_GE_OQ) &
                           _mm512_cmp_ps_mask(x, _mm512_set1_ps(-INFINITY), _CMP_GT_OQ)
                     : _mm512_cmp_ps_mask(x, l->thr, _CMP_GT_OQ);
    if (m) {   /* after the first few hundred scores, almost never */
        while (m) {
            int j = __builtin_ctz((unsigned)m);
            m &= m - 1;
            s->offer(s, v[j], id0 + j, ge);   /* the bar may rise on the way */
        }
        l->thr = _mm512_set1_ps(s->thr);
    }
    if (_mm512_cmp_ps_mask(x, l->mx, _CMP_GT_OQ)) {   /* a new maximum: rarely */
        tl_cpu_lanes_store(s, l);
        /* (a max with -inf first: a NaN lane gives -inf, as reduce_max alone might not) */
        tl_cpu_scores_raise(s, _mm512_reduce_max_ps(_mm512_max_ps(x, _mm512_set1_ps(-INFINITY))));
        tl_cpu_lanes_load(s, l);
    }
    if (!l->live) return;
    const __m512 lo = _mm512_set1_ps(TL_SCORES_EXP_MIN * TL_LOG2E);
    __m512 d = _mm512_sub_ps(x, l->mx);
    __m512 t = _mm512_mul_ps(d, _mm512_set1_ps(TL_LOG2E));
    __mmask16 k = _mm512_cmp_ps_mask(t, lo, _CMP_GE_OQ);   /* NaN, -inf and underflow fail */
    __m512 e = tl_exp2_16(t);
    l->z = _mm512_mask_add_ps(l->z, k, l->z, e);
    if (want & TL_STATS_W) l->w = _mm512_mask3_fmadd_ps(e, t, l->w, k);
    if (want & TL_STATS_SCALED) {
        __m512 ts = _mm512_mul_ps(d, l->c);
        __mmask16 ks = _mm512_cmp_ps_mask(ts, lo, _CMP_GE_OQ);
        __m512 es = tl_exp2_16(ts);
        l->zs = _mm512_mask_add_ps(l->zs, ks, l->zs, es);
        if (want & TL_STATS_W) l->ws = _mm512_mask3_fmadd_ps(es, ts, l->ws, ks);
    }
    if (++l->n == TL_SCORES_LANE_TERMS) {
        tl_cpu_lanes_store(s, l);
        tl_cpu_scores_flush(s);
        tl_cpu_lanes_load(s, l);
    }
}

#endif
