/* Vector passes for the sampler and tl_topk (vecsel.h). One exp for all three ISAs, in base 2:
 * t = (v - mx) * (scale * log2 e) in float, then 2^t = 2^round(t) * 2^r with r in [-1/2, 1/2]
 * on a degree-5 polynomial (1.9e-7 relative in float). Scale and log2 e in one product make t
 * carry one more rounding than d did (|t| 2^-24 absolute: 1e-6 relative at t = -20, where e
 * is 1e-6 of the best token's), for three fewer vector operations of about twelve: the exp is
 * what a pass over 128,256 scores spends its time on. The lanes of a vector and the scalar
 * tail compute the same function; only FMA contraction differs by ISA.
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
#include "tokenloop/scores_avx512.h"
#endif

#define LOG2E TL_LOG2E
#define LN2 0.693147180559945309
/* the polynomial of 2^r (core/include/tokenloop/scores.h) */
#define A1 TL_EXP2_A1
#define A2 TL_EXP2_A2
#define A3 TL_EXP2_A3
#define A4 TL_EXP2_A4
#define A5 TL_EXP2_A5
/* Below this t (TL_VS_EXP_MIN in base 2) e is 0. */
#define T_MIN (TL_VS_EXP_MIN * LOG2E)

/* 2^t for T_MIN <= t <= 0, the exponent built by hand: 2^n is a normal float here. */
static inline float exp2p(float t)
{
    /* round to nearest by the 1.5 * 2^23 trick: no libm call, and t is in [-126, 0] */
    float n = (t + 12582912.0f) - 12582912.0f, r = t - n;
    float p = ((((A5 * r + A4) * r + A3) * r + A2) * r + A1) * r + 1.0f;
    union { uint32_t u; float f; } s = {.u = (uint32_t)((int32_t)n + 127) << 23};
    return p * s.f;
}

/* e for one t = d log2(e), 0 when below the range (NaN included: the comparison fails). */
static inline float exp2_of(float t) { return t >= T_MIN ? exp2p(t > 0 ? 0 : t) : 0.0f; }

static inline float key(float x) { return isnan(x) ? -INFINITY : x; }

static int cur_isa(void);
static void acc_offer(tl_cpu_scores *s, float x, int64_t i, int ge);
static void acc_block(vs_acc *a, const float *v, int n, float bm);

float vs_exp_one(float x, float mx, float scale) { return exp2_of((x - mx) * (scale * LOG2E)); }

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

/* The best k as 64-bit keys: the score's order above, the index's complement below, so one
 * integer comparison ranks by score and then by the lower index. -0 counts as +0 (equal scores). */
static inline uint64_t rank_of(float x, int i)
{
    x = key(x) + 0.0f;
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u = (u & 0x80000000u) ? ~u : u | 0x80000000u;
    return (uint64_t)u << 32 | (uint32_t)~(uint32_t)i;
}

