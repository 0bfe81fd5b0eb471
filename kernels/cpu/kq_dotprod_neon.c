/* K-quant products (Q4_K, Q5_K, Q6_K; kq.h has the definition) with the Armv8.2 dot product
 * (SDOT): every weight is a small unsigned integer (Q4_K 0..15, Q5_K 0..31, Q6_K 0..63), so it
 * goes into SDOT as a signed byte against x's Q8_K bytes, and each sub-block's 16- or 32-element
 * sum comes out exact. The scales and mins are applied to those integer sums as the portable
 * kernel does (kq_generic.c), and each super-block then takes its one float line (kq_block_f):
 * only the order of the integer additions differs, which changes no sum. A row at a time, every
 * token against it (a decode is one stream through the weights; a prefill re-reads a row from
 * L1). Built with -march=armv8.2-a+dotprod; called only in the sets that need the extension
 * (tl_cpu_kq_kernel: neon-dotprod, neon-bf16). */
#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

#include "kq.h"
#include "tokenloop/quant.h"

#define KN_INLINE static inline __attribute__((always_inline))

KN_INLINE float kn_f16(const uint8_t *p)
{
    __fp16 h;
    memcpy(&h, p, 2);
    return (float)h;
}

/* 4 lanes summing to the product of 32 weights (two vectors) and 32 bytes of x */
KN_INLINE int32x4_t kn_dot32(uint8x16_t w0, uint8x16_t w1, const int8_t *x)
{
    int32x4_t s = vdotq_s32(vdupq_n_s32(0), vreinterpretq_s8_u8(w0), vld1q_s8(x));
    return vdotq_s32(s, vreinterpretq_s8_u8(w1), vld1q_s8(x + 16));
}

/* Q4_K (q5 = 0) and Q5_K: sub-block 2g is the low nibbles of q[32g..32g+31], 2g + 1 the high
 * ones; Q5_K's fifth bits are bit 2g (2g + 1) of qh[l]. */
KN_INLINE float kn_q45(const uint8_t *blk, int q5, const int8_t *x8, const int16_t *bs, float dx)
{
    uint8_t sc[8], m[8];
    const uint8_t *s = blk + 4;
    for (int j = 0; j < 4; j++) {   /* the 6-bit scales and mins, as kq_generic.c unpacks them */
        sc[j] = s[j] & 63;
        m[j] = s[j + 4] & 63;
        sc[j + 4] = (uint8_t)((s[j + 8] & 0xF) | (s[j] >> 6) << 4);
        m[j + 4] = (uint8_t)((s[j + 8] >> 4) | (s[j + 4] >> 6) << 4);
    }
    const uint8_t *q = blk + (q5 ? 48 : 16);
    const uint8x16_t m4 = vdupq_n_u8(15), b4 = vdupq_n_u8(16);
    uint8x16_t h0 = vdupq_n_u8(0), h1 = h0;
    if (q5) {
        h0 = vld1q_u8(blk + 16);
        h1 = vld1q_u8(blk + 32);
    }
    int32x4_t acc = vdupq_n_s32(0);
    for (int g = 0; g < 4; g++) {
        const uint8x16_t v0 = vld1q_u8(q + 32 * g), v1 = vld1q_u8(q + 32 * g + 16);
        uint8x16_t lo0 = vandq_u8(v0, m4), lo1 = vandq_u8(v1, m4);
        uint8x16_t hi0 = vshrq_n_u8(v0, 4), hi1 = vshrq_n_u8(v1, 4);
        if (q5) {   /* 16 where the bit is set: the test's all-ones masked to 16 */
            const uint8x16_t bl = vdupq_n_u8((uint8_t)(1u << (2 * g)));
            const uint8x16_t bh = vdupq_n_u8((uint8_t)(2u << (2 * g)));
            lo0 = vorrq_u8(lo0, vandq_u8(vtstq_u8(h0, bl), b4));
            lo1 = vorrq_u8(lo1, vandq_u8(vtstq_u8(h1, bl), b4));
            hi0 = vorrq_u8(hi0, vandq_u8(vtstq_u8(h0, bh), b4));
            hi1 = vorrq_u8(hi1, vandq_u8(vtstq_u8(h1, bh), b4));
        }
        acc = vmlaq_n_s32(acc, kn_dot32(lo0, lo1, x8 + 64 * g), sc[2 * g]);
        acc = vmlaq_n_s32(acc, kn_dot32(hi0, hi1, x8 + 64 * g + 32), sc[2 * g + 1]);
    }
    int32_t msum = 0;
    for (int j = 0; j < 8; j++)
        msum += m[j] * (bs[2 * j] + bs[2 * j + 1]);
    const float d = kn_f16(blk), dmin = kn_f16(blk + 2);
    return d * dx * (float)vaddvq_s32(acc) - dmin * dx * (float)msum;   /* kq_generic.c's kq_block_f */
}

