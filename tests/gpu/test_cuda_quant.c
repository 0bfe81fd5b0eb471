/* The CUDA backend's Q8_0/Q4_0 path (kernels/cuda/qkernels.cuh) on a device, against the CPU:
 *   - x's quantization (tl_cuda_quantize_x, the kernel every quantized product starts with):
 *     byte for byte tl_quantize_row's Q8_0 blocks, the scales bit for bit;
 *   - matmul: the definition (kernels/cpu/qmm.c: sum over blocks of dw * dx * the integer dot
 *     product), computed in double from x quantized by tl_quantize_row, and the CPU backend's
 *     own quantized product, for T = 1 and T > 1 (8-token launches, a tail), widths that are
 *     not a multiple of 256, rows that are not a multiple of 8, and the 8B shapes at T = 1;
 *   - upload: the device holds exactly tl_weight_bytes of a quantized matrix (the bytes the
 *     floor counts);
 *   - embed: equal to the CPU reference bit for bit;
 *   - decode steps through begin_pass/end_pass (graph capture and replay, the unfused
 *     quantized products among fused bf16-era launches) against the same steps on the CPU
 *     backend with the same quantized weights.
 * Run with TL_CUDA_GRAPH=0 and TL_CUDA_FUSE=0 too. Exits 77 (skip) when no CUDA device is
 * present. NOTE: written without a GPU; its first run is the device check's. */
#include <stdint.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "gpu_test.h"
#include "cpu/cpu.h"
#include "cuda/cuda.h"
#include "tokenloop/backend.h"
#include "tokenloop/quant.h"

static const tl_backend_ops *cb;   /* the CPU backend, beside gpu_test.h's CUDA one */
static void *cctx;

/* A random [rows, cols] matrix in dt's blocks, as tl_model_convert writes them. */
static tl_weight host_qweight(tl_dtype dt, int64_t rows, int64_t cols, float scale)
{
    size_t rb = tl_dtype_row_bytes(dt, cols);
    char *d = malloc(rb * (size_t)rows);
    float *row = malloc(sizeof(float) * (size_t)cols);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < cols; j++)
            row[j] = frand() * scale * (1.0f + (float)(j / 32 % 5));   /* block scales differ */
        tl_quantize_row(dt, row, d + (size_t)r * rb, cols);
    }
    free(row);
    tl_weight w = {.data = d, .dtype = dt, .rows = rows, .cols = cols};
    return w;
}

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* kind 0: uniform; 1: blocks at magnitudes 2^-40 .. 2^30 (f16-subnormal, zero and overflowing
 * scales); 2: ties (x * id exactly on .5), zero blocks, NaN, -inf */
static void test_quantize_x(int T, int cols, int kind)
{
    size_t n = (size_t)T * cols;
    int nb = cols / 32;
    float *x = host_rand(n);
    for (size_t i = 0; i < n; i++) {
        size_t blk = i / 32;
        int j = (int)(i % 32);
        if (kind == 1)
            x[i] = ldexpf(x[i], (int)(blk % 71) - 40);
        if (kind == 2) {
            switch (blk % 6) {
            case 0: x[i] = j == 0 ? 127.0f : (float)(j - 16) + 0.5f; break;
            case 1: x[i] = 0.0f; break;
            case 2: x[i] = j == 5 ? NAN : x[i]; break;
            case 3: x[i] = j == 7 ? -INFINITY : x[i]; break;
            case 4: x[i] = j == 0 ? -254.0f : (float)(j - 16) + 0.5f * (float)(j & 1); break;
            default: break;
            }
        }
    }
    float *dx = dev_from(x, n), *d = malloc(sizeof(float) * (size_t)T * nb);
    int8_t *q = malloc(n);
    TL_CHECK_INT(tl_cuda_quantize_x(ctx, dx, T, cols, q, d), 0);
    int bad = 0;
    for (int t = 0; t < T; t++)
        for (int b = 0; b < nb; b++) {
            tl_block_q8_0 blk;
            tl_quantize_row(TL_Q8_0, x + (size_t)t * cols + (size_t)b * 32, &blk, 32);
            int same = !memcmp(q + (size_t)t * cols + (size_t)b * 32, blk.qs, 32) &&
                       fbits(d[(size_t)t * nb + b]) == fbits(tl_f16_to_f32(blk.d));
            if (!same && bad++ < 3)
                fprintf(stderr, "quantize x T=%d cols=%d kind %d: token %d block %d differs (scale %a vs %a)\n", T,
                        cols, kind, t, b, (double)d[(size_t)t * nb + b], (double)tl_f16_to_f32(blk.d));
        }
    TL_CHECK_MSG(bad == 0, "quantize x T=%d cols=%d kind %d: %d blocks differ from tl_quantize_row", T, cols, kind,
                 bad);
    be->release(ctx, dx);
    free(x);
    free(q);
    free(d);
}

