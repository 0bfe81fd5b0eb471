/* Every CUDA operation against the scalar CPU reference (kernels/cpu/ref.c) on random inputs,
 * then decode steps through begin_pass/end_pass, where the backend captures a CUDA graph and
 * replays it at later positions: the results must stay those of the reference, and the
 * backend's counters must show that the graph really was captured once and replayed.
 * Run with TL_CUDA_GRAPH=0 and TL_CUDA_FUSE=0 too (every step op by op; no fused launches).
 * Exits 77 (skip) when no CUDA device is present. */
#include <stdint.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "gpu_test.h"
#include "cpu/cpu.h"
#include "cuda/cuda.h"
#include "tokenloop/backend.h"
#include "tokenloop/topk.h"

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static uint16_t to_f16(float f) /* normal range only; enough for [-1, 1] test values */
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t sign = (u >> 16) & 0x8000, exp = (u >> 23) & 0xff, man = u & 0x7fffff;
    if (exp < 127 - 14)
        return (uint16_t)sign;
    return (uint16_t)(sign | ((exp - 127 + 15) << 10) | (man >> 13));
}

/* A host weight [rows, cols] of random values in the given dtype. */
static tl_weight host_weight(tl_dtype dt, int64_t rows, int64_t cols, float scale)
{
    size_t n = (size_t)(rows * cols);
    void *d = malloc(n * tl_dtype_size(dt));
    for (size_t i = 0; i < n; i++) {
        float v = frand() * scale;
        if (dt == TL_F32)
            ((float *)d)[i] = v;
        else if (dt == TL_BF16)
            ((uint16_t *)d)[i] = to_bf16(v);
        else
            ((uint16_t *)d)[i] = to_f16(v);
    }
    tl_weight w = {.data = d, .dtype = dt, .rows = rows, .cols = cols};
    return w;
}

static void test_embed(void)
{
    tl_weight h = host_weight(TL_BF16, 50, 40, 1.0f), d;
    tl_error err;
    TL_CHECK_INT(be->upload(ctx, &h, &d, &err), 0);
    int ids[] = {3, 0, 49, 7};
    float *ref = malloc(sizeof(float) * 4 * 40);
    tl_cpu_ref_embed(ref, &h, ids, 4);
    float *x = be->alloc(ctx, 4 * 40);
    be->embed(ctx, x, &d, ids, 4);
    float *got = host_of(x, 4 * 40);
    TL_CHECK_MSG(rel_err(got, ref, 4 * 40) == 0.0, "embed T=4: %g", rel_err(got, ref, 4 * 40));
    be->embed(ctx, x, &d, ids + 2, 1);
    free(got);
    got = host_of(x, 40);
    TL_CHECK_MSG(rel_err(got, ref + 2 * 40, 40) == 0.0, "embed T=1");
    free(got);
    free(ref);
    be->release(ctx, x);
    be->unload(ctx, &d);
    free((void *)h.data);
}

static void test_rmsnorm(int T, int n, tl_dtype dt)
{
    tl_weight h = host_weight(dt, 1, n, 1.0f), d;
    tl_error err;
    TL_CHECK_INT(be->upload(ctx, &h, &d, &err), 0);
    float *hx = host_rand((size_t)T * n), *ref = malloc(sizeof(float) * T * n);
    tl_cpu_ref_rmsnorm(ref, hx, &h, T, n, 1e-5f);
    float *x = dev_from(hx, (size_t)T * n), *o = be->alloc(ctx, (size_t)T * n);
    be->rmsnorm(ctx, o, x, &d, T, n, 1e-5f);
    float *got = host_of(o, (size_t)T * n);
    double e = rel_err(got, ref, (size_t)T * n);
    TL_CHECK_MSG(e <= 1e-5, "rmsnorm T=%d n=%d %s: %g", T, n, tl_dtype_name(dt), e);
    be->rmsnorm(ctx, x, x, &d, T, n, 1e-5f); /* in place, as the final norm may be */
    free(got);
    got = host_of(x, (size_t)T * n);
    e = rel_err(got, ref, (size_t)T * n);
    TL_CHECK_MSG(e <= 1e-5, "rmsnorm in place T=%d n=%d: %g", T, n, e);
    free(got);
    free(hx);
    free(ref);
    be->release(ctx, x);
    be->release(ctx, o);
    be->unload(ctx, &d);
    free((void *)h.data);
}

