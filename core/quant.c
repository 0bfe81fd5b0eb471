/* Conversions between tl_dtype rows and fp32, and llama.cpp's Q8_0/Q4_0 quantizers. */
#include <math.h>
#include <string.h>

#include "tokenloop/quant.h"

_Static_assert(sizeof(tl_block_q8_0) == 34, "Q8_0 block is 34 bytes");
_Static_assert(sizeof(tl_block_q4_0) == 18, "Q4_0 block is 18 bytes");

static const struct { const char *name; int block; size_t bytes; } info[TL_DTYPE_COUNT] = {
    [TL_F32] = {"f32", 1, 4},
    [TL_F16] = {"f16", 1, 2},
    [TL_BF16] = {"bf16", 1, 2},
    [TL_Q8_0] = {"q8_0", TL_QK, sizeof(tl_block_q8_0)},
    [TL_Q4_0] = {"q4_0", TL_QK, sizeof(tl_block_q4_0)},
    [TL_Q4_K] = {"q4_k", TL_QK_K, 144},
    [TL_Q5_K] = {"q5_k", TL_QK_K, 176},
    [TL_Q6_K] = {"q6_k", TL_QK_K, 210},
};

static int valid(tl_dtype t)
{
    return (unsigned)t < TL_DTYPE_COUNT;
}

size_t tl_dtype_size(tl_dtype t)
{
    return valid(t) && info[t].block == 1 ? info[t].bytes : 0;
}

const char *tl_dtype_name(tl_dtype t)
{
    return valid(t) ? info[t].name : "?";
}

int tl_dtype_block(tl_dtype t)
{
    return valid(t) ? info[t].block : 1;
}

size_t tl_dtype_block_bytes(tl_dtype t)
{
    return valid(t) ? info[t].bytes : 0;
}

size_t tl_dtype_row_bytes(tl_dtype t, int64_t n)
{
    return (size_t)(n / tl_dtype_block(t)) * tl_dtype_block_bytes(t);
}

int tl_dtype_parse(const char *s, tl_dtype *t)
{
    for (int i = 0; i < TL_DTYPE_CHOOSABLE; i++)
        if (s && !strcmp(s, info[i].name)) {
            *t = (tl_dtype)i;
            return 0;
        }
    return -1;
}

uint64_t tl_weight_bytes(const tl_weight *w)
{
    return (uint64_t)w->rows * tl_dtype_row_bytes(w->dtype, w->cols);
}

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float tl_bf16_to_f32(uint16_t h)
{
    return from_bits((uint32_t)h << 16);
}

uint16_t tl_f32_to_bf16(float f)
{
    uint32_t u = bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);   /* quiet NaN */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

