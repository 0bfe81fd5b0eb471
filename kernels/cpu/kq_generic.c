/* K-quant products, the portable way (kq.h has the definition), and x's Q8_K quantization that
 * every kernel set reads. Scalar integers: each super-block's sums are exact, and the float
 * arithmetic is one line per super-block (kq_block_f), which the SIMD kernels (kq_avx2.c)
 * follow with their own order of the integer additions only. */
#include <math.h>
#include <string.h>

#include "kq.h"
#include "tokenloop/quant.h"

void tl_cpu_qpack_q8k(const tl_cpu_mm *m, tl_dtype dt, const float *x, int t, int qbias)
{
    (void)dt;
    (void)qbias;
    const int64_t cols = m->cols, nb = cols / TL_QK_K;
    int8_t *q = (int8_t *)m->xq + (size_t)t * (size_t)cols;
    float *d = (float *)m->xd + (size_t)t * (size_t)nb;
    int16_t *bs = (int16_t *)(void *)m->xc + (size_t)t * (size_t)(cols / 16);
    x += (size_t)t * (size_t)cols;
    for (int64_t b = 0; b < nb; b++, x += TL_QK_K, q += TL_QK_K, bs += 16) {
        float amax = 0, max = 0;
        for (int j = 0; j < TL_QK_K; j++)
            if (fabsf(x[j]) > amax) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        if (amax == 0) {   /* (NaNs too: they never compare greater) */
            memset(q, 0, TL_QK_K);
            memset(bs, 0, 16 * sizeof *bs);
            d[b] = 0;
            continue;
        }
        const float iscale = -127.0f / max;   /* the largest becomes -127, as ggml has it */
        for (int j = 0; j < TL_QK_K; j++) {
            long v = lrintf(iscale * x[j]);
            q[j] = (int8_t)(v < 127 ? v : 127);
        }
        for (int k = 0; k < 16; k++) {
            int s = 0;
            for (int j = 0; j < 16; j++)
                s += q[16 * k + j];
            bs[k] = (int16_t)s;
        }
        d[b] = 1 / iscale;
    }
}

static float f16_at(const uint8_t *p)
{
    return tl_f16_to_f32((uint16_t)(p[0] | p[1] << 8));
}

/* The 8 six-bit scales and mins of a Q4_K/Q5_K super-block (quant_k.c's scale_min_k4). */
static void kq_scales_mins(const uint8_t *s, uint8_t sc[8], uint8_t m[8])
{
    for (int j = 0; j < 4; j++) {
        sc[j] = s[j] & 63;
        m[j] = s[j + 4] & 63;
        sc[j + 4] = (uint8_t)((s[j + 8] & 0xF) | (s[j] >> 6) << 4);
        m[j + 4] = (uint8_t)((s[j + 8] >> 4) | (s[j + 4] >> 6) << 4);
    }
}

/* One super-block's contribution from its integer sums: the one float formula of every set. */
static inline float kq_block_f(float d, float dmin, float dx, int32_t isum, int32_t msum)
{
    return d * dx * (float)isum - dmin * dx * (float)msum;
}

/* Q4_K (qh NULL) and Q5_K: element 64g + l of sub-block 2g takes the low nibble of q[32g + l],
 * element 64g + 32 + l of sub-block 2g + 1 the high one; Q5_K's fifth bits in qh[l], bit j. */
static float dot_q45_k(const uint8_t *blk, int q5, const int8_t *x8, const int16_t *bs, float dx)
{
    uint8_t sc[8], m[8];
    kq_scales_mins(blk + 4, sc, m);
    const uint8_t *qh = q5 ? blk + 16 : NULL, *q = blk + (q5 ? 48 : 16);
    int32_t isum = 0, msum = 0;
    for (int g = 0; g < 4; g++) {
        int32_t s_lo = 0, s_hi = 0;
        for (int l = 0; l < 32; l++) {
            int lo = q[32 * g + l] & 0xF, hi = q[32 * g + l] >> 4;
            if (qh) {
                lo |= (qh[l] >> (2 * g) & 1) << 4;
                hi |= (qh[l] >> (2 * g + 1) & 1) << 4;
            }
            s_lo += lo * x8[64 * g + l];
            s_hi += hi * x8[64 * g + 32 + l];
        }
        isum += sc[2 * g] * s_lo + sc[2 * g + 1] * s_hi;
    }
    for (int j = 0; j < 8; j++)
        msum += m[j] * (bs[2 * j] + bs[2 * j + 1]);
    return kq_block_f(f16_at(blk), f16_at(blk + 2), dx, isum, msum);
}