static int wq(tl_dtype dt, const uint8_t *blk, int j)   /* weight j of a block (quant.h) */
{
    if (dt == TL_Q8_0)
        return (int8_t)blk[2 + j];
    return j < 16 ? (blk[2 + j] & 15) - 8 : (blk[2 + j - 16] >> 4) - 8;
}

/* Tolerances. Against the definition in double: the device sums at most ceil(nb / 32) terms
 * per lane in fp32 and then 5 shuffle levels, each term rounded twice (dw * dx, * the integer
 * sum), so |error| <= (ceil(nb / 32) + 7) * 2^-24 * sum |terms|; the check allows 2^-23.
 * Against the CPU backend: that plus the 1e-5 of sum |terms| that kernels_cpu allows the CPU's
 * SIMD kernels against the same definition. Both assume x quantized to the same bytes, which
 * test_quantize_x checks; one q of x off by one would cost dw * dx * |qw|, far outside. */
static void test_matmul_q(tl_dtype dt, int rows, int cols, int T)
{
    int nb = cols / 32;
    tl_weight h = host_qweight(dt, rows, cols, 1.0f / sqrtf((float)cols)), d, hc;
    tl_error err;
    tl_cuda_stats s0, s1;
    tl_cuda_get_stats(ctx, &s0);
    TL_CHECK_INT(be->upload(ctx, &h, &d, &err), 0);
    TL_CHECK_INT(cb->upload(cctx, &h, &hc, &err), 0);
    tl_cuda_get_stats(ctx, &s1);
    TL_CHECK_MSG(s1.weight_bytes - s0.weight_bytes == (long long)tl_weight_bytes(&h),
                 "upload %s [%d, %d]: %lld device bytes, tl_weight_bytes %llu", tl_dtype_name(dt), rows, cols,
                 s1.weight_bytes - s0.weight_bytes, (unsigned long long)tl_weight_bytes(&h));
    TL_CHECK_INT(d.dtype, dt);
    size_t xn = (size_t)T * cols, on = (size_t)T * rows;
    float *hx = host_rand(xn), *cpu = malloc(sizeof(float) * on);
    float *x = dev_from(hx, xn), *o = be->alloc(ctx, on);
    be->matmul(ctx, o, x, &d, T);
    TL_CHECK_INT(be->sync(ctx, &err), 0);
    float *got = host_of(o, on);
    cb->matmul(cctx, cpu, hx, &hc, T);
    cb->sync(cctx, NULL);
    tl_cuda_get_stats(ctx, &s0);
    TL_CHECK_INT(s0.quant_launches - s1.quant_launches, (T + 7) / 8);

    size_t rb = tl_dtype_row_bytes(dt, cols), bb = tl_dtype_block_bytes(dt);
    tl_block_q8_0 *xb = malloc(sizeof(tl_block_q8_0) * (size_t)T * nb);
    for (int t = 0; t < T; t++)
        tl_quantize_row(TL_Q8_0, hx + (size_t)t * cols, xb + (size_t)t * nb, cols);
    int bad_def = 0, bad_cpu = 0;
    double worst = 0;
    for (int t = 0; t < T; t++)
        for (int r = 0; r < rows; r++) {
            const uint8_t *w = (const uint8_t *)h.data + (size_t)r * rb;
            double def = 0, mag = 0;
            for (int b = 0; b < nb; b++) {
                const tl_block_q8_0 *xk = xb + (size_t)t * nb + b;
                uint16_t dh;
                memcpy(&dh, w + b * bb, 2);
                long s = 0;
                for (int j = 0; j < 32; j++)
                    s += (long)wq(dt, w + b * bb, j) * xk->qs[j];
                double term = (double)tl_f16_to_f32(dh) * tl_f16_to_f32(xk->d) * (double)s;
                def += term;
                mag += fabs(term);
            }
            double g = got[(size_t)t * rows + r], tol = ((nb + 31) / 32 + 7) * 0x1p-23 * mag + 1e-30;
            double e = fabs(g - def);
            if (e / tol > worst)
                worst = e / tol;
            if (e > tol && bad_def++ < 3)
                fprintf(stderr, "matmul %s [%d, %d] T=%d token %d row %d: %.9g, definition %.9g (tol %g)\n",
                        tl_dtype_name(dt), rows, cols, T, t, r, g, def, tol);
            double ec = fabs(g - cpu[(size_t)t * rows + r]);
            if (ec > tol + 1e-5 * mag && bad_cpu++ < 3)
                fprintf(stderr, "matmul %s [%d, %d] T=%d token %d row %d: %.9g, cpu backend %.9g\n", tl_dtype_name(dt),
                        rows, cols, T, t, r, g, (double)cpu[(size_t)t * rows + r]);
        }
    TL_CHECK_MSG(bad_def == 0, "matmul %s [%d, %d] T=%d: %d outputs off the definition", tl_dtype_name(dt), rows, cols,
                 T, bad_def);
    TL_CHECK_MSG(bad_cpu == 0, "matmul %s [%d, %d] T=%d: %d outputs off the cpu backend", tl_dtype_name(dt), rows,
                 cols, T, bad_cpu);
    printf("matmul %-4s [%6d, %5d] T=%3d: worst error %.3f of its bound\n", tl_dtype_name(dt), rows, cols, T, worst);
    free(xb);
    free(got);
    free(cpu);
    free(hx);
    be->release(ctx, x);
    be->release(ctx, o);
    be->unload(ctx, &d);
    cb->unload(cctx, &hc);
    free((void *)h.data);
}

