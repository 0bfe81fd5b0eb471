/* Products with K-quant weights (Q4_K, Q5_K, Q6_K; kernels/cpu/kq*.c), for every kernel set this
 * CPU runs and 1-3 threads, against the definition in double on the dequantized weights
 * (tl_dequantize_row, which gguf_kquant_dequant checks against gguf.quants.dequantize bit for
 * bit) within the bound x's Q8_K quantization allows. Also: tl_kquant_at equals the row decoder,
 * results do not depend on the thread count and matmul_n equals separate products, bit for bit;
 * below 8 tokens (a batched decode's path) a product's tokens equal single-token products bit
 * for bit too. From 8 on, the x86 sets' prefill sums over repacked panels (kqgemm_avx2.h) in
 * another order: shapes of 8 to 250 tokens, rows not a multiple of 8, a panel's partial
 * super-blocks and two blocks of tokens are each held to the definition's bound instead.
 * Weights are random bytes with finite f16 scales (every bit pattern of the quants and 6-bit
 * scales), at odd addresses. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "kq.h"
#include "tl_test.h"
#include "tokenloop/backend.h"
#include "tokenloop/quant.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}
static float rndf(void) { return (float)(rnd() % 2000001) / 1000000.0f - 1.0f; }

static const tl_dtype kdts[3] = {TL_Q4_K, TL_Q5_K, TL_Q6_K};

/* An f16 of magnitude 2^-14 .. 2^1, either sign (0 once in a while). */
static uint16_t rnd_f16(void)
{
    uint32_t r = rnd();
    if (r % 61 == 0)
        return 0;
    return (uint16_t)((r & 0x8000) | (uint16_t)(1 + (r >> 16) % 16) << 10 | (r >> 4 & 0x3ff));
}

/* rows x cols of random blocks; the f16 scales (d, dmin: bytes 0-3; Q6_K's d: 208-209) finite.
 * One byte past an aligned allocation, so every block is misaligned. */
static tl_weight kq_weight(tl_dtype dt, int64_t rows, int64_t cols, void **raw)
{
    const size_t rb = tl_dtype_row_bytes(dt, cols), bb = tl_dtype_block_bytes(dt);
    uint8_t *mem = malloc((size_t)rows * rb + 1), *w = mem + 1;
    for (size_t i = 0; i < (size_t)rows * rb; i++)
        w[i] = (uint8_t)rnd();
    for (size_t b = 0; b < (size_t)rows * rb / bb; b++) {
        uint8_t *blk = w + b * bb;
        uint16_t h[2] = {rnd_f16(), rnd_f16()};
        if (dt == TL_Q6_K)
            memcpy(blk + 208, h, 2);
        else
            memcpy(blk, h, 4);
    }
    *raw = mem;
    return (tl_weight){.data = w, .dtype = dt, .rows = rows, .cols = cols};
}

/* tl_kquant_at, element by element, against the row decoder: the same bits. */
static void check_at(void)
{
    for (int k = 0; k < 3; k++) {
        void *raw;
        tl_weight W = kq_weight(kdts[k], 3, 512, &raw);
        float y[3 * 512];
        int bad = 0;
        for (int r = 0; r < 3; r++)
            tl_dequantize_row(kdts[k], (const char *)W.data + (size_t)r * tl_dtype_row_bytes(kdts[k], 512), y + 512 * r,
                              512);
        for (int i = 0; i < 3 * 512; i++) {
            float a = tl_kquant_at(kdts[k], W.data, i);
            bad += memcmp(&a, &y[i], sizeof a) != 0;
        }
        TL_CHECK_MSG(bad == 0, "%s: tl_kquant_at differs from the row decoder at %d of %d elements",
                     tl_dtype_name(kdts[k]), bad, 3 * 512);
        free(raw);
    }
}

