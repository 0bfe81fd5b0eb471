/* bf16 weights straight into BFDOT (vbfdotq_f32, FEAT_BF16: each fp32 lane adds the products of
 * 2 bf16 pairs, 8 weights an instruction) against x packed as bf16 by the backend (want_pack:
 * tl_cpu_pack_bf16 below). In the exact mode (the default) x is split into hi + lo (x ~= hi +
 * lo to about 2^-17 relative) and each weight meets both, so the result keeps fp32-level
 * accuracy; with it off, x is rounded to bf16 once, as the AVX-512 BF16 set does. A decode
 * streams through the weights a row at a time; more tokens run 4 x 4 row x token tiles on
 * BFMMLA (FEAT_BF16 has both instructions). Built with -march=armv8.2-a+bf16
 * (kernels/cpu/CMakeLists.txt); called only where the CPU reports the extension (mm_neon.c: the
 * "neon-bf16" set). */
#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

#include "cpu.h"
#include "mm.h"

#define BD_PF 1024   /* bytes ahead in a row's stream */

/* x as [T][halves][cols_pad] bf16, zero beyond cols (mm.h). A scalar pass: it is O(cols) a
 * token against the product's O(rows x cols). */
void tl_cpu_pack_bf16(uint16_t *xpack, const float *x, int T, int64_t cols, int64_t cols_pad, int halves)
{
    for (int t = 0; t < T; t++) {
        uint16_t *hi = xpack + (size_t)t * (size_t)halves * (size_t)cols_pad, *lo = hi + cols_pad;
        const float *xr = x + (size_t)t * (size_t)cols;
        for (int64_t i = 0; i < cols_pad; i++) {
            hi[i] = i < cols ? tl_cpu_x_to_bf16(xr[i]) : 0;
            if (halves == 2)
                lo[i] = i < cols ? tl_cpu_x_to_bf16(xr[i] - tl_cpu_bf16_to_f32(hi[i])) : 0;
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

/* Rows r..r+nr-1 (nr <= BD_RB) times tokens t..t+nt-1 (nt <= BD_TB) with BFMMLA
 * (vbfmmlaq_f32: a 2 x 2 block of fp32 sums += 2 rows of 4 bf16 times 2 tokens of 4, 16
 * products an instruction where BFDOT does 8). Rows and tokens go in pairs: a weight pair's
 * operand is 4 of one row's k then 4 of the next's (the 64-bit halves of their vectors zipped),
 * and so is a token pair's. Missing rows and tokens repeat the last, computed and not stored;
 * each output's sum is the same whichever pair slot it takes. */
#define BD_RB 4
#define BD_TB 4
static inline __attribute__((always_inline)) bfloat16x8_t bd_pair(uint16x8_t a, uint16x8_t b, int hi)
{
    const uint64x2_t a64 = vreinterpretq_u64_u16(a), b64 = vreinterpretq_u64_u16(b);
    return vreinterpretq_bf16_u64(hi ? vzip2q_u64(a64, b64) : vzip1q_u64(a64, b64));
}

static void bd_tile(const tl_cpu_mm *a, int64_t r, int nr, int t, int nt)
{
    const int64_t cols = a->cols, k8 = cols / 8 * 8, pad = a->cols_pad;
    const int two = a->halves == 2;
    const uint16_t *w[BD_RB], *x[BD_TB];
    for (int i = 0; i < BD_RB; i++)
        w[i] = (const uint16_t *)a->w + (size_t)(r + (i < nr ? i : nr - 1)) * (size_t)cols;
    for (int u = 0; u < BD_TB; u++)
        x[u] = a->xpack + (size_t)(t + (u < nt ? u : nt - 1)) * (size_t)a->halves * (size_t)pad;
    /* [row pair][token pair], lanes (2i, 2u), (2i, 2u + 1), (2i + 1, 2u), (2i + 1, 2u + 1) */
    float32x4_t acc[BD_RB / 2][BD_TB / 2];
    for (int i = 0; i < BD_RB / 2; i++)
        for (int u = 0; u < BD_TB / 2; u++)
            acc[i][u] = vdupq_n_f32(0.0f);
    for (int64_t k = 0; k < k8; k += 8) {
        bfloat16x8_t wp[BD_RB / 2][2], xp[BD_TB / 2][2];
        for (int i = 0; i < BD_RB / 2; i++) {
            const uint16x8_t w0 = vld1q_u16(w[2 * i] + k), w1 = vld1q_u16(w[2 * i + 1] + k);
            wp[i][0] = bd_pair(w0, w1, 0);
            wp[i][1] = bd_pair(w0, w1, 1);
        }
        for (int h = 0; h <= two; h++) {   /* x's hi half, then in the exact mode its lo one */
            for (int u = 0; u < BD_TB / 2; u++) {
                const uint16x8_t x0 = vld1q_u16(x[2 * u] + h * pad + k);
                const uint16x8_t x1 = vld1q_u16(x[2 * u + 1] + h * pad + k);
                xp[u][0] = bd_pair(x0, x1, 0);
                xp[u][1] = bd_pair(x0, x1, 1);
            }
            for (int i = 0; i < BD_RB / 2; i++)
                for (int u = 0; u < BD_TB / 2; u++)
                    acc[i][u] = vbfmmlaq_f32(vbfmmlaq_f32(acc[i][u], wp[i][0], xp[u][0]), wp[i][1], xp[u][1]);
        }
    }
    for (int i = 0; i < nr; i++)
        for (int u = 0; u < nt; u++) {
            float tail = 0;
            for (int64_t k = k8; k < cols; k++)
                tail += tl_cpu_bf16_to_f32(w[i][k]) *
                        (tl_cpu_bf16_to_f32(x[u][k]) + (two ? tl_cpu_bf16_to_f32(x[u][pad + k]) : 0.0f));
            float c[4];
            vst1q_f32(c, acc[i / 2][u / 2]);
            a->out[(size_t)(t + u) * (size_t)a->rows + (size_t)(r + i)] = c[2 * (i % 2) + u % 2] + tail;
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
    for (int64_t r = r0; r < r1; r += BD_RB)
        for (int t = 0; t < a->T; t += BD_TB)
            bd_tile(a, r, r1 - r < BD_RB ? (int)(r1 - r) : BD_RB, t, a->T - t < BD_TB ? a->T - t : BD_TB);
}