static void test_embed_q(tl_dtype dt)
{
    tl_weight h = host_qweight(dt, 50, 96, 1.0f), d;
    tl_error err;
    TL_CHECK_INT(be->upload(ctx, &h, &d, &err), 0);
    int ids[] = {3, 0, 49, 7};
    float *ref = malloc(sizeof(float) * 4 * 96);
    tl_cpu_ref_embed(ref, &h, ids, 4);
    float *x = be->alloc(ctx, 4 * 96);
    be->embed(ctx, x, &d, ids, 4);
    float *got = host_of(x, 4 * 96);
    TL_CHECK_MSG(!memcmp(got, ref, sizeof(float) * 4 * 96), "embed %s T=4", tl_dtype_name(dt));
    free(got);
    be->embed(ctx, x, &d, ids + 2, 1);
    got = host_of(x, 96);
    TL_CHECK_MSG(!memcmp(got, ref + 2 * 96, sizeof(float) * 96), "embed %s T=1", tl_dtype_name(dt));
    free(got);
    /* a tied lm_head: the same host tensor uploaded again shares the copy and stays quantized */
    tl_weight d2;
    TL_CHECK_INT(be->upload(ctx, &h, &d2, &err), 0);
    TL_CHECK(d2.data == d.data && d2.dtype == dt);
    be->unload(ctx, &d2);
    free(ref);
    be->release(ctx, x);
    be->unload(ctx, &d);
    free((void *)h.data);
}