/* x: token rows of different magnitudes, one with an outlier, one all zero. */
static float *make_x(int T, int64_t cols)
{
    float *x = malloc(sizeof(float) * (size_t)(T * cols));
    for (int t = 0; t < T; t++)
        for (int64_t c = 0; c < cols; c++) {
            float v = t % 4 == 1 ? 100.0f * rndf() : t % 4 == 2 ? 1e-3f * rndf() : rndf();
            x[t * cols + c] = t % 4 == 3 && T > 3 ? 0.0f : v;
        }
    if (cols > 300)
        x[(T - 1) * cols + 300] = 50.0f;
    return x;
}

/* out against sum_j w_j x_j in double. Q8_K puts x_j = dx q_j + e_j, |e_j| <= |dx| / 2 (dx =
 * max|x| / 127 of the block of 256, stored as a float); so |kernel - exact| <= sum over blocks
 * of |dx|/2 * sum |w_j| plus the float rounding of each block's terms, bounded here by 2^-20 of
 * sum |d sc q x| + |dmin m x| (every term before the subtraction; 63 the largest 6-bit scale). */
static int check_def(const char *tag, const tl_weight *W, const float *x, const float *out, int T)
{
    const tl_dtype dt = W->dtype;
    const int64_t cols = W->cols, nb = cols / TL_QK_K;
    const size_t rb = tl_dtype_row_bytes(dt, cols), bb = tl_dtype_block_bytes(dt);
    float *wrow = malloc(sizeof(float) * (size_t)cols);
    int bad = 0;
    double worst = 0;
    for (int64_t r = 0; r < W->rows; r++) {
        const uint8_t *row = (const uint8_t *)W->data + (size_t)r * rb;
        tl_dequantize_row(dt, row, wrow, cols);
        for (int t = 0; t < T; t++) {
            const float *xt = x + t * cols;
            double exact = 0, bound = 0;
            for (int64_t b = 0; b < nb; b++) {
                double amax = 0, wabs = 0, xabs = 0;
                for (int j = 0; j < TL_QK_K; j++) {
                    exact += (double)wrow[b * TL_QK_K + j] * xt[b * TL_QK_K + j];
                    amax = fmax(amax, fabs(xt[b * TL_QK_K + j]));
                    wabs += fabs(wrow[b * TL_QK_K + j]);
                    xabs += fabs(xt[b * TL_QK_K + j]);
                }
                const uint8_t *blk = row + (size_t)b * bb;
                uint16_t h[2];
                memcpy(h, dt == TL_Q6_K ? blk + 208 : blk, dt == TL_Q6_K ? 2 : 4);
                double d = fabs(tl_f16_to_f32(h[0])), dmin = dt == TL_Q6_K ? 0 : fabs(tl_f16_to_f32(h[1]));
                double qmax = dt == TL_Q4_K ? 15 : dt == TL_Q5_K ? 31 : 32;
                double scmax = dt == TL_Q6_K ? 128 : 63;
                bound += amax / 127 / 2 * 1.0001 * wabs + 0x1p-20 * (d * scmax * qmax + dmin * 63) * xabs * 1.01;
            }
            const double got = out[t * W->rows + r], err = fabs(got - exact);
            if (!(err <= bound + 1e-30)) {
                if (bad++ < 3)
                    fprintf(stderr, "%s: row %lld token %d: %.9g, exact %.9g, bound %.3g\n", tag, (long long)r, t,
                            got, exact, bound);
            }
            if (bound > 0 && err / bound > worst)
                worst = err / bound;
        }
    }
    free(wrow);
    TL_CHECK_MSG(bad == 0, "%s: %d of %lld outputs outside the Q8_K bound", tag, bad, (long long)(W->rows * T));
    return bad;
}

