/* Vector passes for the sampler and tl_topk (vecsel.h). One exp for all three ISAs: Cephes'
 * expf (Cody-Waite reduction by ln 2, a degree-5 polynomial, about 1 ulp), so the lanes of a
 * vector and the scalar tail compute the same function; only FMA contraction differs by ISA.
 * The functions built for AVX2/AVX-512 carry target attributes and are called only after
 * __builtin_cpu_supports says so: this file itself stays baseline x86-64. */
#define _GNU_SOURCE
#include "vecsel.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define VS_X86 1
#include <immintrin.h>
#endif

#define LOG2E 1.44269504088896341f
#define C1 0.693359375f
#define C2 (-2.12194440e-4f)
#define P0 1.9875691500e-4f
#define P1 1.3981999507e-3f
#define P2 8.3334519073e-3f
#define P3 4.1665795894e-2f
#define P4 1.6666665459e-1f
#define P5 5.0000001201e-1f

/* exp(d) for TL_VS_EXP_MIN <= d <= 0, the exponent built by hand: 2^n is a normal float here. */
static inline float exp1(float d)
{
    /* round to nearest by the 1.5 * 2^23 trick: no libm call, and d * LOG2E is in [-126, 0] */
    float n = (d * LOG2E + 12582912.0f) - 12582912.0f;
    float r = d - n * C1;
    r = r - n * C2;
    float p = ((((P0 * r + P1) * r + P2) * r + P3) * r + P4) * r + P5;
    p = p * r * r + r + 1.0f;
    union { uint32_t u; float f; } s = {.u = (uint32_t)((int32_t)n + 127) << 23};
    return p * s.f;
}

/* e for one score, 0 when below the range (NaN included: the comparison fails). */
static inline float exp_of(float d) { return d >= TL_VS_EXP_MIN ? exp1(d > 0 ? 0 : d) : 0.0f; }

static inline float key(float x) { return isnan(x) ? -INFINITY : x; }

/* Insertion into the k-long descending list: an equal score with a higher index ranks after,
 * so it enters only when strictly larger than the last kept one. */
static inline void insert(int *ids, float *vals, int *m, int k, float x, int i)
{
    if (*m == k && !(x > vals[k - 1]))
        return;
    int j = *m < k ? (*m)++ : k - 1;
    while (j > 0 && vals[j - 1] < x) {
        vals[j] = vals[j - 1];
        ids[j] = ids[j - 1];
        j--;
    }
    vals[j] = x;
    ids[j] = i;
}

static void top_generic(const float *v, int n, int k, int *ids, float *vals)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        insert(ids, vals, &m, k, key(v[i]), i);
}

static void exp_generic(const float *v, int n, float mx, float scale, float *e_out, double *bsum, double *sum,
                        double *wsum)
{
    double total = 0, wtotal = 0;
    for (int b0 = 0; b0 < n; b0 += TL_VS_BLOCK) {
        int b1 = n - b0 < TL_VS_BLOCK ? n : b0 + TL_VS_BLOCK;
        double bs = 0, ws = 0;
        for (int i = b0; i < b1; i++) {
            float d = (v[i] - mx) * scale, e = exp_of(d);
            if (e_out) e_out[i] = e;
            bs += e;
            if (e > 0) ws += (double)e * d;
        }
        if (bsum) bsum[b0 / TL_VS_BLOCK] = bs;
        total += bs;
        wtotal += ws;
    }
    *sum = total;
    if (wsum) *wsum = wtotal;
}

static int ge_generic(const float *v, int n, float thr, int *out)
{
    int c = 0;
    for (int i = 0; i < n; i++)
        if (v[i] >= thr) out[c++] = i;
    return c;
}

#ifdef VS_X86
#define T_AVX2 __attribute__((target("avx2,fma")))
#define T_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma")))

T_AVX2 static inline __m256 exp8(__m256 d)
{
    __m256 n = _mm256_round_ps(_mm256_mul_ps(d, _mm256_set1_ps(LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(C1), d);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(C2), r);
    __m256 p = _mm256_set1_ps(P0);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(P5));
    p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i s = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(s));
}

