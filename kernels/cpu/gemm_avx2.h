/* A prefill's product on AVX2 (included by mm_avx2.c after mm_tmpl.h): a register-blocked GEMM
 * over weights packed per panel. mm_tmpl.h's 4-row x 2-token tile keeps 8 accumulators and
 * makes 6 loads (4 of them weights to widen) for 8 FMAs, so it is bound by loads and widening,
 * not by the two FMA pipes. Here:
 *   - a panel of 16 weight rows x GA_KC columns is widened to fp32 once and transposed to
 *     [k][16 rows] (64 bytes a k), so that 16 rows are two aligned vector loads;
 *   - a micro-tile is 6 tokens x 16 rows: 12 accumulators, and per k 2 loads of the panel, 6
 *     broadcasts of x (straight from x's rows, which need no packing) and 12 FMAs;
 *   - k goes in blocks of GA_KC and tokens in blocks of at most GA_NC, so a block of x (GA_NC x
 *     GA_KC floats, 240 KiB at most) stays in L2 while the chunk's panels pass through it, and
 *     the panel (16 KiB) stays in L1 while the tokens pass over it.
 * Each output's terms add in one fp32 lane along k in blocks of GA_KC, the blocks added to the
 * output in k order: the same fp32 sums as the reference, in another order. */
#include "transpose_avx2.h"

#define GA_MR 16            /* weight rows a micro-tile: two vectors */
#define GA_NR 6             /* tokens a micro-tile */
#define GA_KC 256           /* columns a panel */
#define GA_NC 240           /* tokens a block of x at most (a multiple of GA_NR) */
#define GA_MIN_T 16         /* fewer tokens: mm_tmpl.h's tiles (tools/bench/gemm_avx2.c: the GEMM
                              * took 1.22x the tiles' time at 8 tokens, 0.95-1.17x at 10-14, 0.79-1.22x
                              * at 16 (median 0.93 over four runs), 0.65-0.98x at 20-24) */

/* Rows r..r+nr-1 (nr <= 16) of W over columns [k0, k0+kc) into panel[kc][16] as fp32; rows
 * from nr on are zero. Also prefetches the next panel's rows (next: their first weight, or
 * NULL), so their lines are on the way while this panel is multiplied. */
static inline void ga_pack(float *panel, const void *w, int dt, int64_t cols, int64_t r, int nr, int64_t k0,
                           int kc, const char *next)
{
    const size_t es = dt == TL_F32 ? 4 : 2;
    for (int g = 0; g < GA_MR; g += 8) {
        int gr = nr - g < 8 ? nr - g : 8;   /* valid rows in this group of 8 */
        int k = 0;
        if (gr == 8)
            for (; k + 8 <= kc; k += 8) {
                __m256 v[8];
                for (int i = 0; i < 8; i++)
                    v[i] = mm_loadw((const char *)w + (size_t)(r + g + i) * (size_t)cols * es, dt, k0 + k);
                tl_avx2_transpose8(v);
                for (int j = 0; j < 8; j++)
                    _mm256_store_ps(panel + (size_t)(k + j) * GA_MR + g, v[j]);
            }
        for (; k < kc; k++)
            for (int i = 0; i < 8; i++)
                panel[(size_t)k * GA_MR + g + i] =
                    i < gr ? mm_scalarw((const char *)w + (size_t)(r + g + i) * (size_t)cols * es, dt, k0 + k) : 0.0f;
    }
    if (next)
        for (int i = 0; i < GA_MR; i++)
            for (size_t b = 0; b < (size_t)kc * es; b += 64)
                __builtin_prefetch(next + (size_t)i * (size_t)cols * es + b, 0, 2);
}

/* One token's 16 outputs of a micro-tile: o[0 .. nr) (+)= c0, c1. */
static inline void ga_store(float *o, __m256 c0, __m256 c1, int nr, int accumulate)
{
    if (nr == GA_MR) {
        if (accumulate) {
            c0 = _mm256_add_ps(c0, _mm256_loadu_ps(o));
            c1 = _mm256_add_ps(c1, _mm256_loadu_ps(o + 8));
        }
        _mm256_storeu_ps(o, c0);
        _mm256_storeu_ps(o + 8, c1);
        return;
    }
    _Alignas(32) float tmp[GA_MR];
    _mm256_store_ps(tmp, c0);
    _mm256_store_ps(tmp + 8, c1);
    for (int j = 0; j < nr; j++)
        o[j] = accumulate ? o[j] + tmp[j] : tmp[j];
}