static void check_product(void *ctx, const char *tag, tl_dtype dt, int64_t rows, int64_t cols, int T)
{
    const tl_backend_ops *ops = tl_backend_cpu();
    void *raw;
    tl_weight W = kq_weight(dt, rows, cols, &raw);
    float *x = make_x(T, cols);
    float *out = malloc(sizeof(float) * (size_t)(T * rows)), *one = malloc(sizeof(float) * (size_t)rows);
    for (int64_t i = 0; i < T * rows; i++)
        out[i] = 12345.0f;
    ops->matmul(ctx, out, x, &W, T);
    char what[160];
    snprintf(what, sizeof what, "%s %s [%lld x %lld] T=%d", tag, tl_dtype_name(dt), (long long)rows, (long long)cols, T);
    check_def(what, &W, x, out, T);
    if (T > 1 && T < 8) {   /* each token alone: the same bits */
        int differ = 0;
        for (int t = 0; t < T; t++) {
            ops->matmul(ctx, one, x + t * cols, &W, 1);
            differ += memcmp(one, out + t * rows, sizeof(float) * (size_t)rows) != 0;
        }
        TL_CHECK_MSG(differ == 0, "%s: %d tokens differ from their single-token products", what, differ);
    }
    free(x);
    free(out);
    free(one);
    free(raw);
}

/* q/k/v of one width as one matmul_n, against three matmul calls: the same bits. The dtypes
 * may differ (a Q4_K_M file mixes Q4_K and Q6_K). */
static void check_matmul_n(void *ctx, const char *tag, int T)
{
    const tl_backend_ops *ops = tl_backend_cpu();
    const int64_t cols = 512, rows[3] = {40, 24, 24};
    const tl_dtype dts[2][3] = {{TL_Q4_K, TL_Q4_K, TL_Q4_K}, {TL_Q4_K, TL_Q6_K, TL_Q5_K}};
    float *x = make_x(T, cols);
    for (int v = 0; v < 2; v++) {
        void *raw[3];
        tl_weight W[3];
        float *a[3], *b[3];
        for (int i = 0; i < 3; i++) {
            W[i] = kq_weight(dts[v][i], rows[i], cols, &raw[i]);
            a[i] = malloc(sizeof(float) * (size_t)(T * rows[i]));
            b[i] = malloc(sizeof(float) * (size_t)(T * rows[i]));
            ops->matmul(ctx, a[i], x, &W[i], T);
        }
        const tl_weight *wp[3] = {&W[0], &W[1], &W[2]};
        ops->matmul_n(ctx, 3, b, x, wp, T);
        for (int i = 0; i < 3; i++) {
            TL_CHECK_MSG(!memcmp(a[i], b[i], sizeof(float) * (size_t)(T * rows[i])),
                         "%s T=%d: matmul_n's product %d (%s) differs from matmul's", tag, T, i,
                         tl_dtype_name(W[i].dtype));
            free(a[i]);
            free(b[i]);
            free(raw[i]);
        }
    }
    free(x);
}

/* The same product on 1, 2 and 3 threads of one set: the same bits (a row is one thread's). */
static void check_threads(const char *isa, tl_dtype dt)
{
    const tl_backend_ops *ops = tl_backend_cpu();
    void *raw;
    const int64_t rows = 300, cols = 1024;
    tl_weight W = kq_weight(dt, rows, cols, &raw);
    float *x = make_x(4, cols), *out[3];
    for (int n = 1; n <= 3; n++) {
        tl_error err;
        void *ctx = tl_cpu_create_isa(n, isa, &err);
        out[n - 1] = malloc(sizeof(float) * 4 * (size_t)rows);
        ops->matmul(ctx, out[n - 1], x, &W, 4);
        ops->matmul(ctx, out[n - 1] + 3 * rows, x + 3 * cols, &W, 1);   /* a decode too */
        ops->destroy(ctx);
    }
    for (int n = 2; n <= 3; n++)
        TL_CHECK_MSG(!memcmp(out[0], out[n - 1], sizeof(float) * 4 * (size_t)rows), "%s %s: %d threads differ from 1",
                     isa, tl_dtype_name(dt), n);
    for (int n = 0; n < 3; n++)
        free(out[n]);
    free(x);
    free(raw);
}