/* bf16 weights: the reference reads the very same values, so only summation order differs,
 * except on the cuBLAS path (T > 16) whose activations are rounded to bf16. Weights in f32 or
 * f16 are rounded to bf16 on upload, so the reference differs by that rounding. */
static void test_matmul(int rows, int cols, int T, tl_dtype dt)
{
    float scale = 1.0f / sqrtf((float)cols);
    tl_weight h = host_weight(dt, rows, cols, scale), d;
    tl_error err;
    TL_CHECK_INT(be->upload(ctx, &h, &d, &err), 0);
    float *hx = host_rand((size_t)T * cols), *ref = malloc(sizeof(float) * (size_t)T * rows);
    tl_cpu_ref_matmul(ref, hx, &h, T);
    float *x = dev_from(hx, (size_t)T * cols), *o = be->alloc(ctx, (size_t)T * rows);
    be->matmul(ctx, o, x, &d, T);
    float *got = host_of(o, (size_t)T * rows);
    double e = rel_err(got, ref, (size_t)T * rows);
    double tol = rows == 1 || (dt == TL_BF16 && T <= 16) ? 2e-5 : 1.5e-2;
    TL_CHECK_MSG(e <= tol, "matmul [%d, %d] T=%d %s: %g (tol %g)", rows, cols, T, tl_dtype_name(dt), e, tol);
    free(got);
    free(hx);
    free(ref);
    be->release(ctx, x);
    be->release(ctx, o);
    be->unload(ctx, &d);
    free((void *)h.data);
}

static void test_rope(int T, int n_heads, int hd, int pos0, int host_freq)
{
    int half = hd / 2;
    float *freq = malloc(sizeof(float) * half);
    for (int i = 0; i < half; i++)
        freq[i] = 1.0f / powf(500000.0f, (2.0f * i) / hd);
    tl_weight fw = {.data = freq, .dtype = TL_F32, .rows = 1, .cols = half}, fd;
    tl_error err;
    TL_CHECK_INT(be->upload(ctx, &fw, &fd, &err), 0);
    size_t n = (size_t)T * n_heads * hd;
    float *hx = host_rand(n), *ref = malloc(sizeof(float) * n);
    memcpy(ref, hx, sizeof(float) * n);
    tl_cpu_ref_rope(ref, T, n_heads, hd, pos0, freq);
    float *x = dev_from(hx, n);
    be->rope(ctx, x, T, n_heads, hd, pos0, host_freq ? freq : (const float *)fd.data);
    float *got = host_of(x, n);
    double e = rel_err(got, ref, n);
    TL_CHECK_MSG(e <= 2e-5, "rope T=%d heads=%d hd=%d pos0=%d %s: %g", T, n_heads, hd, pos0,
                 host_freq ? "host freq" : "uploaded freq", e);
    free(got);
    free(hx);
    free(ref);
    be->release(ctx, x);
    be->unload(ctx, &fd);
    free(freq);
}

static void test_attention(int T, int pos0, int n_heads, int n_kv, int hd)
{
    int n_ctx = pos0 + T;
    size_t qn = (size_t)T * n_heads * hd, kvn = (size_t)(n_ctx + 3) * n_kv * hd;
    float *hq = host_rand(qn), *hk = host_rand(kvn), *hv = host_rand(kvn), *ref = malloc(sizeof(float) * qn);
    for (size_t i = 0; i < qn; i++)
        hq[i] *= 3.0f; /* peakier softmax */
    tl_cpu_ref_attention(ref, hq, hk, hv, T, pos0, n_heads, n_kv, hd);
    float *q = dev_from(hq, qn), *k = dev_from(hk, kvn), *v = dev_from(hv, kvn), *o = be->alloc(ctx, qn);
    be->attention(ctx, o, q, k, v, T, pos0, n_heads, n_kv, hd);
    float *got = host_of(o, qn);
    double e = rel_err(got, ref, qn);
    TL_CHECK_MSG(e <= 2e-5, "attention T=%d pos0=%d heads=%d kv=%d hd=%d: %g", T, pos0, n_heads, n_kv, hd, e);
    free(got);
    free(hq);
    free(hk);
    free(hv);
    free(ref);
    be->release(ctx, q);
    be->release(ctx, k);
    be->release(ctx, v);
    be->release(ctx, o);
}

