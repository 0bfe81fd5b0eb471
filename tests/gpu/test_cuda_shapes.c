/* The kernel variants the Llama 3.1 8B shape picks on the device at hand (on an H200's 132
 * SMs: k_matvec<4,1> for wq/wo/down, <1,1> for wk/wv, <8,1> for lm_head and gate/up alone,
 * k_matvec_multi<8> for q/k/v, k_gate_up_swiglu<4>), against the scalar CPU reference
 * (kernels/cpu/ref.c): the five matrices alone (4096x4096, 1024x4096, 14336x4096, 4096x14336,
 * 128256x4096) at 1 token and at 9..16 (one k_matvec<R,16> launch), then decode steps of one
 * 8B-shaped layer plus the final norm and lm_head through begin_pass/end_pass, where the fused
 * launches and the graph run. Prints the variant counters. Exits 77 without a CUDA device. */
#include <stdint.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "gpu_test.h"
#include "cpu/cpu.h"
#include "cuda/cuda.h"
#include "tokenloop/backend.h"

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static tl_weight host_weight(int64_t rows, int64_t cols, float scale)
{
    size_t n = (size_t)(rows * cols);
    if (rows == 1) {
        float *d = malloc(n * sizeof(float));
        for (size_t i = 0; i < n; i++)
            d[i] = 1.0f + 0.25f * frand();
        return (tl_weight){.data = d, .dtype = TL_F32, .rows = rows, .cols = cols};
    }
    uint16_t *d = malloc(n * sizeof(uint16_t));
    for (size_t i = 0; i < n; i++)
        d[i] = to_bf16(frand() * scale);
    return (tl_weight){.data = d, .dtype = TL_BF16, .rows = rows, .cols = cols};
}

static void test_matmul(int rows, int cols, int T)
{
    tl_weight h = host_weight(rows, cols, 1.0f / sqrtf((float)cols)), d;
    tl_error err;
    TL_CHECK_INT(be->upload(ctx, &h, &d, &err), 0);
    size_t no = (size_t)T * rows;
    float *hx = host_rand((size_t)T * cols), *ref = malloc(sizeof(float) * no), *got = malloc(sizeof(float) * no);
    tl_cpu_ref_matmul(ref, hx, &h, T);
    float *x = dev_from(hx, (size_t)T * cols), *o = be->alloc(ctx, no);
    be->matmul(ctx, o, x, &d, T);
    TL_CHECK_INT(be->sync(ctx, NULL), 0);
    be->to_host(ctx, got, o, no);
    double e = rel_err(got, ref, no);
    printf("matmul [%d, %d] x %d token%s: rel err %.2e\n", rows, cols, T, T == 1 ? "" : "s", e);
    TL_CHECK_MSG(e <= 1e-4, "matmul [%d, %d] T=%d: %g", rows, cols, T, e);
    free(hx);
    free(ref);
    free(got);
    be->release(ctx, x);
    be->release(ctx, o);
    be->unload(ctx, &d);
    free((void *)h.data);
}

/* one 8B layer (hidden 4096, 32 heads, 8 key/value heads of 128, MLP 14336) and lm_head */
enum { H = 4096, NH = 32, NKV = 8, HD = 128, Q = NH * HD, KVD = NKV * HD, FF = 14336, VOCAB = 128256, CAP = 16 };

typedef struct layer {
    tl_weight table, anorm, wq, wk, wv, wo, mnorm, wg, wu, wd, fnorm, lm, freq;
    tl_weight d[13];
    float *x, *xb, *q, *att, *o, *kc, *vc, *hb, *hb2, *logits;        /* device */
    float *hx, *hxb, *hq, *hatt, *ho, *hkc, *hvc, *hhb, *hhb2, *hlog;  /* reference */
} layer;