/* The AVX2 quantizer of x writes the portable one's bytes: random blocks, a block whose largest
 * magnitude comes as -a before +a (the first counts), an all-zero block, tiny values. */
static void check_qpack(void)
{
#ifdef __x86_64__
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        return;
    enum { T = 3, COLS = 1024 };
    static float x[T * COLS];
    static int8_t q[2][T * COLS];
    static float d[2][T * COLS / 256];
    static int16_t bs[2][T * COLS / 16];
    for (int i = 0; i < T * COLS; i++)
        x[i] = rndf() * (i / 256 % 3 == 2 ? 1e-30f : 3.0f);
    x[256 + 2] = -5.0f;   /* the tie: -5 first, then +5 */
    x[256 + 200] = 5.0f;
    x[COLS + 7] = 4.0f;   /* and the other order */
    x[COLS + 9] = -4.0f;
    memset(x + 2 * COLS + 512, 0, 256 * sizeof(float));
    for (int v = 0; v < 2; v++) {
        tl_cpu_mm m = {.x = x, .cols = COLS, .T = T, .xq = q[v], .xd = d[v], .xc = (const int32_t *)(void *)bs[v]};
        for (int t = 0; t < T; t++)
            (v ? tl_cpu_qpack_q8k_avx2 : tl_cpu_qpack_q8k)(&m, TL_Q4_K, x, t, 1);
    }
    TL_CHECK_MSG(!memcmp(q[0], q[1], sizeof q[0]), "avx2 Q8_K quants differ from the portable ones");
    TL_CHECK_MSG(!memcmp(d[0], d[1], sizeof d[0]), "avx2 Q8_K scales differ from the portable ones");
    TL_CHECK_MSG(!memcmp(bs[0], bs[1], sizeof bs[0]), "avx2 Q8_K bsums differ from the portable ones");
    TL_CHECK_MSG(d[0][1] > 0 && d[0][4] < 0, "the tie's first element sets the sign (d = -max / 127): %g %g", d[0][1], d[0][4]);
#endif
}

int main(void)
{
    check_at();
    check_qpack();
    const char *isas[] = {"generic", "avx2", "avx512", "avx512bf16", "neon", "neon-dotprod", "neon-bf16"};
    static const struct { int64_t rows, cols; int T; } shapes[] = {
        {1, 256, 1}, {7, 256, 1}, {37, 512, 1}, {130, 2048, 1}, {19, 8192, 1},
        {5, 256, 2}, {13, 768, 3}, {21, 512, 4}, {9, 1280, 5}, {17, 256, 7}, {33, 512, 16}, {6, 2048, 33},
        {11, 1280, 8}, {9, 256, 250},
    };
    int ran = 0;
    for (size_t s = 0; s < sizeof isas / sizeof isas[0]; s++) {
        for (int threads = 1; threads <= 3; threads++) {
            tl_error err;
            void *ctx = tl_cpu_create_isa(threads, isas[s], &err);
            if (!ctx) {
                if (threads == 1)
                    printf("kquant: %s: %s (skipped)\n", isas[s], err.msg);
                break;
            }
            char tag[64];
            snprintf(tag, sizeof tag, "%s/%dt", isas[s], threads);
            for (int k = 0; k < 3; k++)
                for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
                    check_product(ctx, tag, kdts[k], shapes[i].rows, shapes[i].cols, shapes[i].T);
            check_matmul_n(ctx, tag, 1);
            check_matmul_n(ctx, tag, 3);
            tl_backend_cpu()->destroy(ctx);
            ran++;
        }
        tl_error err;
        void *probe = tl_cpu_create_isa(1, isas[s], &err);
        if (probe) {
            tl_backend_cpu()->destroy(probe);
            for (int k = 0; k < 3; k++)
                check_threads(isas[s], kdts[k]);
        }
    }
    TL_CHECK_MSG(ran >= 3, "only %d contexts ran", ran);
    return TL_TEST_END("kquant");
}