static void test_elementwise(int n)
{
    float *hg = host_rand(n), *hu = host_rand(n), *ref = malloc(sizeof(float) * n);
    for (int i = 0; i < n; i++)
        hg[i] *= 6.0f;
    memcpy(ref, hg, sizeof(float) * n);
    tl_cpu_ref_swiglu(ref, hu, n);
    float *g = dev_from(hg, n), *u = dev_from(hu, n);
    be->swiglu(ctx, g, u, n);
    float *got = host_of(g, n);
    double e = rel_err(got, ref, n);
    TL_CHECK_MSG(e <= 1e-6, "swiglu n=%d: %g", n, e);
    free(got);
    tl_cpu_ref_add(ref, hu, n);
    be->add(ctx, g, u, n);
    got = host_of(g, n);
    e = rel_err(got, ref, n);
    TL_CHECK_MSG(e <= 1e-6, "add n=%d: %g", n, e);
    free(got);
    free(hg);
    free(hu);
    free(ref);
    be->release(ctx, g);
    be->release(ctx, u);
}

/* ---- decode steps through begin_pass/end_pass: the captured graph ---- */

enum { H = 64, NH = 4, NKV = 2, HD = 16, KVD = NKV * HD, VOCAB = 10, CAP = 48, FF = 96 };

typedef struct mini {
    tl_weight table, norm, wq, wk, wv, wo, freq, wg, wu, wd;  /* host */
    tl_weight d_table, d_norm, d_wq, d_wk, d_wv, d_wo, d_freq, d_wg, d_wu, d_wd;
    float *x, *xb, *q, *att, *o, *kc, *vc, *hb, *hb2;         /* device */
    float hx[H], hxb[H], hq[H], hatt[H], ho[H], hkc[CAP * KVD], hvc[CAP * KVD], hhb[FF], hhb2[FF];  /* reference */
} mini;

/* One decode step at pos on the device (inside a pass) and on the host; extra adds one more
 * operation, which changes the step's shape. Returns the relative error of the output. */
static double mini_step(mini *m, int id, int pos, int extra)
{
    be->begin_pass(ctx, 1, pos);
    be->embed(ctx, m->x, &m->d_table, &id, 1);
    be->rmsnorm(ctx, m->xb, m->x, &m->d_norm, 1, H, 1e-5f);
    be->matmul(ctx, m->q, m->xb, &m->d_wq, 1);
    be->matmul(ctx, m->kc + (size_t)pos * KVD, m->xb, &m->d_wk, 1);
    be->matmul(ctx, m->vc + (size_t)pos * KVD, m->xb, &m->d_wv, 1);
    be->rope(ctx, m->q, 1, NH, HD, pos, m->d_freq.data);
    be->rope(ctx, m->kc + (size_t)pos * KVD, 1, NKV, HD, pos, m->d_freq.data);
    be->attention(ctx, m->att, m->q, m->kc, m->vc, 1, pos, NH, NKV, HD);
    be->matmul(ctx, m->o, m->att, &m->d_wo, 1);
    be->add(ctx, m->x, m->o, H);
    be->rmsnorm(ctx, m->xb, m->x, &m->d_norm, 1, H, 1e-5f);
    be->matmul(ctx, m->hb, m->xb, &m->d_wg, 1);
    be->matmul(ctx, m->hb2, m->xb, &m->d_wu, 1);
    be->swiglu(ctx, m->hb, m->hb2, FF);
    be->matmul(ctx, m->o, m->hb, &m->d_wd, 1);
    be->add(ctx, m->x, m->o, H);
    if (extra)
        be->add(ctx, m->x, m->o, H);
    be->rmsnorm(ctx, m->xb, m->x, &m->d_norm, 1, H, 1e-5f); /* as the next layer would */
    be->end_pass(ctx);
    TL_CHECK_INT(be->sync(ctx, NULL), 0);
    float got[H], gotn[H], gotu[FF];
    be->to_host(ctx, got, m->x, H);
    be->to_host(ctx, gotn, m->xb, H);
    be->to_host(ctx, gotu, m->hb2, FF); /* up's output survives the fused gate/up/SwiGLU */

    tl_cpu_ref_embed(m->hx, &m->table, &id, 1);
    tl_cpu_ref_rmsnorm(m->hxb, m->hx, &m->norm, 1, H, 1e-5f);
    tl_cpu_ref_matmul(m->hq, m->hxb, &m->wq, 1);
    tl_cpu_ref_matmul(m->hkc + (size_t)pos * KVD, m->hxb, &m->wk, 1);
    tl_cpu_ref_matmul(m->hvc + (size_t)pos * KVD, m->hxb, &m->wv, 1);
    tl_cpu_ref_rope(m->hq, 1, NH, HD, pos, m->freq.data);
    tl_cpu_ref_rope(m->hkc + (size_t)pos * KVD, 1, NKV, HD, pos, m->freq.data);
    tl_cpu_ref_attention(m->hatt, m->hq, m->hkc, m->hvc, 1, pos, NH, NKV, HD);
    tl_cpu_ref_matmul(m->ho, m->hatt, &m->wo, 1);
    tl_cpu_ref_add(m->hx, m->ho, H);
    tl_cpu_ref_rmsnorm(m->hxb, m->hx, &m->norm, 1, H, 1e-5f);
    tl_cpu_ref_matmul(m->hhb, m->hxb, &m->wg, 1);
    tl_cpu_ref_matmul(m->hhb2, m->hxb, &m->wu, 1);
    tl_cpu_ref_swiglu(m->hhb, m->hhb2, FF);
    tl_cpu_ref_matmul(m->ho, m->hhb, &m->wd, 1);
    tl_cpu_ref_add(m->hx, m->ho, H);
    if (extra)
        tl_cpu_ref_add(m->hx, m->ho, H);
    tl_cpu_ref_rmsnorm(m->hxb, m->hx, &m->norm, 1, H, 1e-5f);
    return fmax(fmax(rel_err(got, m->hx, H), rel_err(gotn, m->hxb, H)), rel_err(gotu, m->hhb2, FF));
}

