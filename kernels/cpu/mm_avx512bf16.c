/* AVX-512 BF16: bf16 weights go straight into VDPBF16PS, 32 products per instruction with
 * fp32 accumulation. x is split once per product into bf16 hi + lo (x ~= hi + lo to about
 * 2^-17 relative), and each weight meets both halves, so the result keeps fp32-level
 * accuracy instead of rounding the activations to bf16. Each step also prefetches the rows of
 * the next tile: a row of a 2048-wide matrix is one 4 KiB page, and the hardware prefetcher
 * starts over on every page. f32/f16 weights use the AVX-512F
 * kernels. Built with -mavx512bf16; only called after __builtin_cpu_supports says so. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "mm.h"

void tl_cpu_mm_f32_avx512(const tl_cpu_mm *a, int64_t r0, int64_t r1);
void tl_cpu_mm_f16_avx512(const tl_cpu_mm *a, int64_t r0, int64_t r1);

#define BH_RB 4
#define BH_TB 6
#ifndef BH_KC
#define BH_KC 2048   /* T x 2048 packed activations (8 KiB a token) stay in a 1 MiB L2 */
#endif
#define BH_INLINE static inline __attribute__((always_inline))

static uint16_t f32_to_bf16_rne(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)   /* NaN stays NaN */
        return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

void tl_cpu_pack_bf16(uint16_t *xpack, const float *x, int T, int64_t cols, int64_t cols_pad)
{
    for (int t = 0; t < T; t++) {
        uint16_t *hi = xpack + (size_t)t * 2 * (size_t)cols_pad, *lo = hi + cols_pad;
        const float *xr = x + (size_t)t * (size_t)cols;
        for (int64_t i = 0; i < cols; i++) {
            uint16_t h = f32_to_bf16_rne(xr[i]);
            uint32_t hu = (uint32_t)h << 16;
            float hf;
            memcpy(&hf, &hu, sizeof hf);
            hi[i] = h;
            lo[i] = f32_to_bf16_rne(xr[i] - hf);
        }
        for (int64_t i = cols; i < cols_pad; i++)
            hi[i] = lo[i] = 0;
    }
}

BH_INLINE void bh_tile(const tl_cpu_mm *a, int nt, int64_t r, int64_t rend, int t, int64_t k0,
                       int64_t k1, int accumulate)
{
    const int nr = rend - r < BH_RB ? (int)(rend - r) : BH_RB;
    const uint16_t *wr[BH_RB], *xr[BH_TB];
    __m512 acc[BH_RB][BH_TB];
    for (int i = 0; i < BH_RB; i++)
        wr[i] = (const uint16_t *)a->w + (size_t)(r + (i < nr ? i : nr - 1)) * (size_t)a->cols;
    for (int j = 0; j < nt; j++)
        xr[j] = a->xpack + (size_t)(t + j) * 2 * (size_t)a->cols_pad;
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
        for (int j = 0; j < nt; j++) {
            __m512bh xh = (__m512bh)_mm512_loadu_si512(xr[j] + k);
            __m512bh xl = (__m512bh)_mm512_loadu_si512(xr[j] + a->cols_pad + k);
            for (int i = 0; i < BH_RB; i++) {
                acc[i][j] = _mm512_dpbf16_ps(acc[i][j], wv[i], xh);
                acc[i][j] = _mm512_dpbf16_ps(acc[i][j], wv[i], xl);
            }
        }
    }
    if (k < k1) {   /* the last partial vector: masked weights, x is zero-padded */
        __mmask32 m = (__mmask32)((1ull << (k1 - k)) - 1);
        __m512bh wv[BH_RB];
        for (int i = 0; i < BH_RB; i++)
            wv[i] = (__m512bh)_mm512_maskz_loadu_epi16(m, wr[i] + k);
        for (int j = 0; j < nt; j++) {
            __m512bh xh = (__m512bh)_mm512_loadu_si512(xr[j] + k);
            __m512bh xl = (__m512bh)_mm512_loadu_si512(xr[j] + a->cols_pad + k);
            for (int i = 0; i < BH_RB; i++) {
                acc[i][j] = _mm512_dpbf16_ps(acc[i][j], wv[i], xh);
                acc[i][j] = _mm512_dpbf16_ps(acc[i][j], wv[i], xl);
            }
        }
    }
    for (int j = 0; j < nt; j++)
        for (int i = 0; i < nr; i++) {
            float s = _mm512_reduce_add_ps(acc[i][j]);
            float *o = a->out + (size_t)(t + j) * (size_t)a->rows + (size_t)(r + i);
            *o = accumulate ? *o + s : s;
        }
}

static void mm_bf16_avx512bf16(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    const int64_t kc = a->T >= BH_TB ? BH_KC : a->cols;
    for (int64_t k0 = 0; k0 < a->cols; k0 += kc) {
        int64_t k1 = k0 + kc < a->cols ? k0 + kc : a->cols;
        for (int64_t r = r0; r < r1; r += BH_RB) {
            int t = 0;
            for (; t + BH_TB <= a->T; t += BH_TB)
                bh_tile(a, BH_TB, r, r1, t, k0, k1, k0 > 0);
            for (; t < a->T; t++)
                bh_tile(a, 1, r, r1, t, k0, k1, k0 > 0);
        }
    }
}

static int supported(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
}

const tl_cpu_isa tl_cpu_isa_avx512bf16 = {
    .name = "avx512bf16",
    .supported = supported,
    .mm = {tl_cpu_mm_f32_avx512, tl_cpu_mm_f16_avx512, mm_bf16_avx512bf16},
    .want_pack = {0, 0, 1},
    .pack_align = 32,
};
