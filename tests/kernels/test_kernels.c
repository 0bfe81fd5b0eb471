/* The CPU backend's operations, for every kernel set this CPU runs (portable, AVX2, AVX-512,
 * AVX-512 BF16) and 1, 2 and 3 threads, against the scalar reference in kernels/cpu/ref.c:
 * random inputs, all weight dtypes, sizes that are not multiples of any vector or tile,
 * decode (T = 1) and prefill (T > 1) shapes, weights at unaligned addresses.
 * usage: test_kernels [--threaded-only]
 *   --threaded-only  leave out the 1-thread contexts, which start no worker: what ThreadSanitizer
 *                    can check is in the 2- and 3-thread ones (the TSan build's kernels_cpu;
 *                    the other builds run all three). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdatomic.h>

#include "cpu.h"
#include "mm.h"
#include "pool.h"
#include "tl_test.h"
#include "tokenloop/backend.h"
#include "tokenloop/quant.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}
static float rndf(void) { return (float)(rnd() % 2000001) / 1000000.0f - 1.0f; }

/* Random weights of a dtype: mostly ordinary magnitudes, some zeros and subnormals. */
static void fill_weight(void *buf, tl_dtype dt, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        uint32_t r = rnd();
        int special = r % 97 == 0;
        if (dt == TL_F32) {
            ((float *)buf)[i] = special ? 0.0f : rndf();
        } else if (dt == TL_BF16) {
            uint16_t sign = (uint16_t)((r >> 1) & 0x8000), exp = (uint16_t)(120 + (r >> 3) % 8);
            ((uint16_t *)buf)[i] = special ? sign : (uint16_t)(sign | exp << 7 | (r >> 8 & 0x7f));
        } else {
            uint16_t sign = (uint16_t)((r >> 1) & 0x8000), exp = (uint16_t)(8 + (r >> 3) % 8);
            if (special)   /* a subnormal f16 */
                ((uint16_t *)buf)[i] = (uint16_t)(sign | (r >> 8 & 0x3ff));
            else
                ((uint16_t *)buf)[i] = (uint16_t)(sign | exp << 10 | (r >> 8 & 0x3ff));
        }
    }
}

static const tl_backend_ops *ops;

/* The pool: every item runs exactly once, on a valid thread id, and is finished (its writes
 * visible) when tl_pool_for returns; thousands of short jobs back to back, as in decode. */
typedef struct {
    atomic_int count[64];
    int value[64];
    int nthreads, bad_tid, round;
} pool_probe;

static void pool_item(void *arg, int item, int tid)
{
    pool_probe *p = arg;
    atomic_fetch_add(&p->count[item], 1);
    p->value[item] = p->round * 64 + item;
    if (tid < 0 || tid >= p->nthreads)
        p->bad_tid = 1;
}

static void check_pool(int threads)
{
    tl_pool *pool = tl_pool_create(threads);
    TL_CHECK(pool != NULL);
    if (!pool)
        return;
    TL_CHECK_INT(tl_pool_size(pool), threads);
    static pool_probe p;
    int ok = 1;
    p.nthreads = threads;
    p.bad_tid = 0;
    for (int round = 0; round < 3000 && ok; round++) {
        int n = 1 + (int)(rnd() % 64);
        for (int i = 0; i < 64; i++)
            atomic_store(&p.count[i], 0);
        p.round = round;
        tl_pool_for(pool, n, pool_item, &p);
        for (int i = 0; i < 64; i++)
            if (atomic_load(&p.count[i]) != (i < n) || (i < n && p.value[i] != round * 64 + i))
                ok = 0;
    }
    TL_CHECK_MSG(ok, "pool of %d: an item ran twice, never, or unfinished", threads);
    TL_CHECK(!p.bad_tid);
    tl_pool_for(pool, 0, pool_item, &p);   /* nothing to do: returns at once */
    tl_pool_destroy(pool);
}

/* x rounded to bf16, nearest even, a subnormal to zero: what a product reads with the exact
 * mode off (docs/accuracy.md). Written here apart from the kernel's own rounding. */
static float round_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if (!(u & 0x7f800000u))
        u &= 0x80000000u;
    else
        u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* matmul_n (q/k/v, gate/up in one operation) equals a matmul per weight, bit for bit: each
 * row is computed whole by one thread whichever chunk holds it. A weight of another dtype in
 * the list (a model whose tensors differ) takes the one-at-a-time path. */