/* Q6_K: element 128h + 32u + l is ql[64h + 32(u & 1) + l]'s low (u < 2) or high nibble with
 * bits 2u, 2u+1 of qh[32h + l] above them; each 16 elements (a vector) share one scale, and the
 * -32 comes back through x's block sums (bs). */
KN_INLINE float kn_q6(const uint8_t *blk, const int8_t *x8, const int16_t *bs, float dx)
{
    const int8_t *sc = (const int8_t *)(blk + 192);
    const uint8x16_t m4 = vdupq_n_u8(15), m2 = vdupq_n_u8(0x30);
    int32x4_t acc = vdupq_n_s32(0);
    for (int h = 0; h < 2; h++) {
        const uint8_t *ql = blk + 64 * h, *qh = blk + 128 + 32 * h;
        const uint8x16_t L[4] = {vld1q_u8(ql), vld1q_u8(ql + 16), vld1q_u8(ql + 32), vld1q_u8(ql + 48)};
        const uint8x16_t H[2] = {vld1q_u8(qh), vld1q_u8(qh + 16)};
        for (int half = 0; half < 2; half++) {   /* l 0..15, 16..31 */
            const uint8x16_t hh = H[half];
            const uint8x16_t q[4] = {
                vorrq_u8(vandq_u8(L[half], m4), vandq_u8(vshlq_n_u8(hh, 4), m2)),
                vorrq_u8(vandq_u8(L[2 + half], m4), vandq_u8(vshlq_n_u8(hh, 2), m2)),
                vorrq_u8(vshrq_n_u8(L[half], 4), vandq_u8(hh, m2)),
                vorrq_u8(vshrq_n_u8(L[2 + half], 4), vandq_u8(vshrq_n_u8(hh, 2), m2)),
            };
            for (int u = 0; u < 4; u++) {
                const int32x4_t s = vdotq_s32(vdupq_n_s32(0), vreinterpretq_s8_u8(q[u]),
                                              vld1q_s8(x8 + 128 * h + 32 * u + 16 * half));
                acc = vmlaq_n_s32(acc, s, sc[8 * h + 2 * u + half]);
            }
        }
    }
    int32_t corr = 0;
    for (int k = 0; k < 16; k++)
        corr += sc[k] * 32 * bs[k];
    return kn_f16(blk + 208) * dx * (float)(vaddvq_s32(acc) - corr);
}

KN_INLINE void kn_mm(const tl_cpu_mm *a, tl_dtype dt, int64_t r0, int64_t r1)
{
    const int64_t nb = a->cols / TL_QK_K;
    const size_t row_bytes = tl_dtype_row_bytes(dt, a->cols), bb = tl_dtype_block_bytes(dt);
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *w = (const uint8_t *)a->w + (size_t)r * row_bytes;
        for (int t = 0; t < a->T; t++) {
            const int8_t *xq = a->xq + (size_t)t * (size_t)a->cols;
            const float *xd = a->xd + (size_t)t * (size_t)nb;
            const int16_t *bs = (const int16_t *)(const void *)a->xc + (size_t)t * (size_t)(a->cols / 16);
            float acc = 0;
            for (int64_t b = 0; b < nb; b++) {
                const uint8_t *blk = w + (size_t)b * bb;
                if (t == 0)
                    __builtin_prefetch(blk + 1024, 0, 2);
                acc += dt == TL_Q6_K ? kn_q6(blk, xq + b * TL_QK_K, bs + 16 * b, xd[b])
                                     : kn_q45(blk, dt == TL_Q5_K, xq + b * TL_QK_K, bs + 16 * b, xd[b]);
            }
            a->out[(size_t)t * (size_t)a->rows + (size_t)r] = acc;
        }
    }
}

void tl_cpu_mm_q4_k_neon_dotprod(const tl_cpu_mm *a, int64_t r0, int64_t r1) { kn_mm(a, TL_Q4_K, r0, r1); }
void tl_cpu_mm_q5_k_neon_dotprod(const tl_cpu_mm *a, int64_t r0, int64_t r1) { kn_mm(a, TL_Q5_K, r0, r1); }
void tl_cpu_mm_q6_k_neon_dotprod(const tl_cpu_mm *a, int64_t r0, int64_t r1) { kn_mm(a, TL_Q6_K, r0, r1); }