static void test_decode_graph(void)
{
    mini m;
    memset(&m, 0, sizeof m);
    tl_error err;
    float s = 1.0f / sqrtf((float)H);
    m.table = host_weight(TL_BF16, VOCAB, H, 1.0f);
    m.norm = host_weight(TL_F32, 1, H, 1.0f);
    m.wq = host_weight(TL_BF16, H, H, s);
    m.wk = host_weight(TL_BF16, KVD, H, s);
    m.wv = host_weight(TL_BF16, KVD, H, s);
    m.wo = host_weight(TL_BF16, H, H, s);
    m.wg = host_weight(TL_BF16, FF, H, s);
    m.wu = host_weight(TL_BF16, FF, H, s);
    m.wd = host_weight(TL_BF16, H, FF, 1.0f / sqrtf((float)FF));
    float *freq = malloc(sizeof(float) * HD / 2);
    for (int i = 0; i < HD / 2; i++)
        freq[i] = 1.0f / powf(10000.0f, (2.0f * i) / HD);
    m.freq = (tl_weight){.data = freq, .dtype = TL_F32, .rows = 1, .cols = HD / 2};
    tl_weight *hw[] = {&m.table, &m.norm, &m.wq, &m.wk, &m.wv, &m.wo, &m.freq, &m.wg, &m.wu, &m.wd};
    tl_weight *dw[] = {&m.d_table, &m.d_norm, &m.d_wq, &m.d_wk, &m.d_wv, &m.d_wo, &m.d_freq, &m.d_wg, &m.d_wu, &m.d_wd};
    for (int i = 0; i < 10; i++)
        TL_CHECK_INT(be->upload(ctx, hw[i], dw[i], &err), 0);
    m.x = be->alloc(ctx, H);
    m.xb = be->alloc(ctx, H);
    m.q = be->alloc(ctx, H);
    m.att = be->alloc(ctx, H);
    m.o = be->alloc(ctx, H);
    m.kc = be->alloc(ctx, CAP * KVD);
    m.vc = be->alloc(ctx, CAP * KVD);
    m.hb = be->alloc(ctx, FF);
    m.hb2 = be->alloc(ctx, FF);

    tl_cuda_stats st0, st1;
    tl_cuda_get_stats(ctx, &st0);
    /* positions 0..15, then rewind to 6 and go on to 20, then a step of another shape */
    int n = 0, worst_pos = -1;
    double worst = 0;
    for (int pos = 0; pos < 16; pos++, n++) {
        double e = mini_step(&m, (pos * 7 + 3) % VOCAB, pos, 0);
        if (e > worst) { worst = e; worst_pos = pos; }
    }
    for (int pos = 6; pos < 21; pos++, n++) {
        double e = mini_step(&m, (pos * 5 + 1) % VOCAB, pos, 0);
        if (e > worst) { worst = e; worst_pos = pos; }
    }
    TL_CHECK_MSG(worst <= 1e-4, "decode steps: error %g at position %d", worst, worst_pos);
    tl_cuda_get_stats(ctx, &st1);
    const char *g = getenv("TL_CUDA_GRAPH");
    if (!(g && !strcmp(g, "0"))) {
        /* step 0 runs eagerly, step 1 agrees with it at another position and is captured */
        TL_CHECK_INT(st1.captures - st0.captures, 1);
        TL_CHECK_INT(st1.replays - st0.replays, n - 2);
        TL_CHECK_INT(st1.eager_decode - st0.eager_decode, 1);
    } else {
        TL_CHECK_INT(st1.replays - st0.replays, 0);
    }
    TL_CHECK_INT(st1.errors, 0);
    double ms = tl_cuda_pass_device_ms(ctx);
    TL_CHECK_MSG(ms > 0 && ms < 1000, "device time of a pass: %g ms", ms);
    TL_CHECK(be->pass_ms && be->pass_ms(ctx) == ms);

    /* a step of another shape runs eagerly and is still right; the old graph is dropped and,
     * two agreeing steps later, a new one is captured */
    worst = mini_step(&m, 4, 21, 1);
    TL_CHECK_MSG(worst <= 1e-4, "step with an extra op: %g", worst);
    for (int pos = 22; pos < 26; pos++) {
        double e = mini_step(&m, pos % VOCAB, pos, 0);
        TL_CHECK_MSG(e <= 1e-4, "after the shape change, position %d: %g", pos, e);
    }
    tl_cuda_stats st2;
    tl_cuda_get_stats(ctx, &st2);
    if (!(g && !strcmp(g, "0")))
        TL_CHECK_INT(st2.captures - st1.captures, 1);

    /* a pass that reads back in the middle (to_host) flushes and stays correct */
    be->begin_pass(ctx, 1, 26);
    int id = 2;
    be->embed(ctx, m.x, &m.d_table, &id, 1);
    float mid[H], ref[H];
    be->to_host(ctx, mid, m.x, H);
    be->end_pass(ctx);
    tl_cpu_ref_embed(ref, &m.table, &id, 1);
    TL_CHECK_MSG(rel_err(mid, ref, H) == 0.0, "to_host inside a pass");

    float *bufs[] = {m.x, m.xb, m.q, m.att, m.o, m.kc, m.vc, m.hb, m.hb2};
    for (int i = 0; i < 9; i++)
        be->release(ctx, bufs[i]);
    for (int i = 0; i < 10; i++) {
        be->unload(ctx, dw[i]);
        free((void *)hw[i]->data);
    }
}

