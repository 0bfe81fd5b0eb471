/* Q8_0/Q4_0 products with the Armv8.2 dot product (SDOT, vdotq_s32: each int32 lane adds the
 * products of 4 signed bytes). Both x and the weights are signed bytes, so no bias is needed:
 * Q8_0 weights go in as they are, Q4_0 nibbles as (n & 15) - 8 and (n >> 4) - 8. x is
 * quantized in tl_cpu_pack_q8's layout (blocks in order, one scale each). Each block's integer
 * sums are exact, so the result is tl_cpu_mm_q*_generic's with only the order of the float
 * additions changed. Built with -march=armv8.2-a+dotprod (kernels/cpu/CMakeLists.txt) and only
 * called when the CPU says it has the extension (mm_neon.c: the "neon-dotprod" set). */
#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

#include "mm.h"
#include "tokenloop/quant.h"

#define DP_INLINE static inline __attribute__((always_inline))
#define DP_RB 4    /* rows in a prefill tile */
#define DP_TB 4    /* tokens: 16 float accumulators, 8 x vectors, 2 weight ones */
#define DP_PF 1024 /* bytes ahead in a decode's one stream of weights */

DP_INLINE float dp_scale(const uint8_t *blk)
{
    __fp16 h;   /* blocks start anywhere: no aligned load */
    memcpy(&h, blk, 2);
    return (float)h;
}

/* A block's 32 weights as two vectors of signed bytes: elements 0-15 and 16-31. */
DP_INLINE void dp_weights(int dt, const uint8_t *blk, int8x16_t *lo, int8x16_t *hi)
{
    if (dt == TL_Q8_0) {
        *lo = vld1q_s8((const int8_t *)blk + 2);
        *hi = vld1q_s8((const int8_t *)blk + 18);
    } else {   /* element j in the low nibble of byte j, element j + 16 in its high one */
        const uint8x16_t v = vld1q_u8(blk + 2), m4 = vdupq_n_u8(15);
        const int8x16_t eight = vdupq_n_s8(8);
        *lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(v, m4)), eight);
        *hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), eight);
    }
}

/* 4 int32 lanes whose sum is the block's exact integer product */
DP_INLINE int32x4_t dp_dot(int8x16_t wlo, int8x16_t whi, int8x16_t xlo, int8x16_t xhi)
{
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), wlo, xlo), whi, xhi);
}

/* Rows r..r+nr-1 (nr <= DP_RB; missing rows repeat the last, computed and not stored) times
 * tokens t..t+NT-1, over every block. */
DP_INLINE void dp_tile(const tl_cpu_mm *a, int dt, int NT, int64_t r, int nr, int t)
{
    const int64_t nb = a->cols / TL_QK;
    const size_t bb = dt == TL_Q8_0 ? sizeof(tl_block_q8_0) : sizeof(tl_block_q4_0);
    const uint8_t *wr[DP_RB];
    for (int i = 0; i < DP_RB; i++)
        wr[i] = (const uint8_t *)a->w + (size_t)(r + (i < nr ? i : nr - 1)) * (size_t)nb * bb;
    const int8_t *xq[DP_TB];
    const float *xd[DP_TB];
    for (int u = 0; u < NT; u++) {
        xq[u] = a->xq + (size_t)(t + u) * (size_t)a->cols;
        xd[u] = a->xd + (size_t)(t + u) * (size_t)nb;
    }
    float32x4_t acc[DP_RB][DP_TB];
    for (int i = 0; i < DP_RB; i++)
        for (int u = 0; u < NT; u++)
            acc[i][u] = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < nb; b++) {
        int8x16_t xlo[DP_TB], xhi[DP_TB];
        for (int u = 0; u < NT; u++) {
            xlo[u] = vld1q_s8(xq[u] + b * TL_QK);
            xhi[u] = vld1q_s8(xq[u] + b * TL_QK + 16);
        }
        for (int i = 0; i < DP_RB; i++) {
            const uint8_t *blk = wr[i] + (size_t)b * bb;
            int8x16_t wlo, whi;
            dp_weights(dt, blk, &wlo, &whi);
            const float dw = dp_scale(blk);
            for (int u = 0; u < NT; u++) {
                const float32x4_t s = vcvtq_f32_s32(dp_dot(wlo, whi, xlo[u], xhi[u]));
                acc[i][u] = vfmaq_n_f32(acc[i][u], s, dw * xd[u][b]);
            }
        }
    }
    for (int i = 0; i < nr; i++)
        for (int u = 0; u < NT; u++)
            a->out[(size_t)(t + u) * (size_t)a->rows + (size_t)(r + i)] = vaddvq_f32(acc[i][u]);
}

