/* AVX-512 BF16: bf16 weights go straight into VDPBF16PS, 32 products per instruction with
 * fp32 accumulation. In the exact mode (the default) x is split into bf16 hi + lo (x ~= hi +
 * lo to about 2^-17 relative) and each weight meets both halves, so the result keeps fp32-level
 * accuracy. With it off, a prefill's x is rounded to bf16 once (as llama.cpp and a bf16
 * transformers run do): one instruction per 32 weights, half the arithmetic (docs/accuracy.md). Each step also prefetches the rows of the next tile: a row of a
 * 2048-wide matrix is one 4 KiB page, and the hardware prefetcher starts over on every page.
 * f32/f16 weights use the AVX-512F kernels. Built with -mavx512bf16; only called after
 * __builtin_cpu_supports says so. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "cpu.h"
#include "mm.h"
#include "sum4_avx512.h"

void tl_cpu_mm_f32_avx512(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_mm_f16_avx512(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_attn_avx512(const tl_cpu_attn *a, int t, int kvh, float *scores);

#define BH_RB 4
#define BH_TB 6
#ifndef BH_KC
#define BH_KC 2048   /* T x 2048 packed activations (8 KiB a token) stay in a 1 MiB L2 */
#endif
#define BH_INLINE static inline __attribute__((always_inline))

/* The scalar twin of VCVTNEPS2BF16 (for the last partial vector): round to nearest even,
 * NaN stays NaN, a subnormal input counts as zero. */