/* On-device top-k and softmax sum vs tl_topk. kind 0: random scores; 1: five distinct values
 * (ties everywhere: the lower id must win, as on the host); 2: with -inf and NaN. */
static void test_topk(int n, int k, int kind)
{
    float *h = host_rand((size_t)n);
    for (int i = 0; i < n; i++) {
        if (kind == 1) h[i] = (float)((int)((h[i] + 1.0f) * 2.5f));
        if (kind == 2 && i % 7 == 3) h[i] = -INFINITY;
        if (kind == 2 && i % 13 == 5) h[i] = NAN;
    }
    float *d = dev_from(h, (size_t)n);
    int ri[TL_TOPK_MAX], gi[TL_TOPK_MAX];
    float rv[TL_TOPK_MAX], gv[TL_TOPK_MAX];
    double rz = 0, gz = 0;
    int rn = tl_topk(h, n, k, ri, rv, &rz);
    int gn = be->topk(ctx, d, n, k, gi, gv, &gz);
    TL_CHECK_MSG(gn == rn, "topk n %d k %d kind %d: %d vs %d filled", n, k, kind, gn, rn);
    if (gn == rn && rn > 0) {
        TL_CHECK_MSG(!memcmp(gi, ri, sizeof(int) * rn) && !memcmp(gv, rv, sizeof(float) * rn),
                     "topk n %d k %d kind %d: ids or scores differ (first: %d vs %d)", n, k, kind, gi[0], ri[0]);
        /* tl_topk's sum is a float exp per term now (core/topk.h states its bound); 1e-5 of
         * the sum is far wider than that bound and far tighter than a wrong sum */
        TL_CHECK_MSG(fabs(gz - rz) <= 1e-5 * rz, "topk n %d k %d kind %d: sum %.12g vs %.12g", n, k, kind, gz, rz);
    }
    be->release(ctx, d);
    free(h);
}