static void check_matmul_n(void *ctx, const char *tag, tl_dtype dt, int64_t cols, int T, int mixed)
{
    const int64_t rows[3] = {37, 8, 131};
    void *raw[3];
    tl_weight W[3];
    const tl_weight *Wp[3];
    float *out[3], *one[3];
    for (int i = 0; i < 3; i++) {
        tl_dtype d = mixed && i == 1 ? TL_F32 : dt;
        size_t e = tl_dtype_size(d);
        raw[i] = malloc((size_t)(rows[i] * cols) * e);
        fill_weight(raw[i], d, rows[i] * cols);
        W[i] = (tl_weight){.data = raw[i], .dtype = d, .rows = rows[i], .cols = cols};
        Wp[i] = &W[i];
        out[i] = malloc(sizeof(float) * (size_t)(T * rows[i]));
        one[i] = malloc(sizeof(float) * (size_t)(T * rows[i]));
        for (int64_t k = 0; k < T * rows[i]; k++)
            out[i][k] = 12345.0f;
    }
    float *x = malloc(sizeof(float) * (size_t)(T * cols));
    for (int64_t i = 0; i < T * cols; i++)
        x[i] = rndf();
    ops->matmul_n(ctx, 3, out, x, Wp, T);
    for (int i = 0; i < 3; i++) {
        ops->matmul(ctx, one[i], x, &W[i], T);
        TL_CHECK_MSG(!memcmp(out[i], one[i], sizeof(float) * (size_t)(T * rows[i])),
                     "%s matmul_n %s%s cols %lld T=%d: product %d differs from matmul", tag, tl_dtype_name(dt),
                     mixed ? " + f32" : "", (long long)cols, T, i);
        free(raw[i]);
        free(out[i]);
        free(one[i]);
    }
    free(x);
}

/* round_x: the kernel set rounds x to bf16 in this product (exact mode off, bf16 weights,
 * AVX-512 BF16, keep_x not set), so the reference gets the rounded x; else x as it is. */
static void check_matmul(void *ctx, const char *tag, tl_dtype dt, int64_t rows, int64_t cols, int T, int keep_x,
                         int round_x)
{
    size_t es = tl_dtype_size(dt);
    /* one element of slack so the weights can start at an odd 2-byte (or 4-byte) offset */
    char *raw = malloc((size_t)(rows * cols + 1) * es);
    tl_weight W = {.data = raw + es, .dtype = dt, .rows = rows, .cols = cols, .keep_x = keep_x};
    fill_weight(raw + es, dt, rows * cols);
    float *x = malloc(sizeof(float) * (size_t)(T * cols));
    for (int64_t i = 0; i < T * cols; i++)
        x[i] = rndf();
    float *out = malloc(sizeof(float) * (size_t)(T * rows)), *ref = malloc(sizeof(float) * (size_t)(T * rows));
    for (int64_t i = 0; i < T * rows; i++)
        out[i] = 12345.0f;   /* every output must be written, none left over */
    ops->matmul(ctx, out, x, &W, T);
    if (round_x)
        for (int64_t i = 0; i < T * cols; i++)
            x[i] = round_bf16(x[i]);
    tl_cpu_ref_matmul(ref, x, &W, T);
    /* the weights as floats once, not once per token (the same values the tolerance read) */
    float *wf = malloc(sizeof(float) * (size_t)(rows * cols));
    for (int64_t i = 0; i < rows * cols; i++)
        wf[i] = tl_cpu_weight_at(&W, i);
    int bad = 0;
    double worst = 0;
    for (int t = 0; t < T && bad < 3; t++)
        for (int64_t r = 0; r < rows; r++) {
            double mag = 0;
            for (int64_t c = 0; c < cols; c++)
                mag += fabs((double)wf[r * cols + c] * x[t * cols + c]);
            double d = fabs((double)out[t * rows + r] - ref[t * rows + r]);
            double tol = 2e-5 * mag + 1e-6;
            if (d / tol > worst)
                worst = d / tol;
            if (!(d <= tol) && bad++ < 3)
                fprintf(stderr, "%s %s %lldx%lld T=%d: out[%d][%lld] = %.9g, ref %.9g\n", tag,
                        tl_dtype_name(dt), (long long)rows, (long long)cols, T, t, (long long)r,
                        out[t * rows + r], ref[t * rows + r]);
        }
    TL_CHECK_MSG(bad == 0, "%s matmul %s %lldx%lld T=%d%s: worst error %.2f x tolerance", tag,
                 tl_dtype_name(dt), (long long)rows, (long long)cols, T, round_x ? " (x as bf16)" : "", worst);
    free(wf);
    free(raw);
    free(x);
    free(out);
    free(ref);
}

/* A Q8_0/Q4_0 weight quantized from random floats, one byte past an aligned address (blocks are
 * 34 and 18 bytes: a model's rows start anywhere). *raw is what to free. */
static tl_weight quant_weight(tl_dtype dt, int64_t rows, int64_t cols, void **raw)
{
    size_t rb = tl_dtype_row_bytes(dt, cols);
    char *mem = malloc((size_t)rows * rb + 1);
    float *row = malloc(sizeof(float) * (size_t)cols);
    for (int64_t r = 0; r < rows; r++) {
        float scale = r % 5 == 0 ? 1e-3f : 1.0f;   /* rows of different magnitudes */
        for (int64_t c = 0; c < cols; c++)
            row[c] = rnd() % 53 == 0 ? 0.0f : scale * rndf();
        if (r % 17 == 3)   /* a row of zeros: scale 0 */
            memset(row, 0, sizeof(float) * (size_t)cols);
        tl_quantize_row(dt, row, mem + 1 + (size_t)r * rb, cols);
    }
    free(row);
    *raw = mem;
    return (tl_weight){.data = mem + 1, .dtype = dt, .rows = rows, .cols = cols};
}