static inline float score_of(uint64_t r)
{
    uint32_t u = (uint32_t)(r >> 32);
    u = (u & 0x80000000u) ? u & 0x7fffffffu : ~u;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static inline void swap_u64(uint64_t *a, int i, int j)
{
    uint64_t t = a[i];
    a[i] = a[j];
    a[j] = t;
}

/* Quickselect (keys are distinct: they hold the index): a[0..k) the k largest afterwards. */
static void select_keys(uint64_t *a, int n, int k)
{
    int l = 0, r = n;
    while (r - l > 1) {
        int m = l + (r - l) / 2;
        if (a[m] < a[l]) swap_u64(a, m, l);
        if (a[r - 1] < a[l]) swap_u64(a, r - 1, l);
        if (a[m] < a[r - 1]) swap_u64(a, m, r - 1);
        uint64_t piv = a[r - 1];
        int p = l;
        for (int j = l; j < r - 1; j++)
            if (a[j] > piv) swap_u64(a, p++, j);
        swap_u64(a, p, r - 1);
        if (p == k - 1) return;
        if (p > k - 1) r = p;
        else l = p + 1;
    }
}

/* The best k of a pass, buffered: a score enters only above the k-th best so far (an equal one
 * has a higher index, so it ranks after), and when k + k + 32 are in, a quickselect cuts them
 * back to k and raises that bar. Over random scores that is about 2 k ln(n/k) keys and a cut
 * per k of them, instead of an insertion into a sorted list of k for each of the ~k ln(n/k)
 * scores that pass. */
#define TOPBUF VS_TOPBUF
typedef vs_topbuf topbuf;

static void tb_cut(topbuf *b)
{
    select_keys(b->a, b->n, b->k);
    b->n = b->k;
    uint64_t low = b->a[0];
    for (int j = 1; j < b->k; j++)
        if (b->a[j] < low) low = b->a[j];
    b->thr = score_of(low);
}

/* The first k scores enter whatever they are (-inf and NaN too: the list is always k long). */
__attribute__((unused)) static void tb_start(topbuf *b, const float *v, int k)   /* the SIMD passes only */
{
    b->k = k;
    b->cap = 2 * k + 32;
    b->n = 0;
    for (int i = 0; i < k; i++)
        b->a[b->n++] = rank_of(v[i], i);
    tb_cut(b);
}

static inline void tb_add(topbuf *b, float x, int i)
{
    b->a[b->n++] = rank_of(x, i);
    if (b->n >= b->cap) tb_cut(b);
}

/* b->a[0..n) in descending order (n <= TL_VS_MAX_K: an insertion sort). */
static void tb_sort(topbuf *b)
{
    uint64_t *a = b->a;
    for (int j = 1; j < b->n; j++) {
        uint64_t x = a[j];
        int m = j;
        while (m > 0 && a[m - 1] < x) {
            a[m] = a[m - 1];
            m--;
        }
        a[m] = x;
    }
}

__attribute__((unused)) static void tb_finish(topbuf *b, const float *v, int *ids, float *vals)
{
    tb_cut(b);
    tb_sort(b);
    for (int j = 0; j < b->k; j++) {
        ids[j] = (int)~(uint32_t)b->a[j];
        vals[j] = key(v[ids[j]]);
    }
}

static void top_generic(const float *v, int n, int k, int *ids, float *vals)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        insert(ids, vals, &m, k, key(v[i]), i);
}

/* One block's sums, v[b0, b1) with t = (v - mx) c: *bsum gets the sum of e, *wsum (when not
 * NULL) that of e * t; e_out (when not NULL) each e. Each ISA has one. */
typedef void exp_block_fn(const float *v, int b0, int b1, float mx, float c, float *e_out, double *bsum,
                          double *wsum);

/* The scalar end of a block from i on, added to the sums bs and ws its vector part left. */
static inline void exp_tail(const float *v, int i, int b1, float mx, float c, float *e_out, double bs, double ws,
                            double *bsum, double *wsum)
{
    for (; i < b1; i++) {
        float t = (v[i] - mx) * c, e = exp2_of(t);
        if (e_out) e_out[i] = e;
        bs += e;
        if (e > 0) ws += (double)e * t;
    }
    *bsum = bs;
    if (wsum) *wsum = ws;
}

static void exp_block_generic(const float *v, int b0, int b1, float mx, float c, float *e_out, double *bsum,
                              double *wsum)
{
    exp_tail(v, b0, b1, mx, c, e_out, 0, 0, bsum, wsum);
}

/* The pass over all of v: block by block (bsum gets each block's sum when not NULL), the totals
 * in double; *wsum, when asked for, is the sum of e * d. */
static void exp_blocks(exp_block_fn *block, const float *v, int n, float mx, float scale, float *e_out,
                       double *bsum, double *sum, double *wsum)
{
    const float c = scale * LOG2E;
    double total = 0, wtotal = 0;
    for (int b0 = 0; b0 < n; b0 += TL_VS_BLOCK) {
        int b1 = n - b0 < TL_VS_BLOCK ? n : b0 + TL_VS_BLOCK;
        double bs, ws = 0;
        block(v, b0, b1, mx, c, e_out, &bs, wsum ? &ws : NULL);
        if (bsum) bsum[b0 / TL_VS_BLOCK] = bs;
        total += bs;
        wtotal += ws;
    }
    *sum = total;
    if (wsum) *wsum = wtotal * LN2;
}

