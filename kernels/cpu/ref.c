/* Portable scalar versions of every CPU operation: the reference the vectorized and threaded
 * kernels are checked against, and the fallback on any x86-64. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "tokenloop/quant.h"

float tl_cpu_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float tl_cpu_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, u;
    if (exp == 0) {
        if (man == 0) {
            u = sign;
        } else { /* subnormal: renormalise */
            exp = 127 - 15 + 1;
            while (!(man & 0x400)) { man <<= 1; exp--; }
            u = sign | (exp << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 31) {
        u = sign | 0x7f800000u | (man << 13);
    } else {
        u = sign | ((exp - 15 + 127) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float tl_cpu_weight_at(const tl_weight *w, int64_t i)
{
    switch (w->dtype) {
    case TL_F32: return ((const float *)w->data)[i];
    case TL_F16: return tl_cpu_f16_to_f32(((const uint16_t *)w->data)[i]);
    case TL_BF16: return tl_cpu_bf16_to_f32(((const uint16_t *)w->data)[i]);
    case TL_Q8_0: {   /* rows are whole blocks, so block i / 32 of the flat array holds i */
        const tl_block_q8_0 *b = (const tl_block_q8_0 *)w->data + i / TL_QK;
        return tl_f16_to_f32(b->d) * b->qs[i % TL_QK];
    }
    case TL_Q4_0: {
        const tl_block_q4_0 *b = (const tl_block_q4_0 *)w->data + i / TL_QK;
        int j = (int)(i % TL_QK), q = j < TL_QK / 2 ? b->qs[j] & 15 : b->qs[j - TL_QK / 2] >> 4;
        return tl_f16_to_f32(b->d) * (q - 8);
    }
    case TL_Q4_K: case TL_Q5_K: case TL_Q6_K: return tl_kquant_at(w->dtype, w->data, i);
    }
    return 0.0f;
}

void tl_cpu_ref_embed(float *x, const tl_weight *table, const int *ids, int T)
{
    for (int t = 0; t < T; t++)
        for (int64_t j = 0; j < table->cols; j++)
            x[t * table->cols + j] = tl_cpu_weight_at(table, (int64_t)ids[t] * table->cols + j);
}

void tl_cpu_ref_rmsnorm(float *out, const float *x, const tl_weight *w, int T, int n, float eps)
{
    for (int t = 0; t < T; t++) {
        const float *xr = x + (size_t)t * n;
        float *o = out + (size_t)t * n;
        double ss = 0;
        for (int i = 0; i < n; i++)
            ss += (double)xr[i] * xr[i];
        float scale = 1.0f / sqrtf((float)(ss / n) + eps);
        for (int i = 0; i < n; i++)
            o[i] = xr[i] * scale * tl_cpu_weight_at(w, i);
    }
}

void tl_cpu_ref_matmul(float *out, const float *x, const tl_weight *W, int T)
{
    for (int t = 0; t < T; t++)
        for (int64_t r = 0; r < W->rows; r++) {
            float acc = 0.0f;
            for (int64_t c = 0; c < W->cols; c++)
                acc += tl_cpu_weight_at(W, r * W->cols + c) * x[t * W->cols + c];
            out[t * W->rows + r] = acc;
        }
}

void tl_cpu_ref_rope(float *x, int T, int n_heads, int head_dim, int pos0, const float *inv_freq)
{
    int half = head_dim / 2;
    for (int t = 0; t < T; t++)
        for (int h = 0; h < n_heads; h++) {
            float *v = x + ((size_t)t * n_heads + h) * head_dim;
            for (int i = 0; i < half; i++) {
                float angle = (float)(pos0 + t) * inv_freq[i];
                float c = cosf(angle), s = sinf(angle);
                float a = v[i], b = v[i + half];
                v[i] = a * c - b * s;
                v[i + half] = b * c + a * s;
            }
        }
}

static float kv_at(const void *p, size_t i, int bf16)
{
    return bf16 ? tl_cpu_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

static void ref_attention(float *out, const float *q, const void *k, const void *v, int bf16, int T, int pos0,
                          int n_heads, int n_kv, int head_dim)
{
    int group = n_heads / n_kv, kv_dim = n_kv * head_dim;
    float scale = 1.0f / sqrtf((float)head_dim);
    float *scores = malloc(sizeof(float) * (size_t)(pos0 + T));
    for (int t = 0; t < T; t++)
        for (int h = 0; h < n_heads; h++) {
            const float *qh = q + ((size_t)t * n_heads + h) * head_dim;
            int kvh = h / group, n_ctx = pos0 + t + 1;
            float max = -INFINITY;
            for (int p = 0; p < n_ctx; p++) {
                size_t kp = (size_t)p * kv_dim + (size_t)kvh * head_dim;
                float s = 0.0f;
                for (int i = 0; i < head_dim; i++)
                    s += qh[i] * kv_at(k, kp + i, bf16);
                scores[p] = s * scale;
                if (scores[p] > max) max = scores[p];
            }
            float sum = 0.0f;
            for (int p = 0; p < n_ctx; p++) {
                scores[p] = expf(scores[p] - max);
                sum += scores[p];
            }
            float *o = out + ((size_t)t * n_heads + h) * head_dim;
            memset(o, 0, sizeof(float) * head_dim);
            for (int p = 0; p < n_ctx; p++) {
                size_t vp = (size_t)p * kv_dim + (size_t)kvh * head_dim;
                float wgt = scores[p] / sum;
                for (int i = 0; i < head_dim; i++)
                    o[i] += wgt * kv_at(v, vp + i, bf16);
            }
        }
    free(scores);
}

void tl_cpu_ref_attention(float *out, const float *q, const float *k, const float *v, int T, int pos0,
                          int n_heads, int n_kv, int head_dim)
{
    ref_attention(out, q, k, v, 0, T, pos0, n_heads, n_kv, head_dim);
}

void tl_cpu_ref_attention_bf16(float *out, const float *q, const uint16_t *k, const uint16_t *v, int T, int pos0,
                               int n_heads, int n_kv, int head_dim)
{
    ref_attention(out, q, k, v, 1, T, pos0, n_heads, n_kv, head_dim);
}

void tl_cpu_ref_swiglu(float *gate, const float *up, int n)
{
    for (int i = 0; i < n; i++)
        gate[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

void tl_cpu_ref_add(float *x, const float *y, int n)
{
    for (int i = 0; i < n; i++)
        x[i] += y[i];
}