/* Q6_K: element 128h + 32u + l (u = 0..3) is ql[64h + 32(u & 1) + l]'s low (u < 2) or high
 * nibble plus bits 2u, 2u+1 of qh[32h + l] above them, minus 32; its scale is sc[8h + 2u + l/16]. */
static float dot_q6_k(const uint8_t *blk, const int8_t *x8, const int16_t *bs, float dx)
{
    const int8_t *sc = (const int8_t *)(blk + 192);
    int32_t s[16] = {0};
    for (int h = 0; h < 2; h++)
        for (int u = 0; u < 4; u++)
            for (int l = 0; l < 32; l++) {
                const uint8_t ql = blk[64 * h + 32 * (u & 1) + l], qh = blk[128 + 32 * h + l];
                const int q = ((u < 2 ? ql : ql >> 4) & 0xF) | (qh >> (2 * u) & 3) << 4;
                s[8 * h + 2 * u + l / 16] += q * x8[128 * h + 32 * u + l];
            }
    int32_t isum = 0;
    for (int k = 0; k < 16; k++)
        isum += sc[k] * (s[k] - 32 * bs[k]);
    return kq_block_f(f16_at(blk + 208), 0, dx, isum, 0);
}

static void mm_kq_generic(const tl_cpu_mm *a, tl_dtype dt, int64_t r0, int64_t r1)
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
                acc += dt == TL_Q6_K ? dot_q6_k(blk, xq + b * TL_QK_K, bs + 16 * b, xd[b])
                                     : dot_q45_k(blk, dt == TL_Q5_K, xq + b * TL_QK_K, bs + 16 * b, xd[b]);
            }
            a->out[(size_t)t * (size_t)a->rows + (size_t)r] = acc;
        }
    }
}

void tl_cpu_mm_q4_k_generic(const tl_cpu_mm *a, int64_t r0, int64_t r1) { mm_kq_generic(a, TL_Q4_K, r0, r1); }
void tl_cpu_mm_q5_k_generic(const tl_cpu_mm *a, int64_t r0, int64_t r1) { mm_kq_generic(a, TL_Q5_K, r0, r1); }
void tl_cpu_mm_q6_k_generic(const tl_cpu_mm *a, int64_t r0, int64_t r1) { mm_kq_generic(a, TL_Q6_K, r0, r1); }

tl_cpu_mm_fn tl_cpu_kq_kernel(const char *isa, tl_dtype dt)
{
#ifdef TL_CPU_X86
    if (!strcmp(isa, "avx512bf16")) {   /* (its CPUs all have VNNI: mm_avx512bf16.c's supported) */
        switch (dt) {
        case TL_Q4_K: return tl_cpu_mm_q4_k_avx512vnni;
        case TL_Q5_K: return tl_cpu_mm_q5_k_avx512vnni;
        case TL_Q6_K: return tl_cpu_mm_q6_k_avx512vnni;
        default: return NULL;
        }
    }
    if (strcmp(isa, "generic")) {   /* avx2, avx512: AVX2 */
        switch (dt) {
        case TL_Q4_K: return tl_cpu_mm_q4_k_avx2;
        case TL_Q5_K: return tl_cpu_mm_q5_k_avx2;
        case TL_Q6_K: return tl_cpu_mm_q6_k_avx2;
        default: return NULL;
        }
    }
#elif defined(TL_CPU_NEON)
    if (!strcmp(isa, "neon-dotprod") || !strcmp(isa, "neon-bf16")) {   /* the sets with SDOT */
        switch (dt) {
        case TL_Q4_K: return tl_cpu_mm_q4_k_neon_dotprod;
        case TL_Q5_K: return tl_cpu_mm_q5_k_neon_dotprod;
        case TL_Q6_K: return tl_cpu_mm_q6_k_neon_dotprod;
        default: return NULL;
        }
    }
#else
    (void)isa;
#endif
    switch (dt) {
    case TL_Q4_K: return tl_cpu_mm_q4_k_generic;
    case TL_Q5_K: return tl_cpu_mm_q5_k_generic;
    case TL_Q6_K: return tl_cpu_mm_q6_k_generic;
    default: return NULL;
    }
}

tl_cpu_qpack_fn tl_cpu_kq_qpack(const char *isa)
{
#ifdef TL_CPU_X86
    if (strcmp(isa, "generic"))
        return tl_cpu_qpack_q8k_avx2;
#else
    (void)isa;
#endif
    return tl_cpu_qpack_q8k;
}