/* out[t + i][r .. r+nr) (+)= panel . x[t + i] over the panel's kc columns, i < NT. NT is a
 * constant at each call; the twelve accumulators are named variables, not an array (GCC kept
 * an array of them in memory, storing every one at every k: 30% of the peak). */
#define GA_FMA2(i)                                                              \
    if (NT > i) {                                                               \
        __m256 b = _mm256_broadcast_ss(x + (size_t)(i) * (size_t)cols + k);    \
        c##i##a = _mm256_fmadd_ps(w0, b, c##i##a);                              \
        c##i##b = _mm256_fmadd_ps(w1, b, c##i##b);                              \
    }
#define GA_STORE(i) \
    if (NT > i) ga_store(out + (size_t)(i) * (size_t)rows, c##i##a, c##i##b, nr, accumulate)
static inline __attribute__((always_inline)) void ga_tile(const float *panel, const float *x, int64_t cols, int kc,
                                                          float *out, int64_t rows, int nr, int NT, int accumulate)
{
    __m256 c0a = _mm256_setzero_ps(), c0b = c0a, c1a = c0a, c1b = c0a, c2a = c0a, c2b = c0a, c3a = c0a,
           c3b = c0a, c4a = c0a, c4b = c0a, c5a = c0a, c5b = c0a;
    for (int k = 0; k < kc; k++) {
        __m256 w0 = _mm256_load_ps(panel + (size_t)k * GA_MR), w1 = _mm256_load_ps(panel + (size_t)k * GA_MR + 8);
        GA_FMA2(0)
        GA_FMA2(1)
        GA_FMA2(2)
        GA_FMA2(3)
        GA_FMA2(4)
        GA_FMA2(5)
    }
    GA_STORE(0);
    GA_STORE(1);
    GA_STORE(2);
    GA_STORE(3);
    GA_STORE(4);
    GA_STORE(5);
}

/* Rows [r0, r1) for tokens [t0, t1) over columns [k0, k0+kc): one panel at a time, every
 * micro-tile of tokens over it. */
static void ga_block(const tl_cpu_mm *a, int dt, float *panel, int64_t r0, int64_t r1, int t0, int t1, int64_t k0,
                     int kc)
{
    const size_t es = dt == TL_F32 ? 4 : 2;
    for (int64_t r = r0; r < r1; r += GA_MR) {
        int nr = r1 - r < GA_MR ? (int)(r1 - r) : GA_MR;
        const char *next = r + GA_MR < r1 ? (const char *)a->w + ((size_t)(r + GA_MR) * (size_t)a->cols + (size_t)k0) * es
                                          : NULL;
        ga_pack(panel, a->w, dt, a->cols, r, nr, k0, kc, next);
        for (int t = t0; t < t1; t += GA_NR) {
            const float *x = a->x + (size_t)t * (size_t)a->cols + (size_t)k0;
            float *o = a->out + (size_t)t * (size_t)a->rows + (size_t)r;
            switch (t1 - t < GA_NR ? t1 - t : GA_NR) {
            case 1: ga_tile(panel, x, a->cols, kc, o, a->rows, nr, 1, k0 > 0); break;
            case 2: ga_tile(panel, x, a->cols, kc, o, a->rows, nr, 2, k0 > 0); break;
            case 3: ga_tile(panel, x, a->cols, kc, o, a->rows, nr, 3, k0 > 0); break;
            case 4: ga_tile(panel, x, a->cols, kc, o, a->rows, nr, 4, k0 > 0); break;
            case 5: ga_tile(panel, x, a->cols, kc, o, a->rows, nr, 5, k0 > 0); break;
            default: ga_tile(panel, x, a->cols, kc, o, a->rows, nr, 6, k0 > 0); break;
            }
        }
    }
}

/* The product for rows [r0, r1), every token: k blocks outermost, so each output is added to
 * in k order; token blocks of equal size (a multiple of 6) up to GA_NC. */
static void ga_rows(const tl_cpu_mm *a, int64_t r0, int64_t r1, int dt)
{
    _Alignas(64) float panel[GA_KC * GA_MR];
    int nblk = (a->T + GA_NC - 1) / GA_NC;
    int nc = (a->T + nblk - 1) / nblk;
    nc = (nc + GA_NR - 1) / GA_NR * GA_NR;
    for (int64_t k0 = 0; k0 < a->cols; k0 += GA_KC) {
        int kc = a->cols - k0 < GA_KC ? (int)(a->cols - k0) : GA_KC;
        for (int t0 = 0; t0 < a->T; t0 += nc)
            ga_block(a, dt, panel, r0, r1, t0, t0 + nc < a->T ? t0 + nc : a->T, k0, kc);
    }
}