static uint16_t f32_to_bf16_rne(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    if (!(u & 0x7f800000u))
        return (uint16_t)((u >> 16) & 0x8000);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

void tl_cpu_pack_bf16(uint16_t *xpack, const float *x, int T, int64_t cols, int64_t cols_pad, int halves)
{
    for (int t = 0; t < T; t++) {
        uint16_t *hi = xpack + (size_t)t * (size_t)halves * (size_t)cols_pad, *lo = hi + cols_pad;
        const float *xr = x + (size_t)t * (size_t)cols;
        int64_t i = 0;
        for (; i + 16 <= cols; i += 16) {
            __m512 v = _mm512_loadu_ps(xr + i);
            __m256i h = (__m256i)_mm512_cvtneps_pbh(v);
            _mm256_storeu_si256((__m256i *)(hi + i), h);
            if (halves == 2) {
                __m512 hf = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
                _mm256_storeu_si256((__m256i *)(lo + i), (__m256i)_mm512_cvtneps_pbh(_mm512_sub_ps(v, hf)));
            }
        }
        for (; i < cols; i++) {
            hi[i] = f32_to_bf16_rne(xr[i]);
            if (halves == 2)
                lo[i] = f32_to_bf16_rne(xr[i] - tl_cpu_bf16_to_f32(hi[i]));
        }
        for (i = cols; i < cols_pad; i++) {
            hi[i] = 0;
            if (halves == 2)
                lo[i] = 0;
        }
    }
}

/* One k step of a tile: every weight vector meets each token's x (one or two halves). */
BH_INLINE void bh_step(__m512 acc[BH_RB][BH_TB], const __m512bh *wv, const uint16_t *const *xr, int nt, int64_t k,
                       int64_t cols_pad, const int halves)
{
    for (int j = 0; j < nt; j++) {
        __m512bh xh = (__m512bh)_mm512_loadu_si512(xr[j] + k);
        for (int i = 0; i < BH_RB; i++)
            acc[i][j] = _mm512_dpbf16_ps(acc[i][j], wv[i], xh);
        if (halves == 2) {
            __m512bh xl = (__m512bh)_mm512_loadu_si512(xr[j] + cols_pad + k);
            for (int i = 0; i < BH_RB; i++)
                acc[i][j] = _mm512_dpbf16_ps(acc[i][j], wv[i], xl);
        }
    }
}

/* Rows r..min(r+BH_RB, rend)-1 times tokens t..t+nt-1 over k in [k0, k1); halves is a
 * constant at each call, so the one-half loop carries no second load or product. */
BH_INLINE void bh_tile(const tl_cpu_mm *a, int nt, int64_t r, int64_t rend, int t, int64_t k0,
                       int64_t k1, int accumulate, const int halves)
{
    const int nr = rend - r < BH_RB ? (int)(rend - r) : BH_RB;
    const uint16_t *wr[BH_RB], *xr[BH_TB];
    __m512 acc[BH_RB][BH_TB];
    for (int i = 0; i < BH_RB; i++)
        wr[i] = (const uint16_t *)a->w + (size_t)(r + (i < nr ? i : nr - 1)) * (size_t)a->cols;
    for (int j = 0; j < nt; j++)
        xr[j] = a->xpack + (size_t)(t + j) * (size_t)halves * (size_t)a->cols_pad;
    for (int i = 0; i < BH_RB; i++)
        for (int j = 0; j < nt; j++)
            acc[i][j] = _mm512_setzero_ps();
    int64_t k = k0;
    const size_t next_tile = (size_t)BH_RB * (size_t)a->cols;
    for (; k + 32 <= k1; k += 32) {
        __m512bh wv[BH_RB];
        for (int i = 0; i < BH_RB; i++)   /* the same line of the next tile's rows */
            __builtin_prefetch(wr[i] + k + next_tile, 0, 3);
        for (int i = 0; i < BH_RB; i++)
            wv[i] = (__m512bh)_mm512_loadu_si512(wr[i] + k);
        bh_step(acc, wv, xr, nt, k, a->cols_pad, halves);
    }
    if (k < k1) {   /* the last partial vector: masked weights, x is zero-padded */
        __mmask32 m = (__mmask32)((1ull << (k1 - k)) - 1);
        __m512bh wv[BH_RB];
        for (int i = 0; i < BH_RB; i++)
            wv[i] = (__m512bh)_mm512_maskz_loadu_epi16(m, wr[i] + k);
        bh_step(acc, wv, xr, nt, k, a->cols_pad, halves);
    }
    const __mmask8 rows = (__mmask8)((1u << nr) - 1);
    for (int j = 0; j < nt; j++) {   /* a token's 4 sums are 4 neighbouring outputs */
        float *o = a->out + (size_t)(t + j) * (size_t)a->rows + (size_t)r;
        __m128 s = tl_a5_sum4(acc[0][j], acc[1][j], acc[2][j], acc[3][j]);
        if (accumulate)
            s = _mm_add_ps(s, _mm_maskz_loadu_ps(rows, o));
        _mm_mask_storeu_ps(o, rows, s);
    }
}

BH_INLINE void bh_rows(const tl_cpu_mm *a, int64_t r0, int64_t r1, const int halves)
{
    const int64_t kc = a->T >= BH_TB ? BH_KC : a->cols;
    for (int64_t k0 = 0; k0 < a->cols; k0 += kc) {
        int64_t k1 = k0 + kc < a->cols ? k0 + kc : a->cols;
        for (int64_t r = r0; r < r1; r += BH_RB) {
            int t = 0;
            for (; t + BH_TB <= a->T; t += BH_TB)
                bh_tile(a, BH_TB, r, r1, t, k0, k1, k0 > 0, halves);
            switch (a->T - t) {   /* the last 1..5 tokens in one tile (constants: registers) */
            case 5: bh_tile(a, 5, r, r1, t, k0, k1, k0 > 0, halves); break;
            case 4: bh_tile(a, 4, r, r1, t, k0, k1, k0 > 0, halves); break;
            case 3: bh_tile(a, 3, r, r1, t, k0, k1, k0 > 0, halves); break;
            case 2: bh_tile(a, 2, r, r1, t, k0, k1, k0 > 0, halves); break;
            case 1: bh_tile(a, 1, r, r1, t, k0, k1, k0 > 0, halves); break;
            default: break;
            }
        }
    }
}

/* One token (a decode step): one row at a time, four accumulators along k. A thread's rows are
 * contiguous, so it reads its share of the matrix as a single sequential stream, which the
 * hardware prefetcher follows without help; interleaving 4 rows (4 streams a page apart, as
 * bh_tile does) read 8 GB of bf16 weights at 80% of the read probe's rate on this 2-core Zen 4,
 * this loop at the probe's rate. The product is bound by memory, so the exact split costs
 * nothing here. */
BH_INLINE void bh_vec(const tl_cpu_mm *a, int64_t r0, int64_t r1, const int halves)
{
    const uint16_t *xh = a->xpack, *xl = a->xpack + a->cols_pad;
    const int64_t cols = a->cols;
    for (int64_t r = r0; r < r1; r++) {
        const uint16_t *w = (const uint16_t *)a->w + (size_t)r * (size_t)cols;
        __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
        int64_t k = 0;
        for (; k + 128 <= cols; k += 128)
            for (int u = 0; u < 4; u++) {
                __m512bh wv = (__m512bh)_mm512_loadu_si512(w + k + 32 * u);
                acc[u] = _mm512_dpbf16_ps(acc[u], wv, (__m512bh)_mm512_loadu_si512(xh + k + 32 * u));
                if (halves == 2)
                    acc[u] = _mm512_dpbf16_ps(acc[u], wv, (__m512bh)_mm512_loadu_si512(xl + k + 32 * u));
            }
        for (int u = 0; k < cols; k += 32, u++) {   /* x is zero-padded to cols_pad */
            __mmask32 m = k + 32 <= cols ? (__mmask32)~0u : (__mmask32)((1ull << (cols - k)) - 1);
            __m512bh wv = (__m512bh)_mm512_maskz_loadu_epi16(m, w + k);
            acc[u] = _mm512_dpbf16_ps(acc[u], wv, (__m512bh)_mm512_loadu_si512(xh + k));
            if (halves == 2)
                acc[u] = _mm512_dpbf16_ps(acc[u], wv, (__m512bh)_mm512_loadu_si512(xl + k));
        }
        a->out[r] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
    }
}

static void mm_bf16_avx512bf16(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    if (a->T == 1)
        a->halves == 2 ? bh_vec(a, r0, r1, 2) : bh_vec(a, r0, r1, 1);
    else if (a->halves == 2)
        bh_rows(a, r0, r1, 2);
    else
        bh_rows(a, r0, r1, 1);
}

static int supported(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16") &&
           __builtin_cpu_supports("avx512vnni");   /* every AVX512_BF16 CPU so far has VNNI */
}

const tl_cpu_isa tl_cpu_isa_avx512bf16 = {
    .name = "avx512bf16",
    .supported = supported,
    .mm = {tl_cpu_mm_f32_avx512, tl_cpu_mm_f16_avx512, mm_bf16_avx512bf16, tl_cpu_mm_q8_0_avx512vnni,
           tl_cpu_mm_q4_0_avx512vnni},
    .qbias = {[TL_Q8_0] = 128, [TL_Q4_0] = 8},
    .qpack = tl_cpu_qpack_avx512vnni,
    .attn = tl_cpu_attn_avx512,
    .want_pack = {0, 0, 1},
    .pack_align = 32,
};