float tl_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f)
        return from_bits(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {   /* zero or subnormal: man * 2^-24 */
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    return from_bits(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t tl_f32_to_f16(float f)
{
    uint32_t u = bits(f), sign = (u >> 16) & 0x8000, a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00);
    if (a >= 0x477ff000u)   /* rounds to >= 65536: infinity */
        return (uint16_t)(sign | 0x7c00);
    if (a < 0x38800000u) {  /* below 2^-14: a subnormal half, rounded by the FPU's own RNE */
        float v = from_bits(a) * 0x1p24f;   /* exact: a power-of-two scale */
        return (uint16_t)(sign | (uint32_t)lrintf(v));
    }
    uint32_t r = a + 0xfffu + ((a >> 13) & 1);   /* round the 13 dropped bits to nearest even */
    return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}

/* In range, so the conversion to an integer is defined for any input: a row holding inf or NaN
 * (a model file's garbage, a diverged activation) gives some block, never undefined behaviour.
 * Finite values in range pass unchanged, so ordinary rows quantize as llama.cpp's reference. */
static float clampf(float v, float lo, float hi)
{
    return v >= lo ? (v <= hi ? v : hi) : lo;   /* NaN: lo */
}

/* roundf (ties away from zero) for |v| <= 127, without the library call: the conversion
 * truncates, and v - i is exact, so the tie test is too. (A model's conversion to Q8_0 took
 * 2.3 times as long as to Q4_0 with roundf.) */
static int round_away(float v)
{
    int i = (int)v;
    float frac = v - (float)i;
    return i + (frac >= 0.5f) - (frac <= -0.5f);
}

static void quantize_q8_0(const float *x, tl_block_q8_0 *y, int64_t nb)
{
    for (int64_t b = 0; b < nb; b++, x += TL_QK) {
        float amax = 0;
        for (int j = 0; j < TL_QK; j++)
            amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127, id = d ? 1.0f / d : 0.0f;
        y[b].d = tl_f32_to_f16(d);
        for (int j = 0; j < TL_QK; j++)
            y[b].qs[j] = (int8_t)round_away(clampf(x[j] * id, -127, 127));
    }
}

static void quantize_q4_0(const float *x, tl_block_q4_0 *y, int64_t nb)
{
    for (int64_t b = 0; b < nb; b++, x += TL_QK) {
        float amax = 0, max = 0;   /* the element of largest magnitude, sign kept: it maps to -8 */
        for (int j = 0; j < TL_QK; j++)
            if (amax < fabsf(x[j])) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        const float d = max / -8, id = d ? 1.0f / d : 0.0f;
        y[b].d = tl_f32_to_f16(d);
        for (int j = 0; j < TL_QK / 2; j++) {
            int lo = (int8_t)clampf(x[j] * id + 8.5f, 0, 15.5f), hi = (int8_t)clampf(x[j + TL_QK / 2] * id + 8.5f, 0, 15.5f);
            lo = lo < 15 ? lo : 15;
            hi = hi < 15 ? hi : 15;
            y[b].qs[j] = (uint8_t)(lo | hi << 4);
        }
    }
}

void tl_quantize_row(tl_dtype t, const float *x, void *dst, int64_t n)
{
    switch (t) {
    case TL_F32: memcpy(dst, x, (size_t)n * 4); break;
    case TL_F16: for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = tl_f32_to_f16(x[i]); break;
    case TL_BF16: for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = tl_f32_to_bf16(x[i]); break;
    case TL_Q8_0: quantize_q8_0(x, dst, n / TL_QK); break;
    case TL_Q4_0: quantize_q4_0(x, dst, n / TL_QK); break;
    case TL_Q4_K: case TL_Q5_K: case TL_Q6_K: memset(dst, 0, tl_dtype_row_bytes(t, n)); break;   /* (none) */
    }
}

void tl_dequantize_row(tl_dtype t, const void *src, float *y, int64_t n)
{
    switch (t) {
    case TL_F32: memcpy(y, src, (size_t)n * 4); break;
    case TL_F16: for (int64_t i = 0; i < n; i++) y[i] = tl_f16_to_f32(((const uint16_t *)src)[i]); break;
    case TL_BF16: for (int64_t i = 0; i < n; i++) y[i] = tl_bf16_to_f32(((const uint16_t *)src)[i]); break;
    case TL_Q8_0:
        for (int64_t b = 0; b < n / TL_QK; b++) {
            const tl_block_q8_0 *q = (const tl_block_q8_0 *)src + b;
            const float d = tl_f16_to_f32(q->d);
            for (int j = 0; j < TL_QK; j++)
                y[b * TL_QK + j] = d * q->qs[j];
        }
        break;
    case TL_Q4_0:
        for (int64_t b = 0; b < n / TL_QK; b++) {
            const tl_block_q4_0 *q = (const tl_block_q4_0 *)src + b;
            const float d = tl_f16_to_f32(q->d);
            for (int j = 0; j < TL_QK / 2; j++) {
                y[b * TL_QK + j] = d * ((q->qs[j] & 15) - 8);
                y[b * TL_QK + j + TL_QK / 2] = d * ((q->qs[j] >> 4) - 8);
            }
        }
        break;
    case TL_Q4_K: case TL_Q5_K: case TL_Q6_K: tl_kquant_dequantize_row(t, src, y, n); break;
    }
}