/* Q8_0/Q4_0 products: x is quantized as llama.cpp quantizes it (tl_cpu_pack_q8), then each
 * block is an exact integer sum times dw * dx. Checked two ways: against that definition summed
 * in double (only the order of float additions may differ), and against the fp32 product with
 * the dequantized weights within the bound x's quantization allows (|x - dx * qx| <= 0.57 dx:
 * half a step, plus the scale's rounding to f16, at most 127 * 2^-11 of a step). */
static void check_qmatmul(void *ctx, const char *tag, tl_dtype dt, int64_t rows, int64_t cols, int T)
{
    void *raw;
    tl_weight W = quant_weight(dt, rows, cols, &raw);
    const int64_t nb = cols / TL_QK;
    float *x = malloc(sizeof(float) * (size_t)(T * cols));
    for (int64_t i = 0; i < T * cols; i++)
        x[i] = (i / cols) % 3 == 1 ? 100.0f * rndf() : rndf();
    float *out = malloc(sizeof(float) * (size_t)(T * rows));
    for (int64_t i = 0; i < T * rows; i++)
        out[i] = 12345.0f;
    ops->matmul(ctx, out, x, &W, T);
    int8_t *xq = malloc((size_t)(T * cols));
    float *xd = malloc(sizeof(float) * (size_t)(T * nb)), *wrow = malloc(sizeof(float) * (size_t)cols);
    tl_cpu_pack_q8(xq, xd, NULL, x, T, cols, 0);
    int bad = 0;
    double worst_def = 0, worst_fp = 0;
    for (int64_t r = 0; r < rows; r++) {
        tl_dequantize_row(dt, (const char *)W.data + (size_t)r * tl_dtype_row_bytes(dt, cols), wrow, cols);
        for (int t = 0; t < T; t++) {
            double def = 0, mag = 0, fp = 0, bound = 0;
            for (int64_t b = 0; b < nb; b++) {
                float dw = 0;
                int32_t isum = 0;
                double wabs = 0;
                for (int j = 0; j < TL_QK; j++) {
                    float wv = wrow[b * TL_QK + j];
                    wabs += fabs(wv);
                    fp += (double)wv * x[t * cols + b * TL_QK + j];
                }
                /* the block's f16 scale: its first two bytes */
                const char *blk = (const char *)W.data + (size_t)r * tl_dtype_row_bytes(dt, cols) +
                                  (size_t)b * tl_dtype_block_bytes(dt);
                uint16_t h;
                memcpy(&h, blk, 2);
                dw = tl_f16_to_f32(h);
                int32_t iabs = 0;   /* partial sums may cancel: the tolerance scales with the products */
                for (int j = 0; j < TL_QK; j++) {
                    float q = dw != 0 ? wrow[b * TL_QK + j] / dw : 0;   /* exact: q * dw was rounded from */
                    int32_t p = (int32_t)lrintf(q) * xq[t * cols + b * TL_QK + j];
                    isum += p;
                    iabs += p < 0 ? -p : p;
                }
                def += (double)(dw * xd[t * nb + b]) * isum;
                mag += fabs((double)(dw * xd[t * nb + b])) * iabs;
                bound += 0.57 * xd[t * nb + b] * wabs;
            }
            double got = out[t * rows + r];
            double e1 = fabs(got - def) / (1e-5 * mag + 1e-30), e2 = fabs(got - fp) / (bound + 1e-6 * fabs(fp) + 1e-30);
            worst_def = e1 > worst_def ? e1 : worst_def;
            worst_fp = e2 > worst_fp ? e2 : worst_fp;
            if ((!(e1 <= 1) || !(e2 <= 1)) && bad++ < 3)
                fprintf(stderr, "%s %s %lldx%lld T=%d: out[%d][%lld] = %.9g, definition %.9g, fp32 %.9g\n", tag,
                        tl_dtype_name(dt), (long long)rows, (long long)cols, T, t, (long long)r, got, def, fp);
        }
    }
    TL_CHECK_MSG(bad == 0, "%s matmul %s %lldx%lld T=%d: worst %.2f x tolerance (definition), %.2f x bound (fp32)",
                 tag, tl_dtype_name(dt), (long long)rows, (long long)cols, T, worst_def, worst_fp);
    free(raw);
    free(x);
    free(out);
    free(xq);
    free(xd);
    free(wrow);
}

/* Where the VNNI decode layout (T = 1) keeps element j of block b of x, and the lane of xc that
 * sums it: whole chunks (8 Q4_0 or 4 Q8_0 blocks) are four or two 64-byte vectors whose 32-bit
 * lane l holds bytes of block l % (blocks a chunk); the blocks after the last whole chunk are in
 * the prefill's order (Q4_0 pairs, an odd last block in order), their xc lanes after the
 * chunks'. */
