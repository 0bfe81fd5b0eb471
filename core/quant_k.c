/* llama.cpp's K-quant super-blocks (tl_dtype Q4_K, Q5_K, Q6_K), decoded to fp32: the reference
 * the kernels (kernels/cpu/kq*.c), which read these bytes in place, are checked against. A super-block
 * holds 256 elements in 8 sub-blocks of 32 (Q6_K: 16 of 16), each with its own scale:
 *
 *   Q4_K (144 B): f16 d, f16 dmin, 12 bytes of 6-bit scales and mins, 128 bytes of 4-bit q
 *                 x = d * sc[j] * q - dmin * m[j]
 *   Q5_K (176 B): as Q4_K, plus 32 bytes holding each element's fifth bit (qh) before the q
 *   Q6_K (210 B): 128 bytes of low 4 bits (ql), 64 bytes of high 2 bits (qh), 16 int8 scales,
 *                 f16 d;  x = d * sc[j] * (q - 32)
 *
 * In each group of 64 elements of Q4_K/Q5_K the first 32 take the low nibbles of 32 bytes and
 * the next 32 the high nibbles of the same bytes; Q6_K interleaves 128 elements over 64 ql
 * bytes and 32 qh bytes the same way, four ways. The arithmetic is fp32 in ggml's order, so
 * the values equal ggml's (and the gguf package's) bit for bit. */
#include <string.h>

#include "tokenloop/quant.h"

#define QK_K 256

static uint16_t u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* The 6-bit scale and min of sub-block j, packed in 12 bytes: sub-blocks 0-3 in the low six
 * bits of bytes 0-3 (scales) and 4-7 (mins); 4-7 in the nibbles of bytes 8-11, with their two
 * high bits in the top bits of bytes 0-7. */
static void scale_min_k4(int j, const uint8_t *q, uint8_t *sc, uint8_t *m)
{
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* Q4_K and Q5_K: four pairs of 32-weight groups, each group with a 6-bit scale and min; Q5_K
 * adds a fifth bit to every weight from qh (NULL for Q4_K), bit 2g for the low nibbles of pair
 * g and bit 2g + 1 for its high ones. */
static void dequant_k_mins(const uint8_t *b, const uint8_t *qh, const uint8_t *q, float *y)
{
    const float d = tl_f16_to_f32(u16(b)), dmin = tl_f16_to_f32(u16(b + 2));
    const uint8_t *scales = b + 4;
    for (int g = 0; g < 4; g++, q += 32, y += 64) {
        uint8_t sc, m;
        scale_min_k4(2 * g, scales, &sc, &m);
        const float d1 = d * sc, m1 = dmin * m;
        scale_min_k4(2 * g + 1, scales, &sc, &m);
        const float d2 = d * sc, m2 = dmin * m;
        const uint8_t lo_bit = (uint8_t)(1u << (2 * g)), hi_bit = (uint8_t)(2u << (2 * g));
        for (int l = 0; l < 32; l++) {
            int lo = q[l] & 0xF, hi = q[l] >> 4;
            if (qh) {
                lo += qh[l] & lo_bit ? 16 : 0;
                hi += qh[l] & hi_bit ? 16 : 0;
            }
            y[l] = d1 * lo - m1;
            y[l + 32] = d2 * hi - m2;
        }
    }
}

static void dequant_q4_k(const uint8_t *b, float *y) { dequant_k_mins(b, NULL, b + 16, y); }

static void dequant_q5_k(const uint8_t *b, float *y) { dequant_k_mins(b, b + 16, b + 48, y); }

static void dequant_q6_k(const uint8_t *b, float *y)
{
    const uint8_t *ql = b, *qh = b + 128;
    const int8_t *sc = (const int8_t *)(b + 192);
    const float d = tl_f16_to_f32(u16(b + 208));
    for (int half = 0; half < 2; half++, ql += 64, qh += 32, sc += 8, y += 128) {
        for (int l = 0; l < 32; l++) {
            int is = l / 16;
            int q1 = (int)((ql[l] & 0xF) | ((qh[l] >> 0 & 3) << 4)) - 32;
            int q2 = (int)((ql[l + 32] & 0xF) | ((qh[l] >> 2 & 3) << 4)) - 32;
            int q3 = (int)((ql[l] >> 4) | ((qh[l] >> 4 & 3) << 4)) - 32;
            int q4 = (int)((ql[l + 32] >> 4) | ((qh[l] >> 6 & 3) << 4)) - 32;
            y[l] = d * sc[is] * q1;
            y[l + 32] = d * sc[is + 2] * q2;
            y[l + 64] = d * sc[is + 4] * q3;
            y[l + 96] = d * sc[is + 6] * q4;
        }
    }
}

void tl_kquant_dequantize_row(tl_dtype t, const void *src, float *y, int64_t n)
{
    void (*one)(const uint8_t *, float *) = t == TL_Q4_K ? dequant_q4_k : t == TL_Q5_K ? dequant_q5_k : dequant_q6_k;
    const size_t bytes = tl_dtype_block_bytes(t);
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / QK_K; i++)
        one(b + (size_t)i * bytes, y + i * QK_K);
}

/* One element, with the decoders' own arithmetic (d * sc first, then the rest), so the same value. */
float tl_kquant_at(tl_dtype t, const void *row, int64_t i)
{
    const uint8_t *b = (const uint8_t *)row + (size_t)(i / QK_K) * tl_dtype_block_bytes(t);
    const int e = (int)(i % QK_K);
    if (t == TL_Q6_K) {
        const int half = e / 128, k = e % 128, quarter = k / 32, l = k % 32;
        const uint8_t *ql = b + 64 * half + (quarter & 1) * 32, *qh = b + 128 + 32 * half;
        const int q = (int)(((ql[l] >> (quarter & 2 ? 4 : 0)) & 0xF) | ((qh[l] >> (2 * quarter) & 3) << 4)) - 32;
        const int8_t sc = (int8_t)b[192 + 8 * half + 2 * quarter + l / 16];
        return tl_f16_to_f32(u16(b + 208)) * sc * q;
    }
    const int g = e / 64, hi = (e % 64) / 32, l = e % 32, j = 2 * g + hi;
    const uint8_t *q = b + (t == TL_Q5_K ? 48 : 16) + 32 * g;
    int v = (q[l] >> (4 * hi)) & 0xF;
    if (t == TL_Q5_K && (b[16 + l] >> j & 1))
        v += 16;
    uint8_t sc, m;
    scale_min_k4(j, b + 4, &sc, &m);
    const float d1 = tl_f16_to_f32(u16(b)) * sc, m1 = tl_f16_to_f32(u16(b + 2)) * m;
    return d1 * v - m1;
}