DP_INLINE void dp_rows(const tl_cpu_mm *a, int dt, int64_t r0, int64_t r1)
{
    for (int64_t r = r0; r < r1; r += DP_RB) {
        int nr = r1 - r < DP_RB ? (int)(r1 - r) : DP_RB;
        int t = 0;
        for (; t + DP_TB <= a->T; t += DP_TB)
            dp_tile(a, dt, DP_TB, r, nr, t);
        switch (a->T - t) {   /* the last few tokens, each tile shape compiled on its own */
        case 3: dp_tile(a, dt, 3, r, nr, t); break;
        case 2: dp_tile(a, dt, 2, r, nr, t); break;
        case 1: dp_tile(a, dt, 1, r, nr, t); break;
        default: break;
        }
    }
}

/* One token (a decode step): one row at a time, so each thread's rows are one sequential
 * stream, with a software prefetch ahead in it; two accumulators alternate so that consecutive
 * blocks' FMAs do not wait for each other. One row at a time also sums every row the same way
 * wherever the backend cuts the rows among threads. */
DP_INLINE float32x4_t dp_block(const tl_cpu_mm *a, int dt, const uint8_t *blk, int64_t b, float32x4_t acc)
{
    int8x16_t wlo, whi;
    dp_weights(dt, blk, &wlo, &whi);
    const int32x4_t s = dp_dot(wlo, whi, vld1q_s8(a->xq + b * TL_QK), vld1q_s8(a->xq + b * TL_QK + 16));
    return vfmaq_n_f32(acc, vcvtq_f32_s32(s), dp_scale(blk) * a->xd[b]);
}

DP_INLINE void dp_vec(const tl_cpu_mm *a, int dt, int64_t r0, int64_t r1)
{
    const int64_t nb = a->cols / TL_QK;
    const size_t bb = dt == TL_Q8_0 ? sizeof(tl_block_q8_0) : sizeof(tl_block_q4_0);
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *w = (const uint8_t *)a->w + (size_t)r * (size_t)nb * bb;
        float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = vdupq_n_f32(0.0f);
        int64_t b = 0;
        for (; b + 2 <= nb; b += 2) {
            __builtin_prefetch(w + (size_t)b * bb + DP_PF, 0, 2);
            acc0 = dp_block(a, dt, w + (size_t)b * bb, b, acc0);
            acc1 = dp_block(a, dt, w + (size_t)(b + 1) * bb, b + 1, acc1);
        }
        if (b < nb)
            acc0 = dp_block(a, dt, w + (size_t)b * bb, b, acc0);
        a->out[r] = vaddvq_f32(vaddq_f32(acc0, acc1));
    }
}

void tl_cpu_mm_q8_0_neon_dotprod(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    if (a->T == 1)
        dp_vec(a, TL_Q8_0, r0, r1);
    else
        dp_rows(a, TL_Q8_0, r0, r1);
}

void tl_cpu_mm_q4_0_neon_dotprod(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    if (a->T == 1)
        dp_vec(a, TL_Q4_0, r0, r1);
    else
        dp_rows(a, TL_Q4_0, r0, r1);
}