static void vnni_decode_at(tl_dtype dt, int64_t nb, int64_t b, int j, int64_t *at, int64_t *lane)
{
    const int64_t cb = dt == TL_Q4_0 ? 8 : 4, nfull = nb / cb, ch = b / cb, k = b % cb;
    if (ch < nfull) {
        int64_t v, g;
        if (dt == TL_Q4_0) {   /* vectors: nibble bytes 0-7 low, high, 8-15 low, high */
            int64_t byte = j % 16;
            v = (j >= 16) + 2 * (byte >= 8);
            g = byte % 8 / 4;
        } else {
            v = j / 16;
            g = j % 16 / 4;
        }
        int64_t l = g * cb + k;
        *at = ch * cb * TL_QK + 64 * v + 4 * l + j % 4;
        *lane = ch * 16 + l;
        return;
    }
    const int64_t b0 = nfull * cb, rel = b - b0, unit = dt == TL_Q4_0 ? rel / 2 : rel;
    const int64_t base = dt == TL_Q4_0 ? b0 * TL_QK + unit * 64 : b * TL_QK;
    *at = b * TL_QK + j;
    if (dt == TL_Q4_0 && b0 + unit * 2 + 1 < nb)   /* a pair */
        *at = base + (j < 16 ? 0 : 32) + rel % 2 * 16 + j % 16;
    *lane = nfull * 16 + unit * 8 + (*at - base) % 32 / 4;   /* a pair's lane sums both halves */
}

/* A decode's x (T = 1) in the VNNI kernels' chunk layout: every byte and scale equals the
 * portable quantizer's, each xc lane is -qbias times the sum of the bytes it covers. Widths:
 * no whole chunk, exactly one, one plus an odd block, one plus three pairs, chunks plus every
 * kind of tail. */
static void check_qpack_decode(tl_cpu_qpack_fn pack)
{
    const int64_t widths[] = {32, 96, 160, 256, 288, 448, 544, 2048, 4320};
    for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++)
        for (int dt = TL_Q8_0; dt <= TL_Q4_0; dt++) {
            const int64_t cols = widths[wi], nb = cols / TL_QK;
            const int qbias = dt == TL_Q8_0 ? 128 : 8;
            float *x = malloc(sizeof(float) * (size_t)cols);
            for (int64_t i = 0; i < cols; i++)
                x[i] = rndf() * (i % 7 == 0 ? 50.0f : 1.0f);
            int8_t *rq = malloc((size_t)cols), *vq = malloc((size_t)cols);
            float *rd = malloc(sizeof(float) * (size_t)nb), *vd = malloc(sizeof(float) * (size_t)(cols / 4));
            int32_t *vc = malloc(sizeof(int32_t) * (size_t)(cols / 4));
            int32_t *sum = calloc((size_t)(cols / 4), sizeof(int32_t));
            tl_cpu_pack_q8(rq, rd, NULL, x, 1, cols, 0);
            tl_cpu_mm m = {.cols = cols, .T = 1, .xq = vq, .xd = vd, .xc = vc};
            pack(&m, (tl_dtype)dt, x, 0, qbias);
            int bad = 0;
            int64_t lanes = 0;
            for (int64_t b = 0; b < nb; b++) {
                for (int j = 0; j < TL_QK; j++) {
                    int64_t at, lane;
                    vnni_decode_at((tl_dtype)dt, nb, b, j, &at, &lane);
                    bad += vq[at] != rq[b * TL_QK + j];
                    sum[lane] += rq[b * TL_QK + j];
                    lanes = lane + 1 > lanes ? lane + 1 : lanes;
                }
                bad += vd[b] != rd[b];   /* a scale a block, in order */
            }
            for (int64_t l = 0; l < lanes; l++)
                bad += vc[l] != -qbias * sum[l];
            TL_CHECK_MSG(bad == 0, "avx512bf16 decode pack %s cols %lld: %d quants, scales or sums differ",
                         tl_dtype_name((tl_dtype)dt), (long long)cols, bad);
            free(x);
            free(rq);
            free(vq);
            free(rd);
            free(vd);
            free(vc);
            free(sum);
        }
}

/* The AVX2 and AVX-512 VNNI kernel sets quantize x themselves (vectorized; VNNI reorders
 * pairs): every byte and scale equals the portable quantizer's (tl_quantize_row's roundf, ties
 * away from zero). */
