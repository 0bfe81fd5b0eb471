/* Products with Q8_0/Q4_0 weights, the portable way, and the quantization of x they all read.
 * As in llama.cpp, x is quantized to Q8_0 too, so each block's product is an exact integer sum
 * times two scales: out = sum over blocks of (dw * dx) * sum_j qw_j * qx_j. These scalar
 * kernels define the result; the SIMD ones (qmm_avx2.c, qmm_avx512vnni.c) add the same terms in another order. */
#include <math.h>
#include <string.h>

#include "cpu.h"
#include "mm.h"
#include "tokenloop/quant.h"

void tl_cpu_pack_q8(int8_t *xq, float *xd, int32_t *xc, const float *x, int T, int64_t cols, int qbias)
{
    const int64_t nb = cols / TL_QK;
    for (int t = 0; t < T; t++)
        for (int64_t b = 0; b < nb; b++) {
            tl_block_q8_0 blk;
            tl_quantize_row(TL_Q8_0, x + (size_t)t * (size_t)cols + b * TL_QK, &blk, TL_QK);
            int8_t *q = xq + (size_t)t * (size_t)cols + b * TL_QK;
            memcpy(q, blk.qs, TL_QK);
            xd[(size_t)t * (size_t)nb + b] = tl_f16_to_f32(blk.d);
            if (xc)
                for (int g = 0; g < TL_QK / 4; g++)
                    xc[((size_t)t * (size_t)cols + (size_t)(b * TL_QK)) / 4 + (size_t)g] =
                        -qbias * (q[4 * g] + q[4 * g + 1] + q[4 * g + 2] + q[4 * g + 3]);
        }
}

static int32_t dot_q8_0(const tl_block_q8_0 *w, const int8_t *x)
{
    int32_t s = 0;
    for (int j = 0; j < TL_QK; j++)
        s += w->qs[j] * x[j];
    return s;
}

static int32_t dot_q4_0(const tl_block_q4_0 *w, const int8_t *x)
{
    int32_t s = 0;
    for (int j = 0; j < TL_QK / 2; j++)
        s += ((w->qs[j] & 15) - 8) * x[j] + ((w->qs[j] >> 4) - 8) * x[j + TL_QK / 2];
    return s;
}

static void mm_q_generic(const tl_cpu_mm *a, tl_dtype dt, int64_t r0, int64_t r1)
{
    const int64_t nb = a->cols / TL_QK;
    const size_t row_bytes = tl_dtype_row_bytes(dt, a->cols), bb = tl_dtype_block_bytes(dt);
    for (int64_t r = r0; r < r1; r++) {
        const char *w = (const char *)a->w + (size_t)r * row_bytes;
        for (int t = 0; t < a->T; t++) {
            const int8_t *xq = a->xq + (size_t)t * (size_t)a->cols;
            const float *xd = a->xd + (size_t)t * (size_t)nb;
            float acc = 0;
            for (int64_t b = 0; b < nb; b++) {
                const void *blk = w + (size_t)b * bb;
                uint16_t d;
                memcpy(&d, blk, 2);   /* both blocks start with the f16 scale */
                int32_t s = dt == TL_Q8_0 ? dot_q8_0(blk, xq + b * TL_QK) : dot_q4_0(blk, xq + b * TL_QK);
                acc += tl_f16_to_f32(d) * xd[b] * (float)s;
            }
            a->out[(size_t)t * (size_t)a->rows + (size_t)r] = acc;
        }
    }
}

void tl_cpu_mm_q8_0_generic(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    mm_q_generic(a, TL_Q8_0, r0, r1);
}

void tl_cpu_mm_q4_0_generic(const tl_cpu_mm *a, int64_t r0, int64_t r1)
{
    mm_q_generic(a, TL_Q4_0, r0, r1);
}