/* ---- decode steps: the same mini layer on the CUDA backend (inside passes: the graph) and on
 * the CPU backend, with the same quantized weights ---- */

enum { H = 128, NH = 4, NKV = 2, HD = 32, KVD = NKV * HD, VOCAB = 10, CAP = 48, FF = 352 };

typedef struct side {
    const tl_backend_ops *be;
    void *ctx;
    tl_weight table, norm, wq, wk, wv, wo, freq, wg, wu, wd;   /* as uploaded */
    float *x, *xb, *q, *att, *o, *kc, *vc, *hb, *hb2;
} side;

static float *side_alloc(side *s, size_t n) { return s->be->alloc(s->ctx, n); }

static void side_init(side *s, const tl_backend_ops *b, void *c, tl_weight *const *host)
{
    memset(s, 0, sizeof *s);
    s->be = b;
    s->ctx = c;
    tl_weight *dw[] = {&s->table, &s->norm, &s->wq, &s->wk, &s->wv, &s->wo, &s->freq, &s->wg, &s->wu, &s->wd};
    tl_error err;
    for (int i = 0; i < 10; i++)
        TL_CHECK_INT(b->upload(c, host[i], dw[i], &err), 0);
    s->x = side_alloc(s, H);
    s->xb = side_alloc(s, H);
    s->q = side_alloc(s, H);
    s->att = side_alloc(s, H);
    s->o = side_alloc(s, H);
    s->kc = side_alloc(s, CAP * KVD);
    s->vc = side_alloc(s, CAP * KVD);
    s->hb = side_alloc(s, FF);
    s->hb2 = side_alloc(s, FF);
}

static void side_free(side *s)
{
    float *bufs[] = {s->x, s->xb, s->q, s->att, s->o, s->kc, s->vc, s->hb, s->hb2};
    for (int i = 0; i < 9; i++)
        s->be->release(s->ctx, bufs[i]);
    tl_weight *dw[] = {&s->table, &s->norm, &s->wq, &s->wk, &s->wv, &s->wo, &s->freq, &s->wg, &s->wu, &s->wd};
    for (int i = 0; i < 10; i++)
        s->be->unload(s->ctx, dw[i]);
}

/* One decode step, as core/engine.c orders a layer; outputs x, xb and up's output to the host. */
static void side_step(side *s, int id, int pos, float *ox, float *oxb, float *ou)
{
    const tl_backend_ops *b = s->be;
    void *c = s->ctx;
    if (b->begin_pass)
        b->begin_pass(c, 1, pos);
    b->embed(c, s->x, &s->table, &id, 1);
    b->rmsnorm(c, s->xb, s->x, &s->norm, 1, H, 1e-5f);
    b->matmul(c, s->q, s->xb, &s->wq, 1);
    b->matmul(c, s->kc + (size_t)pos * KVD, s->xb, &s->wk, 1);
    b->matmul(c, s->vc + (size_t)pos * KVD, s->xb, &s->wv, 1);
    b->rope(c, s->q, 1, NH, HD, pos, s->freq.data);
    b->rope(c, s->kc + (size_t)pos * KVD, 1, NKV, HD, pos, s->freq.data);
    b->attention(c, s->att, s->q, s->kc, s->vc, 1, pos, NH, NKV, HD);
    b->matmul(c, s->o, s->att, &s->wo, 1);
    b->add(c, s->x, s->o, H);
    b->rmsnorm(c, s->xb, s->x, &s->norm, 1, H, 1e-5f);
    b->matmul(c, s->hb, s->xb, &s->wg, 1);
    b->matmul(c, s->hb2, s->xb, &s->wu, 1);
    b->swiglu(c, s->hb, s->hb2, FF);
    b->matmul(c, s->o, s->hb, &s->wd, 1);
    b->add(c, s->x, s->o, H);
    b->rmsnorm(c, s->xb, s->x, &s->norm, 1, H, 1e-5f);
    if (b->end_pass)
        b->end_pass(c);
    TL_CHECK_INT(b->sync(c, NULL), 0);
    b->to_host(c, ox, s->x, H);
    b->to_host(c, oxb, s->xb, H);
    b->to_host(c, ou, s->hb2, FF);
}

