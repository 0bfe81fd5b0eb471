/* bf16 weights straight into BFDOT (vbfdotq_f32, FEAT_BF16: each fp32 lane adds the products of
 * 2 bf16 pairs, 8 weights an instruction) against x packed as bf16 by the backend (want_pack:
 * tl_cpu_pack_bf16 below). In the exact mode (the default) x is split into hi + lo (x ~= hi +
 * lo to about 2^-17 relative) and each weight meets both, so the result keeps fp32-level
 * accuracy; with it off, x is rounded to bf16 once, as the AVX-512 BF16 set does. A decode
 * streams through the weights a row at a time; a prefill runs 4 x 4 row x token tiles. Built with
 * -march=armv8.2-a+bf16 (kernels/cpu/CMakeLists.txt); called only where the CPU reports the
 * extension (mm_neon.c: the "neon-bf16" set). */
#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

#include "cpu.h"
#include "mm.h"

#define BD_PF 1024   /* bytes ahead in a row's stream */

/* Round to nearest even; NaN stays NaN; a subnormal input counts as zero (as the x86 packing
 * does, so both sets round x the same way). */
static uint16_t bd_round(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    if (!(u & 0x7f800000u))
        return (uint16_t)((u >> 16) & 0x8000);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* x as [T][halves][cols_pad] bf16, zero beyond cols (mm.h). A scalar pass: it is O(cols) a
 * token against the product's O(rows x cols). */
void tl_cpu_pack_bf16(uint16_t *xpack, const float *x, int T, int64_t cols, int64_t cols_pad, int halves)
{
    for (int t = 0; t < T; t++) {
        uint16_t *hi = xpack + (size_t)t * (size_t)halves * (size_t)cols_pad, *lo = hi + cols_pad;
        const float *xr = x + (size_t)t * (size_t)cols;
        for (int64_t i = 0; i < cols_pad; i++) {
            hi[i] = i < cols ? bd_round(xr[i]) : 0;
            if (halves == 2)
                lo[i] = i < cols ? bd_round(xr[i] - tl_cpu_bf16_to_f32(hi[i])) : 0;
        }
    }
}

static inline bfloat16x8_t bd_load(const uint16_t *p)
{
    return vreinterpretq_bf16_u16(vld1q_u16(p));
}

/* Row w (cols bf16) against one token's packed x; exact when lo is not NULL. Four accumulators
 * so that consecutive BFDOTs do not wait for each other. */
static inline float bd_dot(const uint16_t *w, const uint16_t *hi, const uint16_t *lo, int64_t cols)
{
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
    int64_t k = 0;
    for (; k + 16 <= cols; k += 16) {
        __builtin_prefetch(w + k + BD_PF / 2, 0, 2);
        const bfloat16x8_t w0 = bd_load(w + k), w1 = bd_load(w + k + 8);
        a0 = vbfdotq_f32(a0, w0, bd_load(hi + k));
        a1 = vbfdotq_f32(a1, w1, bd_load(hi + k + 8));
        if (lo) {
            a2 = vbfdotq_f32(a2, w0, bd_load(lo + k));
            a3 = vbfdotq_f32(a3, w1, bd_load(lo + k + 8));
        }
    }
    if (k + 8 <= cols) {
        const bfloat16x8_t w0 = bd_load(w + k);
        a0 = vbfdotq_f32(a0, w0, bd_load(hi + k));
        if (lo)
            a2 = vbfdotq_f32(a2, w0, bd_load(lo + k));
        k += 8;
    }
    float tail = 0;   /* the row's last < 8 weights: reading a vector would run past the matrix */
    for (; k < cols; k++)
        tail += tl_cpu_bf16_to_f32(w[k]) *
                (tl_cpu_bf16_to_f32(hi[k]) + (lo ? tl_cpu_bf16_to_f32(lo[k]) : 0.0f));
    return vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3))) + tail;
}

/* Rows r..r+nr-1 (nr <= BD_RB; missing rows repeat the last, computed and not stored) times
 * tokens t..t+NT-1: each weight vector loaded once meets every token's x from registers. */
#define BD_RB 4
#define BD_TB 4   /* 16 accumulators, 4 weight vectors, an x one */
static inline __attribute__((always_inline)) void bd_tile(const tl_cpu_mm *a, int NT, int64_t r, int nr, int t)
{
    const int64_t cols = a->cols, k8 = cols / 8 * 8, pad = a->cols_pad;
    const int two = a->halves == 2;
    const uint16_t *w[BD_RB], *x[BD_TB];
    for (int i = 0; i < BD_RB; i++)
        w[i] = (const uint16_t *)a->w + (size_t)(r + (i < nr ? i : nr - 1)) * (size_t)cols;
    for (int u = 0; u < NT; u++)
        x[u] = a->xpack + (size_t)(t + u) * (size_t)a->halves * (size_t)pad;
    float32x4_t acc[BD_RB][BD_TB];
    for (int i = 0; i < BD_RB; i++)
        for (int u = 0; u < NT; u++)
            acc[i][u] = vdupq_n_f32(0.0f);
    for (int64_t k = 0; k < k8; k += 8) {
        bfloat16x8_t wv[BD_RB];
        for (int i = 0; i < BD_RB; i++)
            wv[i] = bd_load(w[i] + k);
        for (int u = 0; u < NT; u++) {
            const bfloat16x8_t xh = bd_load(x[u] + k);
            for (int i = 0; i < BD_RB; i++)
                acc[i][u] = vbfdotq_f32(acc[i][u], wv[i], xh);
            if (two) {
                const bfloat16x8_t xl = bd_load(x[u] + pad + k);
                for (int i = 0; i < BD_RB; i++)
                    acc[i][u] = vbfdotq_f32(acc[i][u], wv[i], xl);
            }
        }
    }
    for (int i = 0; i < nr; i++)
        for (int u = 0; u < NT; u++) {
            float tail = 0;
            for (int64_t k = k8; k < cols; k++)
                tail += tl_cpu_bf16_to_f32(w[i][k]) *
                        (tl_cpu_bf16_to_f32(x[u][k]) + (two ? tl_cpu_bf16_to_f32(x[u][pad + k]) : 0.0f));
            a->out[(size_t)(t + u) * (size_t)a->rows + (size_t)(r + i)] = vaddvq_f32(acc[i][u]) + tail;
        }
}

/* One token: a row at a time, one stream through the weights, each row summed the same way
 * wherever the backend cuts the rows among threads; more: tiles. Exact (hi + lo) or x rounded,
 * as the backend packed it; a prefill and the decodes of the same tokens so see the same x. */
void tl_cpu_mm_bf16_neon_bf16(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    if (a->T == 1) {
        for (int64_t r = r0; r < r1; r++)
            a->out[r] = bd_dot((const uint16_t *)a->w + (size_t)r * (size_t)a->cols, a->xpack,
                               a->halves == 2 ? a->xpack + a->cols_pad : NULL, a->cols);
        return;
    }
    for (int64_t r = r0; r < r1; r += BD_RB) {
        int nr = r1 - r < BD_RB ? (int)(r1 - r) : BD_RB;
        int t = 0;
        for (; t + BD_TB <= a->T; t += BD_TB)
            bd_tile(a, BD_TB, r, nr, t);
        switch (a->T - t) {   /* the last few tokens, each tile shape compiled on its own */
        case 3: bd_tile(a, 3, r, nr, t); break;
        case 2: bd_tile(a, 2, r, nr, t); break;
        case 1: bd_tile(a, 1, r, nr, t); break;
        default: break;
        }
    }
}