static void check_qpack(const char *isa, tl_cpu_qpack_fn pack, int pairs)
{
    tl_error err;
    void *probe = tl_cpu_create_isa(1, isa, &err);
    if (!probe)
        return;
    ops->destroy(probe);
    const int64_t widths[] = {32, 96, 2048, 160};
    for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++)
        for (int dt = TL_Q8_0; dt <= TL_Q4_0; dt++) {
            const int64_t cols = widths[wi], nb = cols / TL_QK;
            const int T = 3;
            float *x = malloc(sizeof(float) * (size_t)(T * cols));
            for (int64_t i = 0; i < T * cols; i++)
                x[i] = rndf() * (i % 7 == 0 ? 50.0f : 1.0f);
            for (int64_t i = 0; i < TL_QK; i++)   /* a block of ties: d = 1, x = k + 0.5 */
                x[i] = i == 0 ? 127.0f : (float)((int)(rnd() % 200) - 100) + 0.5f;
            memset(x + cols, 0, sizeof(float) * TL_QK);   /* a block of zeros: d = 0 */
            int8_t *rq = malloc((size_t)(T * cols)), *vq = malloc((size_t)(T * cols));
            float *rd = malloc(sizeof(float) * (size_t)(T * nb)), *vd = malloc(sizeof(float) * (size_t)(T * cols / 4));
            int32_t *vc = malloc(sizeof(int32_t) * (size_t)(T * cols / 4));
            tl_cpu_pack_q8(rq, rd, NULL, x, T, cols, 0);
            tl_cpu_mm m = {.cols = cols, .xq = vq, .xd = vd, .xc = vc};
            for (int t = 0; t < T; t++)
                pack(&m, (tl_dtype)dt, x, t, 0);
            int bad = 0;
            for (int t = 0; t < T; t++)
                for (int64_t b = 0; b < nb; b++)
                    for (int j = 0; j < TL_QK; j++) {
                        int64_t at = b * TL_QK + j;   /* where the VNNI layout keeps element j of block b */
                        if (pairs && dt == TL_Q4_0 && b + 1 - b % 2 < nb) {
                            int64_t pair = b / 2 * 64, second = b % 2;
                            at = pair + (j < 16 ? 0 : 32) + second * 16 + j % 16;
                        }
                        bad += vq[t * cols + at] != rq[t * cols + b * TL_QK + j];
                    }
            for (int t = 0; t < T; t++)   /* a scale a block, tokens cols/4 floats apart for VNNI */
                for (int64_t b = 0; b < nb; b++)
                    bad += vd[t * (pairs ? cols / 4 : nb) + b] != rd[t * nb + b];
            TL_CHECK_MSG(bad == 0, "%s pack %s cols %lld: %d quants differ from tl_quantize_row's", isa,
                         tl_dtype_name((tl_dtype)dt), (long long)cols, bad);
            free(x);
            free(rq);
            free(vq);
            free(rd);
            free(vd);
            free(vc);
        }
    if (pairs)
        check_qpack_decode(pack);
}

/* matmul_n over quantized weights equals one matmul each, bit for bit. */
static void check_qmatmul_n(void *ctx, const char *tag, tl_dtype dt, int64_t cols, int T)
{
    const int64_t rows[3] = {37, 8, 131};
    void *raw[3];
    tl_weight W[3];
    const tl_weight *Wp[3];
    float *out[3], *one[3];
    for (int i = 0; i < 3; i++) {
        W[i] = quant_weight(dt, rows[i], cols, &raw[i]);
        Wp[i] = &W[i];
        out[i] = malloc(sizeof(float) * (size_t)(T * rows[i]));
        one[i] = malloc(sizeof(float) * (size_t)(T * rows[i]));
    }
    float *x = malloc(sizeof(float) * (size_t)(T * cols));
    for (int64_t i = 0; i < T * cols; i++)
        x[i] = rndf();
    ops->matmul_n(ctx, 3, out, x, Wp, T);
    for (int i = 0; i < 3; i++) {
        ops->matmul(ctx, one[i], x, &W[i], T);
        TL_CHECK_MSG(!memcmp(out[i], one[i], sizeof(float) * (size_t)(T * rows[i])),
                     "%s matmul_n %s cols %lld T=%d: product %d differs from matmul", tag, tl_dtype_name(dt),
                     (long long)cols, T, i);
        free(raw[i]);
        free(out[i]);
        free(one[i]);
    }
    free(x);
}