T_AVX2 static void top_avx2(const float *v, int n, int k, int *ids, float *vals)
{
    int m = 0, i = 0;
    for (; i < k; i++)
        insert(ids, vals, &m, k, key(v[i]), i);
    /* almost every block has nothing above the k-th best: one compare for eight scores */
    for (; i + 8 <= n; i += 8) {
        int mask = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(v + i), _mm256_set1_ps(vals[k - 1]), _CMP_GT_OQ));
        while (mask) {
            int j = __builtin_ctz((unsigned)mask);
            mask &= mask - 1;
            insert(ids, vals, &m, k, v[i + j], i + j);
        }
    }
    for (; i < n; i++)
        insert(ids, vals, &m, k, key(v[i]), i);
}

T_AVX2 static inline double hsum4(__m256d a)
{
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

T_AVX2 static inline double hsum8(__m256 a)
{
    return hsum4(_mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(a)), _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1))));
}

T_AVX2 static void exp_avx2(const float *v, int n, float mx, float scale, float *e_out, double *bsum, double *sum,
                            double *wsum)
{
    const __m256 vmx = _mm256_set1_ps(mx), vsc = _mm256_set1_ps(scale), lo = _mm256_set1_ps(TL_VS_EXP_MIN);
    double total = 0, wtotal = 0;
    for (int b0 = 0; b0 < n; b0 += TL_VS_BLOCK) {
        int b1 = n - b0 < TL_VS_BLOCK ? n : b0 + TL_VS_BLOCK, i = b0;
        /* float lanes, two per sum, each adding at most TL_VS_BLOCK / 16 terms before the
         * block's total goes to double */
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, w0 = a0, w1 = a0;
        for (; i + 16 <= b1; i += 16) {
            __m256 d0 = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(v + i), vmx), vsc);
            __m256 d1 = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(v + i + 8), vmx), vsc);
            __m256 k0 = _mm256_cmp_ps(d0, lo, _CMP_GE_OQ), k1 = _mm256_cmp_ps(d1, lo, _CMP_GE_OQ);
            d0 = _mm256_max_ps(d0, lo);   /* NaN becomes lo, its e 0 by the mask */
            d1 = _mm256_max_ps(d1, lo);
            __m256 e0 = _mm256_and_ps(exp8(d0), k0), e1 = _mm256_and_ps(exp8(d1), k1);
            if (e_out) {
                _mm256_storeu_ps(e_out + i, e0);
                _mm256_storeu_ps(e_out + i + 8, e1);
            }
            a0 = _mm256_add_ps(a0, e0);
            a1 = _mm256_add_ps(a1, e1);
            if (wsum) {   /* e is 0 wherever d was clamped */
                w0 = _mm256_fmadd_ps(e0, d0, w0);
                w1 = _mm256_fmadd_ps(e1, d1, w1);
            }
        }
        double bs = hsum8(_mm256_add_ps(a0, a1)), ws = hsum8(_mm256_add_ps(w0, w1));
        for (; i < b1; i++) {
            float d = (v[i] - mx) * scale, e = exp_of(d);
            if (e_out) e_out[i] = e;
            bs += e;
            if (e > 0) ws += (double)e * d;
        }
        if (bsum) bsum[b0 / TL_VS_BLOCK] = bs;
        total += bs;
        wtotal += ws;
    }
    *sum = total;
    if (wsum) *wsum = wtotal;
}

T_AVX2 static int ge_avx2(const float *v, int n, float thr, int *out)
{
    int c = 0, i = 0;
    for (; i + 8 <= n; i += 8) {
        int mask = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(v + i), _mm256_set1_ps(thr), _CMP_GE_OQ));
        while (mask) {
            out[c++] = i + __builtin_ctz((unsigned)mask);
            mask &= mask - 1;
        }
    }
    for (; i < n; i++)
        if (v[i] >= thr) out[c++] = i;
    return c;
}

