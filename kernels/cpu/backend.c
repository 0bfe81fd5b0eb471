/* The CPU backend's operation table. Buffers are plain host memory and weights are read
 * straight from the mapping, so upload is a no-op. Every operation is synchronous. */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "tokenloop/backend.h"

static void *cpu_create(int threads, tl_error *err)
{
    (void)threads;
    (void)err;
    static int dummy;
    return &dummy;
}

static void cpu_destroy(void *ctx) { (void)ctx; }

static float *cpu_alloc(void *ctx, size_t n)
{
    (void)ctx;
    return calloc(n ? n : 1, sizeof(float));
}

static void cpu_release(void *ctx, float *buf)
{
    (void)ctx;
    free(buf);
}

static void cpu_to_host(void *ctx, float *host, const float *buf, size_t n)
{
    (void)ctx;
    memcpy(host, buf, n * sizeof(float));
}

static int cpu_upload(void *ctx, const tl_weight *host, tl_weight *dev, tl_error *err)
{
    (void)ctx;
    (void)err;
    *dev = *host;
    return 0;
}

static void cpu_unload(void *ctx, tl_weight *dev)
{
    (void)ctx;
    (void)dev;
}

static void cpu_embed(void *ctx, float *x, const tl_weight *t, const int *ids, int T) { (void)ctx; tl_cpu_ref_embed(x, t, ids, T); }
static void cpu_rmsnorm(void *ctx, float *o, const float *x, const tl_weight *w, int T, int n, float eps) { (void)ctx; tl_cpu_ref_rmsnorm(o, x, w, T, n, eps); }
static void cpu_matmul(void *ctx, float *o, const float *x, const tl_weight *W, int T) { (void)ctx; tl_cpu_ref_matmul(o, x, W, T); }
static void cpu_rope(void *ctx, float *x, int T, int nh, int hd, int pos0, const float *f) { (void)ctx; tl_cpu_ref_rope(x, T, nh, hd, pos0, f); }
static void cpu_attention(void *ctx, float *o, const float *q, const float *k, const float *v, int T, int pos0, int nh, int nkv, int hd) { (void)ctx; tl_cpu_ref_attention(o, q, k, v, T, pos0, nh, nkv, hd); }
static void cpu_swiglu(void *ctx, float *g, const float *u, int n) { (void)ctx; tl_cpu_ref_swiglu(g, u, n); }
static void cpu_add(void *ctx, float *x, const float *y, int n) { (void)ctx; tl_cpu_ref_add(x, y, n); }
static void cpu_sync(void *ctx) { (void)ctx; }

static const tl_backend_ops cpu_ops = {
    .name = "cpu",
    .create = cpu_create, .destroy = cpu_destroy,
    .alloc = cpu_alloc, .release = cpu_release, .to_host = cpu_to_host,
    .upload = cpu_upload, .unload = cpu_unload,
    .embed = cpu_embed, .rmsnorm = cpu_rmsnorm, .matmul = cpu_matmul, .rope = cpu_rope,
    .attention = cpu_attention, .swiglu = cpu_swiglu, .add = cpu_add, .sync = cpu_sync,
};

const tl_backend_ops *tl_backend_cpu(void) { return &cpu_ops; }