static void check_attention(void *ctx, const char *tag, int T, int pos0, int nh, int nkv, int hd)
{
    int n_ctx = pos0 + T, qd = nh * hd, kvd = nkv * hd;
    float *q = malloc(sizeof(float) * (size_t)(T * qd)), *k = malloc(sizeof(float) * (size_t)(n_ctx * kvd));
    float *v = malloc(sizeof(float) * (size_t)(n_ctx * kvd));
    float *out = malloc(sizeof(float) * (size_t)(T * qd)), *ref = malloc(sizeof(float) * (size_t)(T * qd));
    for (int i = 0; i < T * qd; i++)
        q[i] = 2 * rndf();
    for (int i = 0; i < n_ctx * kvd; i++) {
        k[i] = 2 * rndf();
        v[i] = rndf();
    }
    ops->attention(ctx, out, q, k, v, T, pos0, nh, nkv, hd);
    tl_cpu_ref_attention(ref, q, k, v, T, pos0, nh, nkv, hd);
    double worst = 0;
    for (int i = 0; i < T * qd; i++) {
        double d = fabs((double)out[i] - ref[i]);
        if (d > worst)
            worst = d;
    }
    TL_CHECK_MSG(worst <= 1e-5, "%s attention T=%d pos0=%d heads %d/%d dim %d: max error %g", tag,
                 T, pos0, nh, nkv, hd, worst);

    /* A bf16 KV cache: store_bf16 rounds as tl_f32_to_bf16; attention over the bf16 rows equals
     * the fp32 reference fed the same rows widened (and the bf16 reference, exactly). */
    uint16_t *k16 = malloc(sizeof(uint16_t) * (size_t)(n_ctx * kvd)), *v16 = malloc(sizeof(uint16_t) * (size_t)(n_ctx * kvd));
    ops->store_bf16(ctx, k16, k, n_ctx * kvd);
    ops->store_bf16(ctx, v16, v, n_ctx * kvd);
    ops->sync(ctx, NULL);
    int bad = 0;
    for (int i = 0; i < n_ctx * kvd; i++) {
        bad += k16[i] != tl_f32_to_bf16(k[i]) || v16[i] != tl_f32_to_bf16(v[i]);
        k[i] = tl_bf16_to_f32(k16[i]);
        v[i] = tl_bf16_to_f32(v16[i]);
    }
    TL_CHECK_MSG(bad == 0, "%s store_bf16: %d values differ from tl_f32_to_bf16", tag, bad);
    ops->attention_bf16(ctx, out, q, k16, v16, T, pos0, nh, nkv, hd);
    tl_cpu_ref_attention(ref, q, k, v, T, pos0, nh, nkv, hd);
    float *ref16 = malloc(sizeof(float) * (size_t)(T * qd));
    tl_cpu_ref_attention_bf16(ref16, q, k16, v16, T, pos0, nh, nkv, hd);
    worst = 0;
    for (int i = 0; i < T * qd; i++) {
        double d = fabs((double)out[i] - ref[i]);
        if (d > worst)
            worst = d;
        bad += ref16[i] != ref[i];
    }
    TL_CHECK_MSG(worst <= 1e-5, "%s attention over bf16 K/V T=%d pos0=%d heads %d/%d dim %d: max error %g", tag,
                 T, pos0, nh, nkv, hd, worst);
    TL_CHECK_MSG(bad == 0, "%s the bf16 reference attention differs from the fp32 one on widened rows", tag);
    free(k16);
    free(v16);
    free(ref16);
    free(q);
    free(k);
    free(v);
    free(out);
    free(ref);
}

static void check_small_ops(void *ctx, const char *tag)
{
    /* rope: the same arithmetic as the reference, so equal to the last bit */
    int T = 3, nh = 5, hd = 18, n = T * nh * hd;
    float inv[9], *a = malloc(sizeof(float) * (size_t)n), *b = malloc(sizeof(float) * (size_t)n);
    for (int i = 0; i < hd / 2; i++)
        inv[i] = powf(10000.0f, -2.0f * i / hd);
    for (int i = 0; i < n; i++)
        a[i] = b[i] = rndf();
    ops->rope(ctx, a, T, nh, hd, 77, inv);
    tl_cpu_ref_rope(b, T, nh, hd, 77, inv);
    TL_CHECK_MSG(!memcmp(a, b, sizeof(float) * (size_t)n), "%s rope differs from the reference", tag);
    free(a);
    free(b);

    /* swiglu and add, small and large enough to be split among threads */
    int sizes[] = {1, 1000, 200003};
    for (int s = 0; s < 3; s++) {
        int m = sizes[s];
        float *g1 = malloc(sizeof(float) * (size_t)m), *g2 = malloc(sizeof(float) * (size_t)m);
        float *u = malloc(sizeof(float) * (size_t)m);
        for (int i = 0; i < m; i++) {
            g1[i] = g2[i] = 8 * rndf();
            u[i] = rndf();
        }
        ops->swiglu(ctx, g1, u, m);
        tl_cpu_ref_swiglu(g2, u, m);
        TL_CHECK_MSG(!memcmp(g1, g2, sizeof(float) * (size_t)m), "%s swiglu n=%d", tag, m);
        ops->add(ctx, g1, u, m);
        tl_cpu_ref_add(g2, u, m);
        TL_CHECK_MSG(!memcmp(g1, g2, sizeof(float) * (size_t)m), "%s add n=%d", tag, m);
        free(g1);
        free(g2);
        free(u);
    }

    /* rmsnorm and embed on every dtype */
    for (int dt = 0; dt < 3; dt++) {
        int rows = 11, cols = 37, ids[4] = {0, 10, 3, 3};
        void *tab = malloc(tl_dtype_size((tl_dtype)dt) * (size_t)(rows * cols));
        fill_weight(tab, (tl_dtype)dt, rows * cols);
        tl_weight tw = {tab, (tl_dtype)dt, rows, cols, 0, 0}, nw = {tab, (tl_dtype)dt, 1, cols, 0, 0};
        float e1[4 * 37], e2[4 * 37], o1[4 * 37], o2[4 * 37];
        ops->embed(ctx, e1, &tw, ids, 4);
        tl_cpu_ref_embed(e2, &tw, ids, 4);
        TL_CHECK_MSG(!memcmp(e1, e2, sizeof e1), "%s embed %s", tag, tl_dtype_name((tl_dtype)dt));
        ops->rmsnorm(ctx, o1, e1, &nw, 4, cols, 1e-5f);
        tl_cpu_ref_rmsnorm(o2, e2, &nw, 4, cols, 1e-5f);
        double worst = 0;
        for (int i = 0; i < 4 * cols; i++)
            worst = fmax(worst, fabs((double)o1[i] - o2[i]) / (fabs(o2[i]) + 1e-6));
        TL_CHECK_MSG(worst <= 1e-6, "%s rmsnorm %s: %g", tag, tl_dtype_name((tl_dtype)dt), worst);
        free(tab);
    }

    /* a prefill's rmsnorm goes a token per thread: still the reference's bits */
    int nt = 240, nc = 300;   /* 72,000 values: past the threaded norm's 65,536 */
    uint16_t gain[300];
    fill_weight(gain, TL_BF16, nc);
    tl_weight gw = {gain, TL_BF16, 1, nc, 0, 0};
    float *xs = malloc(sizeof(float) * (size_t)(nt * nc)), *r1 = malloc(sizeof(float) * (size_t)(nt * nc)),
          *r2 = malloc(sizeof(float) * (size_t)(nt * nc));
    for (int i = 0; i < nt * nc; i++)
        xs[i] = 3 * rndf();
    ops->rmsnorm(ctx, r1, xs, &gw, nt, nc, 1e-5f);
    ops->sync(ctx, NULL);
    tl_cpu_ref_rmsnorm(r2, xs, &gw, nt, nc, 1e-5f);
    TL_CHECK_MSG(!memcmp(r1, r2, sizeof(float) * (size_t)(nt * nc)), "%s rmsnorm of %d tokens", tag, nt);
    free(xs);
    free(r1);
    free(r2);
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--default-set")) {   /* the set a context gets (TL_CPU_ISA, else the CPU's best) */
        tl_error err;
        void *ctx = tl_backend_cpu()->create(1, &err);
        if (!ctx) {
            fprintf(stderr, "kernels: %s\n", err.msg);
            return 1;
        }
        printf("kernels: default set %s\n", tl_cpu_ctx_isa(ctx));
        tl_backend_cpu()->destroy(ctx);
        return 0;
    }
    /* --set NAME: only that set forced (an emulated run checks each set under the CPU model
     * that selects it); unknown or unsupported there is a failure, not a skip */
    int threaded_only = 0;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threaded-only"))
            threaded_only = 1;
        else if (!strcmp(argv[i], "--set") && i + 1 < argc)
            only = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--threaded-only] [--set NAME] | --default-set\n", argv[0]);
            return 2;
        }
    }
    if (threaded_only)
        printf("kernels: 2 and 3 threads only (--threaded-only)\n");
    if (only)
        printf("kernels: the %s set only (--set)\n", only);
    ops = tl_backend_cpu();