static void test_bandwidth(void)
{
    double bw = be->bandwidth(ctx, 0.1);
    printf("device copy bandwidth: %.0f GB/s\n", bw / 1e9);
    TL_CHECK_MSG(bw > 1e11 && bw < 1e13, "%.3g bytes/s is no GPU's memory", bw);
}

int main(void)
{
    int ndev = 0;
    cudaError_t ce = cudaGetDeviceCount(&ndev);
    if (ce != cudaSuccess || ndev == 0 || !tl_backend_cuda_available()) {
        printf("test_cuda_ops: SKIP: no usable CUDA device (%s)\n",
               ce != cudaSuccess ? cudaGetErrorString(ce) : ndev ? "older than sm_80" : "none found");
        return 77;
    }
    be = tl_backend_cuda();
    tl_error err;
    ctx = be->create(0, &err);
    if (!ctx) {
        fprintf(stderr, "create: %s\n", err.msg);
        return 1;
    }
    test_embed();
    test_rmsnorm(3, 200, TL_F32);
    test_rmsnorm(1, 4096, TL_BF16);
    test_rmsnorm(2, 2048, TL_F16);
    test_matmul(64, 256, 1, TL_BF16);
    test_matmul(1024, 4096, 1, TL_BF16);
    test_matmul(5000, 512, 1, TL_BF16);
    test_matmul(37, 100, 1, TL_BF16);   /* cols % 8 != 0: the scalar kernel */
    test_matmul(64, 256, 5, TL_BF16);
    test_matmul(64, 256, 13, TL_BF16);
    test_matmul(37, 100, 16, TL_BF16);
    test_matmul(64, 256, 9, TL_BF16);   /* 9..16 tokens: one launch of k_matvec<R, 16> */
    test_matmul(1024, 512, 16, TL_BF16);
    test_matmul(300, 512, 40, TL_BF16); /* cuBLAS */
    test_matmul(50, 24, 257, TL_BF16);
    test_matmul(1, 64, 3, TL_F32);      /* a [1, n] weight stays fp32 */
    test_matmul(128, 256, 1, TL_F32);
    test_matmul(128, 256, 1, TL_F16);
    test_rope(5, 4, 64, 100, 0);
    test_rope(1, 8, 128, 4000, 0);
    test_rope(3, 2, 16, 7, 1);
    test_attention(1, 0, 8, 2, 64);
    test_attention(1, 37, 8, 2, 64);
    test_attention(9, 0, 8, 2, 64);
    test_attention(6, 20, 4, 4, 128);
    test_attention(1, 300, 32, 8, 128);
    test_attention(4, 11, 6, 3, 16);
    test_attention(2, 5, 2, 1, 256);
    test_attention(3, 9, 4, 2, 72);
    TL_CHECK(be->accepts != NULL);
    test_elementwise(1000);
    test_elementwise(14336);
    test_decode_graph();
    int tn[] = {1, 100, 2048, 2049, 128256};
    int tk[] = {1, 50, 64};
    for (size_t i = 0; i < sizeof tn / sizeof *tn; i++)
        for (size_t j = 0; j < sizeof tk / sizeof *tk; j++)
            for (int kind = 0; kind < 3; kind++)
                if (tk[j] <= tn[i])
                    test_topk(tn[i], tk[j], kind);
    test_bandwidth();
    tl_cuda_stats st;
    tl_cuda_get_stats(ctx, &st);
    TL_CHECK_INT(st.errors, 0);
    be->destroy(ctx);
    return TL_TEST_END("test_cuda_ops");
}