T_AVX512 static inline __m512 exp16(__m512 d)
{
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(d, _mm512_set1_ps(LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(C1), d);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(C2), r);
    __m512 p = _mm512_set1_ps(P0);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(P1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(P2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(P3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(P4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(P5));
    p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, n);   /* p * 2^n in one instruction */
}

T_AVX512 static void top_avx512(const float *v, int n, int k, int *ids, float *vals)
{
    int m = 0, i = 0;
    for (; i < k; i++)
        insert(ids, vals, &m, k, key(v[i]), i);
    /* two blocks a compare: after the first few thousand scores nearly none passes */
    for (; i + 32 <= n; i += 32) {
        __m512 t = _mm512_set1_ps(vals[k - 1]);
        __mmask16 a = _mm512_cmp_ps_mask(_mm512_loadu_ps(v + i), t, _CMP_GT_OQ);
        __mmask16 b = _mm512_cmp_ps_mask(_mm512_loadu_ps(v + i + 16), t, _CMP_GT_OQ);
        uint32_t mask = (uint32_t)a | (uint32_t)b << 16;
        while (mask) {
            int j = __builtin_ctz(mask);
            mask &= mask - 1;
            insert(ids, vals, &m, k, v[i + j], i + j);
        }
    }
    for (; i < n; i++)
        insert(ids, vals, &m, k, key(v[i]), i);
}

T_AVX512 static void exp_avx512(const float *v, int n, float mx, float scale, float *e_out, double *bsum,
                                double *sum, double *wsum)
{
    const __m512 vmx = _mm512_set1_ps(mx), vsc = _mm512_set1_ps(scale), lo = _mm512_set1_ps(TL_VS_EXP_MIN);
    double total = 0, wtotal = 0;
    for (int b0 = 0; b0 < n; b0 += TL_VS_BLOCK) {
        int b1 = n - b0 < TL_VS_BLOCK ? n : b0 + TL_VS_BLOCK, i = b0;
        /* float lanes, two per sum, each adding at most TL_VS_BLOCK / 32 terms before the
         * block's total goes to double */
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, w0 = a0, w1 = a0;
        for (; i + 32 <= b1; i += 32) {
            __m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(v + i), vmx);
            __m512 d1 = _mm512_sub_ps(_mm512_loadu_ps(v + i + 16), vmx);
            if (scale != 1.0f) {
                d0 = _mm512_mul_ps(d0, vsc);
                d1 = _mm512_mul_ps(d1, vsc);
            }
            __mmask16 k0 = _mm512_cmp_ps_mask(d0, lo, _CMP_GE_OQ), k1 = _mm512_cmp_ps_mask(d1, lo, _CMP_GE_OQ);
            d0 = _mm512_max_ps(d0, lo);   /* NaN becomes lo, its e 0 by the mask */
            d1 = _mm512_max_ps(d1, lo);
            __m512 e0 = _mm512_maskz_mov_ps(k0, exp16(d0)), e1 = _mm512_maskz_mov_ps(k1, exp16(d1));
            if (e_out) {
                _mm512_storeu_ps(e_out + i, e0);
                _mm512_storeu_ps(e_out + i + 16, e1);
            }
            a0 = _mm512_add_ps(a0, e0);
            a1 = _mm512_add_ps(a1, e1);
            if (wsum) {   /* e is 0 wherever d was clamped */
                w0 = _mm512_fmadd_ps(e0, d0, w0);
                w1 = _mm512_fmadd_ps(e1, d1, w1);
            }
        }
        __m512 a = _mm512_add_ps(a0, a1), w = _mm512_add_ps(w0, w1);
        double bs = _mm512_reduce_add_pd(_mm512_add_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(a)),
                                                       _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)))));
        double ws = _mm512_reduce_add_pd(_mm512_add_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(w)),
                                                       _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(w), 1)))));
        for (; i < b1; i++) {
            float d = (v[i] - mx) * scale, e = exp_of(d);
            if (e_out) e_out[i] = e;
            bs += e;
            if (e > 0) ws += (double)e * d;
        }
        if (bsum) bsum[b0 / TL_VS_BLOCK] = bs;
        total += bs;
        wtotal += ws;
    }
    *sum = total;
    if (wsum) *wsum = wtotal;
}

