/* Causal grouped-query attention, written once over the vector vocabulary of mm_tmpl.h and
 * included after it by each instruction-set file, which also defines MM_SET1(float),
 * MM_STOREX(float *, v) and MM_HSUM4(a, b, c, d, float out[4]): four MM_HSUMs at once, since
 * with a 64-wide head a dot product is 4 multiply-adds and its horizontal sum costs more.
 * One call is one work item: query position t and kv head kvh, with every query head of its
 * group. Each K and V row of the cache is read once for the whole group (4 query heads per kv
 * head in Llama 3), not once per query head.
 * Included twice: for an fp32 KV cache (tl_cpu_attn_ISA), and with ATT_BF16 defined for a bf16
 * one (tl_cpu_attn_bf16_ISA), whose rows are widened to fp32 as they are loaded. */
#include <math.h>
#include <string.h>

#ifdef ATT_BF16
#define ATT_T uint16_t
#define ATT_NAME MM_CAT(tl_cpu_attn_bf16_, MM_ISA)
#define ATT_LOAD(p) MM_LOADW_BF16(p, 0)
#define ATT_AT(p, i) tl_cpu_bf16_to_f32((p)[i])
#else
#define ATT_T float
#define ATT_NAME MM_CAT(tl_cpu_attn_, MM_ISA)
#define ATT_LOAD(p) MM_LOADX(p)
#define ATT_AT(p, i) ((p)[i])
#endif

void ATT_NAME(const tl_cpu_attn *a, int t, int kvh, float *scores);
void ATT_NAME(const tl_cpu_attn *a, int t, int kvh, float *scores)
{
    const int hd = a->head_dim, G = a->n_heads / a->n_kv, kv_dim = a->n_kv * hd;
    const int n_ctx = a->pos0 + t + 1, dv = hd / MM_VL * MM_VL;
    const float scale = 1.0f / sqrtf((float)hd);
    const size_t first = (size_t)t * a->n_heads + (size_t)kvh * G;   /* the group's first head */
    const float *q = a->q + first * hd;
    float *out = a->out + first * hd;

    /* scores[g * n_ctx + p] = q_g . k_p / sqrt(hd) */
    for (int p = 0; p < n_ctx; p++) {
        const ATT_T *kr = (const ATT_T *)a->k + (size_t)p * kv_dim + (size_t)kvh * hd;
        int g = 0;
        if (dv == hd)
            for (; g + 4 <= G; g += 4) {
                const float *qg = q + (size_t)g * hd;
                MM_VF acc[4] = {MM_ZERO(), MM_ZERO(), MM_ZERO(), MM_ZERO()};
                for (int d = 0; d < hd; d += MM_VL) {
                    MM_VF kv = ATT_LOAD(kr + d);
                    for (int i = 0; i < 4; i++)
                        acc[i] = MM_FMA(MM_LOADX(qg + (size_t)i * hd + d), kv, acc[i]);
                }
                float s4[4];
                MM_HSUM4(acc[0], acc[1], acc[2], acc[3], s4);
                for (int i = 0; i < 4; i++)
                    scores[(size_t)(g + i) * n_ctx + p] = s4[i] * scale;
            }
        for (; g < G; g++) {
            const float *qg = q + (size_t)g * hd;
            MM_VF acc = MM_ZERO();
            int d = 0;
            for (; d < dv; d += MM_VL)
                acc = MM_FMA(MM_LOADX(qg + d), ATT_LOAD(kr + d), acc);
            float s = MM_HSUM(acc);
            for (; d < hd; d++)
                s += qg[d] * ATT_AT(kr, d);
            scores[(size_t)g * n_ctx + p] = s * scale;
        }
    }
    /* softmax over the positions, each head apart */
    for (int g = 0; g < G; g++) {
        float *s = scores + (size_t)g * n_ctx, max = -INFINITY, sum = 0.0f;
        for (int p = 0; p < n_ctx; p++)
            max = s[p] > max ? s[p] : max;
        for (int p = 0; p < n_ctx; p++) {
            s[p] = expf(s[p] - max);
            sum += s[p];
        }
        float inv = 1.0f / sum;
        for (int p = 0; p < n_ctx; p++)
            s[p] *= inv;
    }
    /* out_g = sum_p w_gp v_p. Llama's shapes (4 heads a group, head_dim a multiple of 4
     * vectors): 4 heads x 4 vectors of out stay in registers while the positions pass, so each
     * V vector is loaded once and out is written once. */
    if (G % 4 == 0 && hd % (4 * MM_VL) == 0) {
        for (int g0 = 0; g0 < G; g0 += 4)
            for (int d0 = 0; d0 < hd; d0 += 4 * MM_VL) {
                MM_VF acc[4][4];
                for (int g = 0; g < 4; g++)
                    for (int c = 0; c < 4; c++)
                        acc[g][c] = MM_ZERO();
                for (int p = 0; p < n_ctx; p++) {
                    const ATT_T *vr = (const ATT_T *)a->v + (size_t)p * kv_dim + (size_t)kvh * hd + d0;
                    MM_VF v[4];
                    for (int c = 0; c < 4; c++)
                        v[c] = ATT_LOAD(vr + c * MM_VL);
                    for (int g = 0; g < 4; g++) {
                        MM_VF w = MM_SET1(scores[(size_t)(g0 + g) * n_ctx + p]);
                        for (int c = 0; c < 4; c++)
                            acc[g][c] = MM_FMA(w, v[c], acc[g][c]);
                    }
                }
                for (int g = 0; g < 4; g++)
                    for (int c = 0; c < 4; c++)
                        MM_STOREX(out + (size_t)(g0 + g) * hd + d0 + c * MM_VL, acc[g][c]);
            }
        return;
    }
    memset(out, 0, sizeof(float) * (size_t)G * (size_t)hd);
    for (int p = 0; p < n_ctx; p++) {
        const ATT_T *vr = (const ATT_T *)a->v + (size_t)p * kv_dim + (size_t)kvh * hd;
        for (int g = 0; g < G; g++) {
            float w = scores[(size_t)g * n_ctx + p], *o = out + (size_t)g * hd;
            MM_VF wv = MM_SET1(w);
            int d = 0;
            for (; d < dv; d += MM_VL)
                MM_STOREX(o + d, MM_FMA(wv, ATT_LOAD(vr + d), MM_LOADX(o + d)));
            for (; d < hd; d++)
                o[d] += w * ATT_AT(vr, d);
        }
    }
}

#undef ATT_T
#undef ATT_NAME
#undef ATT_LOAD
#undef ATT_AT