static int ge_generic(const float *v, int n, float thr, int *out)
{
    int c = 0;
    for (int i = 0; i < n; i++)
        if (v[i] >= thr) out[c++] = i;
    return c;
}

static int count_generic(const float *v, int n, float thr)
{
    int c = 0;
    for (int i = 0; i < n; i++) c += v[i] >= thr;
    return c;
}

#ifdef VS_X86
#define T_AVX2 __attribute__((target("avx2,fma")))
#define T_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma")))

/* 2^t lane by lane (exp2p); t below T_MIN gives garbage the callers mask. */
T_AVX2 static inline __m256 exp8(__m256 t)
{
    __m256 n = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_sub_ps(t, n);
    __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(A5), r, _mm256_set1_ps(A4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(A3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(A2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(A1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
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

T_AVX2 static void exp_block_avx2(const float *v, int b0, int b1, float mx, float c, float *e_out, double *bsum,
                                  double *wsum)
{
    const __m256 vmx = _mm256_set1_ps(mx), vc = _mm256_set1_ps(c), lo = _mm256_set1_ps(T_MIN);
    int i = b0;
    /* float lanes, two per sum, each adding at most TL_VS_BLOCK / 16 terms before the
     * block's total goes to double */
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, w0 = a0, w1 = a0;
    for (; i + 16 <= b1; i += 16) {
        __m256 t0 = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(v + i), vmx), vc);
        __m256 t1 = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(v + i + 8), vmx), vc);
        __m256 k0 = _mm256_cmp_ps(t0, lo, _CMP_GE_OQ), k1 = _mm256_cmp_ps(t1, lo, _CMP_GE_OQ);
        t0 = _mm256_max_ps(t0, lo);   /* NaN becomes lo, its e 0 by the mask */
        t1 = _mm256_max_ps(t1, lo);
        __m256 e0 = _mm256_and_ps(exp8(t0), k0), e1 = _mm256_and_ps(exp8(t1), k1);
        if (e_out) {
            _mm256_storeu_ps(e_out + i, e0);
            _mm256_storeu_ps(e_out + i + 8, e1);
        }
        a0 = _mm256_add_ps(a0, e0);
        a1 = _mm256_add_ps(a1, e1);
        if (wsum) {   /* e is 0 wherever t was clamped */
            w0 = _mm256_fmadd_ps(e0, t0, w0);
            w1 = _mm256_fmadd_ps(e1, t1, w1);
        }
    }
    exp_tail(v, i, b1, mx, c, e_out, hsum8(_mm256_add_ps(a0, a1)), hsum8(_mm256_add_ps(w0, w1)), bsum, wsum);
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

#define exp16 tl_exp2_16

/* Lanes at or past index k of a chunk of 16 starting at i: the first k scores are in already. */
static inline unsigned past_first(int i, int k)
{
    return i >= k ? 0xFFFFu : k - i >= 16 ? 0u : (0xFFFFu << (k - i)) & 0xFFFFu;
}

T_AVX512 static void top_avx512(const float *v, int n, int k, int *ids, float *vals)
{
    topbuf b;
    tb_start(&b, v, k);
    int i = 0;
    /* two blocks a compare: after the first few thousand scores nearly none passes */
    for (; i + 32 <= n; i += 32) {
        __m512 t = _mm512_set1_ps(b.thr);
        __mmask16 m0 = _mm512_cmp_ps_mask(_mm512_loadu_ps(v + i), t, _CMP_GT_OQ);
        __mmask16 m1 = _mm512_cmp_ps_mask(_mm512_loadu_ps(v + i + 16), t, _CMP_GT_OQ);
        uint32_t mask = (uint32_t)(m0 & past_first(i, k)) | (uint32_t)(m1 & past_first(i + 16, k)) << 16;
        while (mask) {
            int j = __builtin_ctz(mask);
            mask &= mask - 1;
            if (v[i + j] > b.thr) tb_add(&b, v[i + j], i + j);   /* the bar may have risen */
        }
    }
    for (; i < n; i++)
        if (i >= k && v[i] > b.thr) tb_add(&b, v[i], i);
    tb_finish(&b, v, ids, vals);
}

/* One block's sums (see exp_avx512), with t = (v - mx) c: *wsum gets the sum of e * t. */
T_AVX512 static inline void exp_block_avx512(const float *v, int b0, int b1, float mx, float c, float *e_out,
                                             double *bsum, double *wsum)
{
    const __m512 vmx = _mm512_set1_ps(mx), vc = _mm512_set1_ps(c), lo = _mm512_set1_ps(T_MIN);
    int i = b0;
    /* float lanes, two per sum, each adding at most TL_VS_BLOCK / 32 terms before the
     * block's total goes to double. A lane below the range (or NaN) fails the compare, and
     * the masked add and store leave its garbage out. */
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, w0 = a0, w1 = a0;
    for (; i + 32 <= b1; i += 32) {
        __m512 t0 = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(v + i), vmx), vc);
        __m512 t1 = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(v + i + 16), vmx), vc);
        __mmask16 k0 = _mm512_cmp_ps_mask(t0, lo, _CMP_GE_OQ), k1 = _mm512_cmp_ps_mask(t1, lo, _CMP_GE_OQ);
        __m512 e0 = exp16(t0), e1 = exp16(t1);
        if (e_out) {
            _mm512_storeu_ps(e_out + i, _mm512_maskz_mov_ps(k0, e0));
            _mm512_storeu_ps(e_out + i + 16, _mm512_maskz_mov_ps(k1, e1));
        }
        a0 = _mm512_mask_add_ps(a0, k0, a0, e0);
        a1 = _mm512_mask_add_ps(a1, k1, a1, e1);
        if (wsum) {
            w0 = _mm512_mask3_fmadd_ps(e0, t0, w0, k0);
            w1 = _mm512_mask3_fmadd_ps(e1, t1, w1, k1);
        }
    }
    __m512 a = _mm512_add_ps(a0, a1), w = _mm512_add_ps(w0, w1);
    double bs = _mm512_reduce_add_pd(_mm512_add_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(a)),
                                                   _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)))));
    double ws = wsum ? _mm512_reduce_add_pd(_mm512_add_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(w)),
                                                          _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(w), 1)))))
                     : 0;
    exp_tail(v, i, b1, mx, c, e_out, bs, ws, bsum, wsum);
}