T_AVX512 static int ge_avx512(const float *v, int n, float thr, int *out)
{
    int c = 0, i = 0;
    const __m512 t = _mm512_set1_ps(thr);
    __m512i idx = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i step = _mm512_set1_epi32(16);
    for (; i + 16 <= n; i += 16, idx = _mm512_add_epi32(idx, step)) {
        __mmask16 mask = _mm512_cmp_ps_mask(_mm512_loadu_ps(v + i), t, _CMP_GE_OQ);
        if (mask) {
            /* compress in a register, then a full store: the memory form of vpcompressd is
             * microcoded on some CPUs (~100 cycles on Zen 4). The store stays inside out[]:
             * c <= i and i + 16 <= n. */
            _mm512_storeu_si512(out + c, _mm512_maskz_compress_epi32(mask, idx));
            c += __builtin_popcount(mask);
        }
    }
    for (; i < n; i++)
        if (v[i] >= thr) out[c++] = i;
    return c;
}
#endif

enum { ISA_GENERIC, ISA_AVX2, ISA_AVX512 };
static int isa = ISA_GENERIC;
static pthread_once_t isa_once = PTHREAD_ONCE_INIT;

static void pick_isa(void)
{
#ifdef VS_X86
    int has512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512vl");
    int has2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    const char *f = getenv("TL_CPU_ISA");
    /* the matmul kernels' names: avx512bf16 means avx512 here */
    int want = !f || !*f ? ISA_AVX512 : !strncmp(f, "avx512", 6) ? ISA_AVX512 : !strcmp(f, "avx2") ? ISA_AVX2 : ISA_GENERIC;
    isa = want == ISA_AVX512 && has512 ? ISA_AVX512 : want >= ISA_AVX2 && has2 ? ISA_AVX2 : ISA_GENERIC;
#endif
}

static int cur_isa(void)
{
    pthread_once(&isa_once, pick_isa);
    return isa;
}

const char *vs_isa(void)
{
    int i = cur_isa();
    return i == ISA_AVX512 ? "avx512" : i == ISA_AVX2 ? "avx2" : "generic";
}

int vs_set_isa(const char *name)
{
    cur_isa();
    int want = !strcmp(name, "avx512") ? ISA_AVX512 : !strcmp(name, "avx2") ? ISA_AVX2 : !strcmp(name, "generic") ? ISA_GENERIC : -1;
    if (want < 0) return -1;
#ifdef VS_X86
    if (want == ISA_AVX512 && !(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                                __builtin_cpu_supports("avx512vl")))
        return -1;
    if (want == ISA_AVX2 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return -1;
#else
    if (want != ISA_GENERIC) return -1;
#endif
    isa = want;
    return 0;
}

void vs_top(const float *v, int n, int k, int *ids, float *vals)
{
#ifdef VS_X86
    int i = cur_isa();
    if (i == ISA_AVX512) { top_avx512(v, n, k, ids, vals); return; }
    if (i == ISA_AVX2) { top_avx2(v, n, k, ids, vals); return; }
#endif
    top_generic(v, n, k, ids, vals);
}

void vs_exp(const float *v, int n, float mx, float scale, float *e_out, double *bsum, double *sum, double *wsum)
{
#ifdef VS_X86
    int i = cur_isa();
    if (i == ISA_AVX512) { exp_avx512(v, n, mx, scale, e_out, bsum, sum, wsum); return; }
    if (i == ISA_AVX2) { exp_avx2(v, n, mx, scale, e_out, bsum, sum, wsum); return; }
#endif
    exp_generic(v, n, mx, scale, e_out, bsum, sum, wsum);
}

int vs_ge(const float *v, int n, float thr, int *out)
{
#ifdef VS_X86
    int i = cur_isa();
    if (i == ISA_AVX512) return ge_avx512(v, n, thr, out);
    if (i == ISA_AVX2) return ge_avx2(v, n, thr, out);
#endif
    return ge_generic(v, n, thr, out);
}