/* Both sides quantize every product's x; a last-bit difference upstream (RMSNorm, attention
 * sum in another order) can move one of x's values across a rounding boundary, which changes
 * that block's term by dw * dx * |qw|: about 1/127 of one block of x against a sum over all
 * of them, a few 1e-3 of the output at these widths. 2e-2 (the engine tests' bound) leaves
 * room for that and is far below what a wrong block, scale or nibble gives. */
static double gpu_vs_cpu_step(side *g, side *c, int id, int pos)
{
    float gx[H], gxb[H], gu[FF], cx[H], cxb[H], cu[FF];
    side_step(g, id, pos, gx, gxb, gu);
    side_step(c, id, pos, cx, cxb, cu);
    return fmax(fmax(rel_err(gx, cx, H), rel_err(gxb, cxb, H)), rel_err(gu, cu, FF));
}

static void test_decode_q(tl_dtype dt)
{
    float s = 1.0f / sqrtf((float)H);
    tl_weight table = host_qweight(dt, VOCAB, H, 1.0f), wq = host_qweight(dt, H, H, s), wk = host_qweight(dt, KVD, H, s),
              wv = host_qweight(dt, KVD, H, s), wo = host_qweight(dt, H, H, s), wg = host_qweight(dt, FF, H, s),
              wu = host_qweight(dt, FF, H, s), wd = host_qweight(dt, H, FF, 1.0f / sqrtf((float)FF));
    float *nw = malloc(sizeof(float) * H), *freq = malloc(sizeof(float) * HD / 2);
    for (int i = 0; i < H; i++)
        nw[i] = 1.0f + 0.25f * frand();
    for (int i = 0; i < HD / 2; i++)
        freq[i] = 1.0f / powf(10000.0f, (2.0f * i) / HD);
    tl_weight norm = {.data = nw, .dtype = TL_F32, .rows = 1, .cols = H};
    tl_weight fw = {.data = freq, .dtype = TL_F32, .rows = 1, .cols = HD / 2};
    tl_weight *host[] = {&table, &norm, &wq, &wk, &wv, &wo, &fw, &wg, &wu, &wd};
    side g, c;
    side_init(&g, be, ctx, host);
    side_init(&c, cb, cctx, host);

    /* The first step may grow the x scratch (then it runs op by op and counts as neither eager
     * nor captured) or, when earlier tests grew it enough, be the eager step a capture needs. */
    double worst = gpu_vs_cpu_step(&g, &c, 1, 0);
    int n = 0, worst_pos = 0;
    tl_cuda_stats st0, st1;
    tl_cuda_get_stats(ctx, &st0);
    for (int pos = 1; pos < 16; pos++, n++) {
        double e = gpu_vs_cpu_step(&g, &c, (pos * 7 + 3) % VOCAB, pos);
        if (e > worst) { worst = e; worst_pos = pos; }
    }
    for (int pos = 6; pos < 21; pos++, n++) {   /* rewound: the graph goes on at earlier rows */
        double e = gpu_vs_cpu_step(&g, &c, (pos * 5 + 1) % VOCAB, pos);
        if (e > worst) { worst = e; worst_pos = pos; }
    }
    printf("decode %s: worst gpu vs cpu %.3g (position %d)\n", tl_dtype_name(dt), worst, worst_pos);
    TL_CHECK_MSG(worst <= 2e-2, "decode %s: gpu vs cpu %g at position %d", tl_dtype_name(dt), worst, worst_pos);
    tl_cuda_get_stats(ctx, &st1);
    const char *gr = getenv("TL_CUDA_GRAPH");
    if (!(gr && !strcmp(gr, "0"))) {
        /* one capture; every step after it replays; at most one eager step before it */
        long eager = st1.eager_decode - st0.eager_decode, replays = st1.replays - st0.replays;
        TL_CHECK_INT(st1.captures - st0.captures, 1);
        TL_CHECK_MSG(eager <= 1 && replays == n - 1 - eager, "%ld eager steps, %ld replays of %d", eager, replays, n);
        /* a replay issues no launches: 7 products a step run from the host (eager, captured) */
        TL_CHECK_INT(st1.quant_launches - st0.quant_launches, (n - replays) * 7);
    } else {
        TL_CHECK_INT(st1.replays - st0.replays, 0);
        TL_CHECK_INT(st1.quant_launches - st0.quant_launches, (long)n * 7);
    }
    TL_CHECK_INT(st1.errors, 0);
    side_free(&g);
    side_free(&c);
    for (int i = 0; i < 10; i++)
        free((void *)host[i]->data);
}