static double step(layer *L, int id, int pos)
{
    tl_weight *d = L->d;
    const float *freq = d[12].data;
    be->begin_pass(ctx, 1, pos);
    be->embed(ctx, L->x, &d[0], &id, 1);
    be->rmsnorm(ctx, L->xb, L->x, &d[1], 1, H, 1e-5f);
    be->matmul(ctx, L->q, L->xb, &d[2], 1);
    be->matmul(ctx, L->kc + (size_t)pos * KVD, L->xb, &d[3], 1);
    be->matmul(ctx, L->vc + (size_t)pos * KVD, L->xb, &d[4], 1);
    be->rope(ctx, L->q, 1, NH, HD, pos, freq);
    be->rope(ctx, L->kc + (size_t)pos * KVD, 1, NKV, HD, pos, freq);
    be->attention(ctx, L->att, L->q, L->kc, L->vc, 1, pos, NH, NKV, HD);
    be->matmul(ctx, L->o, L->att, &d[5], 1);
    be->add(ctx, L->x, L->o, H);
    be->rmsnorm(ctx, L->xb, L->x, &d[6], 1, H, 1e-5f);
    be->matmul(ctx, L->hb, L->xb, &d[7], 1);
    be->matmul(ctx, L->hb2, L->xb, &d[8], 1);
    be->swiglu(ctx, L->hb, L->hb2, FF);
    be->matmul(ctx, L->o, L->hb, &d[9], 1);
    be->add(ctx, L->x, L->o, H);
    be->rmsnorm(ctx, L->xb, L->x, &d[10], 1, H, 1e-5f);
    be->matmul(ctx, L->logits, L->xb, &d[11], 1);
    be->end_pass(ctx);
    TL_CHECK_INT(be->sync(ctx, NULL), 0);
    float *got = malloc(sizeof(float) * VOCAB), gx[H];
    be->to_host(ctx, got, L->logits, VOCAB);
    be->to_host(ctx, gx, L->x, H);

    const float *hf = L->freq.data;
    tl_cpu_ref_embed(L->hx, &L->table, &id, 1);
    tl_cpu_ref_rmsnorm(L->hxb, L->hx, &L->anorm, 1, H, 1e-5f);
    tl_cpu_ref_matmul(L->hq, L->hxb, &L->wq, 1);
    tl_cpu_ref_matmul(L->hkc + (size_t)pos * KVD, L->hxb, &L->wk, 1);
    tl_cpu_ref_matmul(L->hvc + (size_t)pos * KVD, L->hxb, &L->wv, 1);
    tl_cpu_ref_rope(L->hq, 1, NH, HD, pos, hf);
    tl_cpu_ref_rope(L->hkc + (size_t)pos * KVD, 1, NKV, HD, pos, hf);
    tl_cpu_ref_attention(L->hatt, L->hq, L->hkc, L->hvc, 1, pos, NH, NKV, HD);
    tl_cpu_ref_matmul(L->ho, L->hatt, &L->wo, 1);
    tl_cpu_ref_add(L->hx, L->ho, H);
    tl_cpu_ref_rmsnorm(L->hxb, L->hx, &L->mnorm, 1, H, 1e-5f);
    tl_cpu_ref_matmul(L->hhb, L->hxb, &L->wg, 1);
    tl_cpu_ref_matmul(L->hhb2, L->hxb, &L->wu, 1);
    tl_cpu_ref_swiglu(L->hhb, L->hhb2, FF);
    tl_cpu_ref_matmul(L->ho, L->hhb, &L->wd, 1);
    tl_cpu_ref_add(L->hx, L->ho, H);
    tl_cpu_ref_rmsnorm(L->hxb, L->hx, &L->fnorm, 1, H, 1e-5f);
    tl_cpu_ref_matmul(L->hlog, L->hxb, &L->lm, 1);
    double e = fmax(rel_err(got, L->hlog, VOCAB), rel_err(gx, L->hx, H));
    free(got);
    return e;
}