#ifdef __x86_64__   /* the x86 sets' own layouts; kernels/cpu builds them only there */
    check_qpack("avx512bf16", tl_cpu_qpack_avx512vnni, 1);
    check_qpack("avx2", tl_cpu_qpack_avx2, 0);
#else
    (void)check_qpack;
#endif
    for (int threads = 1; threads <= 4; threads++)
        check_pool(threads);
    const char *isas[] = {"generic", "avx2", "avx512", "avx512bf16", "neon", "neon-dotprod", "neon-bf16"};
    static const struct { int64_t rows, cols; int T; } shapes[] = {
        {1, 1, 1}, {7, 13, 1}, {33, 67, 1}, {130, 1000, 1}, {64, 2048, 1}, {1023, 96, 1},
        {5, 31, 2}, {37, 517, 7}, {61, 1031, 13}, {16, 64, 6}, {9, 600, 12}, {3, 1, 5},
        {19, 2100, 7},   /* more than one k-block in every kernel set */
        {23, 300, 3}, {13, 777, 4}, {6, 2100, 9}, {11, 64, 10},   /* every tail of a 6-token tile */
        /* x in 16-token panels (avx512bf16 from T = 32): tiles of 2, 3, 2+2, 3+2, 3+2+2 panels,
         * the last part-filled, rows off the 8-row tiles, odd widths, two k-blocks */
        {37, 517, 32}, {29, 1031, 33}, {50, 4099, 48}, {13, 96, 64}, {25, 301, 80}, {61, 33, 112},
        {19, 4100, 1}, {16, 8192, 1}, {7, 8200, 1},   /* a decode's wide rows: 8 at a time, the rest alone */
        /* avx2 from T = 16 (gemm_avx2.h): 16-row panels, 6-token tiles, k in blocks of 256,
         * tokens in blocks of at most 240: a 1- and a 5-token tail, a part-filled panel, a k
         * tail, 2 token blocks */
        {21, 519, 19}, {40, 300, 17}, {18, 520, 250},
    };
    int tested = 0;
    for (size_t s = 0; s < sizeof isas / sizeof isas[0]; s++) {
        tl_error err;
        if (only && strcmp(only, isas[s]))
            continue;
        void *probe = tl_cpu_create_isa(1, isas[s], &err);
        TL_CHECK_MSG(probe || !only, "--set %s: %s", only, err.msg);
        if (!probe) {
            printf("kernels: %s not supported here (%s), skipped\n", isas[s], err.msg);
            continue;
        }
        ops->destroy(probe);
        tested++;
        for (int threads = threaded_only ? 2 : 1; threads <= 3; threads++) {
            void *ctx = tl_cpu_create_isa(threads, isas[s], &err);
            TL_CHECK_MSG(ctx != NULL, "%s", err.msg);
            if (!ctx)
                continue;
            TL_CHECK_STR(tl_cpu_ctx_isa(ctx), isas[s]);
            TL_CHECK_INT(tl_cpu_ctx_threads(ctx), threads);
            char tag[64];
            snprintf(tag, sizeof tag, "%s/%d threads", isas[s], threads);
            /* the sets whose bf16 products take x as bf16 (AVX-512 BF16, BFDOT) */
            const int rounds = !strcmp(isas[s], "avx512bf16") || !strcmp(isas[s], "neon-bf16");
            /* exact mode off; on; off with weights that keep x (q/k/v in the mixed precision) */
            for (int mode = 0; mode <= 2; mode++) {
                int exact = mode == 1, keep = mode == 2;
                /* it answers whether its products can round x at all */
                TL_CHECK_INT(ops->set_exact(ctx, exact), rounds);
                char mtag[80];
                snprintf(mtag, sizeof mtag, "%s%s", tag, exact ? " exact" : keep ? " keep_x" : "");
                for (int dt = keep ? TL_BF16 : 0; dt < (keep ? TL_BF16 + 1 : 3); dt++) {
                    /* not exact: every product with bf16 weights rounds x, a decode's (T = 1) too,
                     * unless its weight keeps x */
                    int round_x = !exact && !keep && dt == TL_BF16 && rounds;
                    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
                        check_matmul(ctx, mtag, (tl_dtype)dt, shapes[i].rows, shapes[i].cols, shapes[i].T, keep,
                                     round_x);
                    for (int T = 1; T <= 13; T += 6)
                        for (int mixed = 0; mixed <= 1; mixed++)
                            check_matmul_n(ctx, mtag, (tl_dtype)dt, T == 7 ? 517 : 2100, T, mixed);
                    check_matmul_n(ctx, mtag, (tl_dtype)dt, 4100, 40, 0);   /* panels, two k-blocks */
                }
            }
            static const struct { int64_t rows, cols; int T; } qshapes[] = {
                {1, 32, 1}, {7, 64, 1}, {33, 96, 1}, {130, 1024, 1}, {64, 2048, 1}, {5, 32, 2},
                {37, 544, 7}, {61, 1056, 13}, {9, 608, 12}, {13, 800, 4}, {6, 2112, 9}, {3, 32, 5},
                {10, 256, 3}, {11, 64, 6},
                {9, 96, 250},   /* qgemm_avx2.h: two blocks of tokens (at most 240 a block) */
                /* decode chunks (VNNI: 8 Q4_0 / 4 Q8_0 blocks): one, one plus an odd block, one
                 * plus three pairs, two plus one, many, many plus pairs and an odd block */
                {5, 256, 1}, {3, 288, 1}, {4, 448, 1}, {6, 544, 1}, {9, 8192, 1}, {19, 4320, 1},
            };
            for (int dt = TL_Q8_0; dt <= TL_Q4_0; dt++) {
                for (size_t i = 0; i < sizeof qshapes / sizeof qshapes[0]; i++)
                    check_qmatmul(ctx, tag, (tl_dtype)dt, qshapes[i].rows, qshapes[i].cols, qshapes[i].T);
                for (int T = 1; T <= 13; T += 6)
                    check_qmatmul_n(ctx, tag, (tl_dtype)dt, T == 7 ? 544 : 2112, T);
            }
            check_attention(ctx, tag, 1, 0, 4, 2, 16);
            check_attention(ctx, tag, 1, 40, 8, 2, 64);
            check_attention(ctx, tag, 5, 3, 6, 3, 10);
            check_attention(ctx, tag, 17, 0, 32, 8, 64);
            check_attention(ctx, tag, 3, 300, 32, 8, 128);   /* the 8B layout, a long context */
            check_attention(ctx, tag, 2, 5, 16, 1, 24);      /* 16 heads on one kv head, a vector tail */
            check_attention(ctx, tag, 4, 0, 3, 3, 7);        /* no grouping, shorter than a vector */
            check_attention(ctx, tag, 2, 20, 16, 2, 64);     /* 8 heads a group: two register blocks */
            check_small_ops(ctx, tag);
            ops->destroy(ctx);
        }
    }
    TL_CHECK(tested >= 1);   /* the portable set runs everywhere */

    tl_error err;
    TL_CHECK(tl_cpu_create_isa(1, "sse9", &err) == NULL);
    TL_CHECK(strstr(err.msg, "sse9") != NULL);
    void *all = ops->create(0, &err);   /* all cores, best kernels */
    TL_CHECK(all != NULL);
    if (all) {
        printf("kernels: default set %s, %d threads\n", tl_cpu_ctx_isa(all), tl_cpu_ctx_threads(all));
        check_matmul(all, "default", TL_BF16, 300, 700, 1, 0, 0);
        check_matmul(all, "default", TL_BF16, 300, 700, 9, 0, 0);   /* a new context is exact */
        ops->destroy(all);
    }
    return TL_TEST_END("kernels");
}