int main(void)
{
    int ndev = 0;
    cudaError_t ce = cudaGetDeviceCount(&ndev);
    if (ce != cudaSuccess || ndev == 0 || !tl_backend_cuda_available()) {
        printf("test_cuda_quant: SKIP: no usable CUDA device (%s)\n",
               ce != cudaSuccess ? cudaGetErrorString(ce) : ndev ? "older than sm_80" : "none found");
        return 77;
    }
    be = tl_backend_cuda();
    cb = tl_backend_cpu();
    tl_error err;
    ctx = be->create(0, &err);
    cctx = ctx ? cb->create(0, &err) : NULL;
    if (!ctx || !cctx) {
        fprintf(stderr, "create: %s\n", err.msg);
        return 1;
    }
    test_quantize_x(1, 32, 0);
    test_quantize_x(3, 288, 0);
    test_quantize_x(2, 4096, 1);
    test_quantize_x(5, 192, 2);
    test_quantize_x(17, 14336, 0);   /* a prefill of down_proj's input */
    /* The graph and the shared launches only touch decode passes: the variants run with them
     * off (ctest's _nograph, _nofuse) skip the large products outside any pass. */
    const char *gv = getenv("TL_CUDA_GRAPH"), *fv = getenv("TL_CUDA_FUSE");
    int variant = (gv && !strcmp(gv, "0")) || (fv && !strcmp(fv, "0"));
    tl_dtype dts[] = {TL_Q8_0, TL_Q4_0};
    for (int i = 0; i < 2; i++) {
        tl_dtype dt = dts[i];
        test_matmul_q(dt, 5, 32, 1);
        test_matmul_q(dt, 37, 288, 1);       /* rows not a multiple of 8, width not of 256 */
        test_matmul_q(dt, 64, 1056, 1);      /* 33 blocks: lane 0 takes two */
        test_matmul_q(dt, 1000, 4128, 1);
        test_matmul_q(dt, 37, 288, 3);
        test_matmul_q(dt, 64, 256, 8);
        test_matmul_q(dt, 21, 544, 11);      /* 8 + 3 tokens */
        test_matmul_q(dt, 300, 512, 40);     /* a prefill: 5 launches */
        test_matmul_q(dt, 50, 96, 257);
        if (!variant) {   /* the Llama 3.1 8B shapes at T = 1 (and lm_head) */
            test_matmul_q(dt, 4096, 4096, 1);
            test_matmul_q(dt, 1024, 4096, 1);
            test_matmul_q(dt, 14336, 4096, 1);
            test_matmul_q(dt, 4096, 14336, 1);
            test_matmul_q(dt, 4096, 4096, 9);
            test_matmul_q(dt, 128256, 4096, 1);
        }
        test_embed_q(dt);
        test_decode_q(dt);
    }
    tl_cuda_stats st;
    tl_cuda_get_stats(ctx, &st);
    TL_CHECK_INT(st.errors, 0);
    be->destroy(ctx);
    cb->destroy(cctx);
    return TL_TEST_END("test_cuda_quant");
}