static void test_layer(void)
{
    layer L;
    memset(&L, 0, sizeof L);
    float s = 1.0f / sqrtf((float)H);
    L.table = host_weight(VOCAB, H, 1.0f);
    L.anorm = host_weight(1, H, 0);
    L.wq = host_weight(Q, H, s);
    L.wk = host_weight(KVD, H, s);
    L.wv = host_weight(KVD, H, s);
    L.wo = host_weight(H, Q, 1.0f / sqrtf((float)Q));
    L.mnorm = host_weight(1, H, 0);
    L.wg = host_weight(FF, H, s);
    L.wu = host_weight(FF, H, s);
    L.wd = host_weight(H, FF, 1.0f / sqrtf((float)FF));
    L.fnorm = host_weight(1, H, 0);
    L.lm = host_weight(VOCAB, H, s);
    float *freq = malloc(sizeof(float) * HD / 2);
    for (int i = 0; i < HD / 2; i++)
        freq[i] = 1.0f / powf(500000.0f, (2.0f * i) / HD);
    L.freq = (tl_weight){.data = freq, .dtype = TL_F32, .rows = 1, .cols = HD / 2};
    tl_weight *hw[] = {&L.table, &L.anorm, &L.wq, &L.wk, &L.wv, &L.wo, &L.mnorm, &L.wg, &L.wu, &L.wd,
                       &L.fnorm, &L.lm, &L.freq};
    tl_error err;
    for (int i = 0; i < 13; i++)
        TL_CHECK_INT(be->upload(ctx, hw[i], &L.d[i], &err), 0);
    float **dv[] = {&L.x, &L.xb, &L.q, &L.att, &L.o, &L.kc, &L.vc, &L.hb, &L.hb2, &L.logits};
    float **hv[] = {&L.hx, &L.hxb, &L.hq, &L.hatt, &L.ho, &L.hkc, &L.hvc, &L.hhb, &L.hhb2, &L.hlog};
    size_t n[] = {H, H, Q, Q, H, CAP * KVD, CAP * KVD, FF, FF, VOCAB};
    for (int i = 0; i < 10; i++) {
        *dv[i] = be->alloc(ctx, n[i]);
        *hv[i] = calloc(n[i], sizeof(float));
    }
    tl_cuda_stats st0, st1;
    tl_cuda_get_stats(ctx, &st0);
    double worst = 0;
    int worst_pos = -1, steps = 5;
    for (int pos = 0; pos < steps; pos++) {
        double e = step(&L, (pos * 7919 + 11) % VOCAB, pos);
        printf("8B layer + lm_head, decode at position %d: rel err %.2e (device time %.3f ms)\n", pos, e,
               tl_cuda_pass_device_ms(ctx));
        if (e > worst) {
            worst = e;
            worst_pos = pos;
        }
    }
    TL_CHECK_MSG(worst <= 1e-3, "8B layer decode: %g at position %d", worst, worst_pos);
    tl_cuda_get_stats(ctx, &st1);
    static const char *names[TL_CUDA_V_COUNT] = {"k_matvec<1,1>", "k_matvec<2,1>", "k_matvec<4,1>",
                                                 "k_matvec<8,1>", "k_matvec_multi<1>", "k_matvec_multi<2>",
                                                 "k_matvec_multi<4>", "k_matvec_multi<8>", "k_gate_up_swiglu<1>",
                                                 "k_gate_up_swiglu<2>", "k_gate_up_swiglu<4>"};
    long fused = 0;
    printf("variants launched by the host (a graph replay launches none):");
    for (int i = 0; i < TL_CUDA_V_COUNT; i++) {
        long k = st1.variants[i] - st0.variants[i];
        if (k)
            printf(" %s x%ld", names[i], k);
        if (i >= TL_CUDA_V_MULTI)
            fused += k;
    }
    printf("\n");
    const char *f = getenv("TL_CUDA_FUSE");
    if (!(f && !strcmp(f, "0")))
        TL_CHECK_MSG(fused > 0, "the fused q/k/v and gate/up launches never ran");
    TL_CHECK_INT(st1.errors, 0);
    for (int i = 0; i < 10; i++) {
        be->release(ctx, *dv[i]);
        free(*hv[i]);
    }
    for (int i = 0; i < 13; i++) {
        be->unload(ctx, &L.d[i]);
        free((void *)hw[i]->data);
    }
}

int main(void)
{
    rng = 0x2545f4914f6cdd1dull;   /* this test's own values, as before it shared gpu_test.h */
    int ndev = 0;
    cudaError_t ce = cudaGetDeviceCount(&ndev);
    if (ce != cudaSuccess || ndev == 0 || !tl_backend_cuda_available()) {
        printf("test_cuda_shapes: SKIP: no usable CUDA device\n");
        return 77;
    }
    be = tl_backend_cuda();
    tl_error err;
    ctx = be->create(0, &err);
    if (!ctx) {
        fprintf(stderr, "create: %s\n", err.msg);
        return 1;
    }
    int shapes[][2] = {{4096, 4096}, {1024, 4096}, {14336, 4096}, {4096, 14336}, {128256, 4096}};
    for (int i = 0; i < 5; i++)
        test_matmul(shapes[i][0], shapes[i][1], 1);
    test_matmul(4096, 4096, 12);
    test_matmul(1024, 4096, 16);
    test_matmul(14336, 4096, 9);
    test_layer();
    tl_cuda_stats st;
    tl_cuda_get_stats(ctx, &st);
    TL_CHECK_INT(st.errors, 0);
    be->destroy(ctx);
    return TL_TEST_END("test_cuda_shapes");
}