/* A piece's scores, block by block: compared with the k-th best and their maximum taken, then
 * (from L1) exponentiated against the maximum so far (acc_block). ge: the piece may hold ids
 * below ones already in, so a score equal to the bar may rank above it (a lower id). */
T_AVX512 static void acc_add_avx512(vs_acc *a, const float *v, int64_t i0, int n, int ge)
{
    for (int b0 = 0; b0 < n; b0 += TL_VS_BLOCK) {
        int b1 = n - b0 < TL_VS_BLOCK ? n : b0 + TL_VS_BLOCK, i = b0;
        __m512 vm = _mm512_set1_ps(-INFINITY);
        for (; i + 16 <= b1; i += 16) {
            __m512 x = _mm512_loadu_ps(v + i);
            vm = _mm512_max_ps(x, vm);   /* a NaN x leaves vm */
            __m512 t = _mm512_set1_ps(a->b.thr);
            __mmask16 m = ge ? _mm512_cmp_ps_mask(x, t, _CMP_GE_OQ) : _mm512_cmp_ps_mask(x, t, _CMP_GT_OQ);
            while (m) {
                int j = __builtin_ctz((unsigned)m);
                m &= m - 1;
                acc_offer(&a->s, v[i + j], i0 + i + j, ge);   /* the bar may have risen */
            }
        }
        float bm = _mm512_reduce_max_ps(vm);
        for (; i < b1; i++) {
            if (v[i] > bm) bm = v[i];
            acc_offer(&a->s, v[i], i0 + i, ge);
        }
        acc_block(a, v + b0, b1 - b0, bm);
    }
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
T_AVX512 static int count_avx512(const float *v, int n, float thr)
{
    int c = 0, i = 0;
    const __m512 t = _mm512_set1_ps(thr);
    for (; i + 16 <= n; i += 16) c += __builtin_popcount(_mm512_cmp_ps_mask(_mm512_loadu_ps(v + i), t, _CMP_GE_OQ));
    return c + count_generic(v + i, n - i, thr);
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

static exp_block_fn *exp_block(void)
{
#ifdef VS_X86
    int i = cur_isa();
    if (i == ISA_AVX512) return exp_block_avx512;
    if (i == ISA_AVX2) return exp_block_avx2;
#endif
    return exp_block_generic;
}

void vs_exp(const float *v, int n, float mx, float scale, float *e_out, double *bsum, double *sum, double *wsum)
{
    exp_blocks(exp_block(), v, n, mx, scale, e_out, bsum, sum, wsum);
}

void vs_top_sum(const float *v, int n, int k, int *ids, float *vals, double *sum, double *wsum)
{
#ifdef VS_X86
    if (cur_isa() == ISA_AVX512) {   /* one read of v: the accumulator over one piece */
        vs_acc a;
        tl_logit_stats st;
        vs_acc_init(&a, k, wsum ? TL_STATS_W : 0, 1.0f);
        acc_add_avx512(&a, v, 0, n, 0);
        vs_acc_finish(&a, 1, v, n, &st);
        memcpy(ids, st.ids, sizeof(int) * (size_t)st.k);
        memcpy(vals, st.vals, sizeof(float) * (size_t)st.k);
        *sum = st.sumexp;
        if (wsum) *wsum = st.wsum;
        return;
    }
#endif
    vs_top(v, n, k, ids, vals);
    *sum = 0;
    if (wsum) *wsum = 0;
    if (vals[0] > -INFINITY && vals[0] < INFINITY) vs_exp(v, n, vals[0], 1.0f, NULL, NULL, sum, wsum);
}

int vs_count_ge(const float *v, int n, float thr)
{
#ifdef VS_X86
    if (cur_isa() == ISA_AVX512) return count_avx512(v, n, thr);
#endif
    return count_generic(v, n, thr);
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

/* ---- the accumulator (vecsel.h) ---- */

/* Score x of id i into the list if it may be among the best k: above the bar, or (ge) equal to
 * it and above -inf. -inf and NaN never enter; the finish fills the list with them. The
 * accumulator's bar follows the list's. */
static void acc_offer(tl_cpu_scores *s, float x, int64_t i, int ge)
{
    vs_acc *a = (vs_acc *)s;
    if (x > a->b.thr || (ge && x == a->b.thr && x > -INFINITY)) tb_add(&a->b, x, (int)i);
    a->s.thr = a->b.thr;
}

void vs_acc_init(vs_acc *a, int k, unsigned want, float scale)
{
    tl_cpu_scores_init(&a->s, want, scale, acc_offer);
    a->b.n = 0;
    a->b.k = k < 1 ? 1 : k > TL_VS_MAX_K ? TL_VS_MAX_K : k;
    a->b.cap = TOPBUF;
    a->b.thr = -INFINITY;
}

tl_cpu_scores *vs_acc_scores(vs_acc *a) { return &a->s; }

/* e and e * d summed over v[0..n) against mx, as the vector passes do (n <= TL_VS_BLOCK: one
 * block, float lanes, then double). */
static void block_sums(const float *v, int n, float mx, float scale, double *z, double *w)
{
    double bs = 0, ws = 0;
    exp_block()(v, 0, n, mx, scale * LOG2E, NULL, &bs, w ? &ws : NULL);
    *z += bs;
    if (w) *w += ws * LN2;
}

/* A block of scores whose maximum is bm: the sums move to a new maximum, then the block's
 * terms join them. */
static void acc_block(vs_acc *a, const float *v, int n, float bm)
{
    tl_cpu_scores *s = &a->s;
    tl_cpu_scores_raise(s, bm);
    if (s->mx == -INFINITY || s->mx == INFINITY) return;
    int w = (s->want & TL_STATS_W) != 0;
    block_sums(v, n, s->mx, 1.0f, &s->z, w ? &s->w : NULL);
    if (s->want & TL_STATS_SCALED) block_sums(v, n, s->mx, s->scale, &s->zs, w ? &s->ws : NULL);
}

static void acc_add_portable(vs_acc *a, const float *v, int64_t i0, int n, int ge)
{
    for (int b0 = 0; b0 < n; b0 += TL_VS_BLOCK) {
        int b1 = n - b0 < TL_VS_BLOCK ? n : b0 + TL_VS_BLOCK;
        float bm = -INFINITY;
        for (int i = b0; i < b1; i++) {
            if (v[i] > bm) bm = v[i];
            acc_offer(&a->s, v[i], i0 + i, ge);
        }
        acc_block(a, v + b0, b1 - b0, bm);
    }
}

void vs_acc_add(vs_acc *a, const float *v, int64_t i0, int n)
{
    if (n <= 0) return;
    int ge = i0 < a->s.next;
    if (i0 + n > a->s.next) a->s.next = i0 + n;
    /* Scores already written, read once more: a block's maximum first, then its exps against
     * it, is about twice as fast here as the kernel's sixteen at a time against a running
     * maximum (whose cost hides behind the weights' loads only inside the product) */
    tl_cpu_scores_flush(&a->s);
#ifdef VS_X86
    if (cur_isa() == ISA_AVX512) {
        acc_add_avx512(a, v, i0, n, ge);
        return;
    }
#endif
    acc_add_portable(a, v, i0, n, ge);
}

void vs_acc_finish(const vs_acc *parts, int np, const float *v, int n, tl_logit_stats *out)
{
    int k = np > 0 ? parts[0].b.k : 1;
    if (k > n) k = n;
    topbuf m = {.n = 0, .k = k, .cap = TOPBUF, .thr = -INFINITY};
    memset(out, 0, sizeof *out);
    /* the other threads' accumulators sit in their cores' caches: ask for every line at once
     * rather than wait for one after another */
    for (int p = 0; p < np; p++)
        for (size_t o = 0; o < sizeof parts[p]; o += 64) __builtin_prefetch((const char *)&parts[p] + o);
    for (int p = 0; p < np; p++)
        for (int j = 0; j < parts[p].b.n; j++) {   /* ids differ between parts: keys are distinct */
            m.a[m.n++] = parts[p].b.a[j];
            if (m.n >= m.cap) tb_cut(&m);
        }
    if (np > 0) tl_cpu_scores_merge(&parts[0].s, sizeof *parts, np, out);
    if (m.n > k) tb_cut(&m);
    tb_sort(&m);
    out->k = k;
    for (int j = 0; j < m.n; j++) out->ids[j] = (int)~(uint32_t)m.a[j];
    /* fewer than k above -inf: the rest are -inf and NaN scores, lower ids first */
    for (int i = 0, j = m.n; j < k && i < n; i++)
        if (key(v[i]) == -INFINITY) out->ids[j++] = i;
    /* the scores from their keys: no read of v, whose lines another core may hold; a zero
     * from v, since the key counts -0 as +0 */
    for (int j = 0; j < k; j++) {
        out->vals[j] = j < m.n ? score_of(m.a[j]) : -INFINITY;
        if (out->vals[j] == 0) out->vals[j] = v[out->ids[j]];
    }
    out->has = np > 0 ? parts[0].s.want : 0;
    out->scale = np > 0 ? parts[0].s.scale : 1.0f;
}
