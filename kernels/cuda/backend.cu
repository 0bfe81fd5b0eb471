/* The CUDA backend's operation table: device buffers, bf16 weights, fp32 activations, one
 * non-blocking stream.
 *
 * Decode steps (passes of T == 1) are captured as a CUDA graph and replayed. Between
 * begin_pass and end_pass of such a step the operations are only recorded; end_pass either
 * replays the graph (when the recorded step matches the captured one) or runs them. A pointer
 * argument is matched by the allocation it falls in and its offset there: an offset that is
 * the same at two different positions is fixed, one that moves by exactly pos * (the row
 * width) is a per-position row (a KV-cache row) and the graph reads it at base + pos * width,
 * pos coming from a device int written before each replay. A capture therefore needs two
 * eager decode steps at different positions that agree, and any mismatch later (new buffers,
 * a different schedule) falls back to running the step and capturing again. */
#include <cublas_v2.h>
#include <dlfcn.h>
#include <new>
#include <cuda_runtime.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "cpu/cpu.h"
#include "cuda/cuda.h"
#include "tokenloop/backend.h"
#include "tokenloop/topk.h"
#include "tokenloop/quant.h"
}
#include "kernels.cuh"
#include "qkernels.cuh"

/* cuBLAS (the prefill GEMM) is opened when a CUDA context is first made, not linked: mapping
 * it costs every process ~25,000 page faults and ~90 ms at start (measured with an empty
 * program linked to it), which each tokenloop command paid on a CUDA build, GPU or not. Its
 * own RUNPATH finds cublasLt beside it. TL_CUBLAS_LIB (CMake: this build's toolkit copy) is
 * tried first, then the soname through the loader's usual search; TL_CUDA_CUBLAS=PATH in the
 * environment replaces both (tests use it for the error path). */
static struct {
    decltype(&cublasCreate) create;
    decltype(&cublasDestroy) destroy;
    decltype(&cublasSetStream) set_stream;
    /* the C entry point (C++ also sees an inline overload taking a cudaDataType compute type) */
    cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *,
                              const void *, cudaDataType, int, const void *, cudaDataType, int, const void *, void *,
                              cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
    char err[512];
} blas;
static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

static void blas_open(void)
{
    const char *env = getenv("TL_CUDA_CUBLAS");
    const char *names[2] = {env && *env ? env : TL_CUBLAS_LIB, env && *env ? nullptr : TL_CUBLAS_SONAME};
    void *h = nullptr;
    const char *why = "";
    for (int i = 0; i < 2 && !h; i++) {
        if (!names[i])
            continue;
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            const char *e = dlerror();
            why = e ? e : names[i];
        }
    }
    if (!h) {
        snprintf(blas.err, sizeof blas.err, "cannot load cuBLAS: %s", why);
        return;
    }
    blas.create = (decltype(blas.create))dlsym(h, "cublasCreate_v2");
    blas.destroy = (decltype(blas.destroy))dlsym(h, "cublasDestroy_v2");
    blas.set_stream = (decltype(blas.set_stream))dlsym(h, "cublasSetStream_v2");
    blas.gemm_ex = (decltype(blas.gemm_ex))dlsym(h, "cublasGemmEx");
    if (!blas.create || !blas.destroy || !blas.set_stream || !blas.gemm_ex) {
        snprintf(blas.err, sizeof blas.err, "cannot load cuBLAS: a symbol is missing from it (cublasCreate_v2, "
                 "cublasDestroy_v2, cublasSetStream_v2, cublasGemmEx)");
        blas.create = nullptr;   /* the handle stays open: another thread may be past the once */
    }
}

int tl_cuda_load_blas(char *msg, size_t n)
{
    pthread_once(&blas_once, blas_open);
    if (blas.create)
        return 0;
    if (msg && n)
        snprintf(msg, n, "%s", blas.err);
    return -1;
}
#include "topk.cuh"

namespace {

enum { OP_EMBED, OP_RMSNORM, OP_MATMUL, OP_ROPE, OP_ATTN, OP_SWIGLU, OP_ADD };
constexpr int MAXP = 4, MAX_IDS = 8;

/* OP_EMBED and OP_MATMUL: a = the weight is fp32 (a [1, n] vector), b = its tl_dtype when it
 * is Q8_0/Q4_0 (the quantized kernels, qkernels.cuh), else 0. */
struct cmd {
    int kind, np;
    float *p[MAXP];          /* as the engine passed them */
    long long W[MAXP];       /* floats per position of each pointer */
    char *abase[MAXP];       /* allocation holding p (NULL: not ours; compared raw) */
    long long off[MAXP];     /* p - abase, in floats */
    int rel[MAXP];           /* graph: per-position pointer */
    long long goff[MAXP];    /* graph: offset at position 0 (rel) or fixed offset */
    int T, a, b, c, slot;    /* compared */
    float f;                 /* compared (bitwise) */
    const void *w;           /* device weight / inv_freq, compared */
    long long wr, wc;
    int pos, id;             /* not compared: read from device inside the graph */
};

struct alloc_ent {
    char *base;
    size_t bytes;
};

struct wreg {
    const void *host;
    int dtype;
    long long rows, cols;
    void *dev;
    int refs;
};

struct cmdlist {
    cmd *v = nullptr;
    int n = 0, cap = 0;
    int push(const cmd &c)
    {
        if (n == cap) {
            int nc = cap ? 2 * cap : 512;
            cmd *nv = (cmd *)realloc(v, sizeof(cmd) * nc);
            if (!nv)
                return -1;
            v = nv;
            cap = nc;
        }
        v[n++] = c;
        return 0;
    }
};

struct cuctx {
    int dev = 0, nsm = 0;
    cudaStream_t s = nullptr;
    cublasHandle_t blas = nullptr;
    cudaEvent_t ev0 = nullptr, ev1 = nullptr;
    int timed = 0;
    int *d_pos = nullptr, *d_ids = nullptr;
    int *d_idsbuf = nullptr;
    size_t idscap = 0;
    uint16_t *d_xb = nullptr;
    size_t xbcap = 0;
    float *d_inv = nullptr;
    int invcap = 0, ninv = 0;
    float *h_inv = nullptr;
    const float *last_inv = nullptr;
    void *pinned[2] = {nullptr, nullptr};
    cudaEvent_t pin_ev[2] = {nullptr, nullptr};

    alloc_ent *al = nullptr;
    int nal = 0, cal = 0;
    wreg *wg = nullptr;
    int nwg = 0, cwg = 0;

    int deferring = 0, pass_T = 0, pass_pos = 0, in_pass = 0;
    cmdlist cur, prev, gcmd;
    int nids = 0, ids[MAX_IDS];
    int prev_pos = 0, prev_valid = 0;
    cudaGraphExec_t gexec = nullptr;
    int graphs_enabled = 1, capture_failed = 0, fuse = 1;

    tl_cuda_stats st{};
    int reported = 0;
    char first_err[256] = "";  /* the first error, for sync's message */
    int ev0_pending = 0;       /* a deferred decode records its start event when its work launches */
    long fault_at = -1;        /* TL_CUDA_FAULT_AT_PASS: the pass that launches a faulting kernel */

    /* x quantized to Q8_0 for products with Q8_0/Q4_0 weights: T * cols int8, then T * cols / 32
     * fp32 scales. Grown only between launches (grow_qscratch), never inside a capture. */
    char *d_xq = nullptr;
    size_t xqcap = 0;   /* bytes */

    char *d_topk = nullptr;  /* scratch of the two top-k launches, then their result */
    char *h_topk = nullptr;  /* pinned: the result's way to the host */
};

constexpr size_t PIN_BYTES = 32u << 20;

/* Every error counts; the first is kept (sync reports it) and printed once. After one, every
 * sync fails: a fault leaves the buffers (the KV cache) and any timing untrustworthy. */
void note_error(cuctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void note_error(cuctx *c, const char *fmt, ...)
{
    c->st.errors++;
    if (c->reported)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->first_err, sizeof c->first_err, fmt, ap);
    va_end(ap);
    fprintf(stderr, "tokenloop: cuda: %s\n", c->first_err);
    c->reported = 1;
}

int ck(cuctx *c, cudaError_t e, const char *what, int line)
{
    if (e == cudaSuccess)
        return 0;
    note_error(c, "%s (%s, kernels/cuda/backend.cu:%d)", cudaGetErrorString(e), what, line);
    return -1;
}
#define CK(c, call) ck((c), (call), #call, __LINE__)
#define CKL(c) ck((c), cudaGetLastError(), "kernel launch", __LINE__)

void drop_graph(cuctx *c)
{
    if (c->gexec) {
        cudaGraphExecDestroy(c->gexec);
        c->gexec = nullptr;
    }
    c->gcmd.n = 0;
    c->prev_valid = 0;
}

/* ---- allocations: sorted by base, for pointer matching ---- */

int find_alloc(const cuctx *c, const void *p)
{
    int lo = 0, hi = c->nal - 1, best = -1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (c->al[mid].base <= (const char *)p) {
            best = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    if (best >= 0 && (const char *)p < c->al[best].base + c->al[best].bytes)
        return best;
    return -1;
}

/* ---- launches ---- */

dim3 ew_grid(cuctx *c, long long n)
{
    long long b = (n + 255) / 256, cap = (long long)c->nsm * 8;
    return dim3((unsigned)(b < 1 ? 1 : b > cap ? cap : b));
}

/* c->d_xq holds x's quants [T, cols] (int8), then from this offset its scales [T, cols / 32] */
size_t qscratch_scales_at(long long T, long long cols) { return (size_t)((T * cols + 255) / 256 * 256); }

size_t qscratch_bytes(long long T, long long cols)
{
    return qscratch_scales_at(T, cols) + sizeof(float) * (size_t)(T * (cols / 32));
}

/* Q8_0/Q4_0 weights: x quantized per 32 values into c->d_xq, then k_matvec_q over up to 8
 * tokens a launch (a prefill reads the weights once per 8 tokens: not a tuned GEMM). */
void launch_matmul_q(cuctx *c, dptr out, dptr x, const cmd &k, const int *posp)
{
    int rows = (int)k.wr, cols = (int)k.wc, T = k.T, nb = cols / 32;
    if (T <= 0 || rows <= 0)
        return;   /* nothing to launch (a zero grid is a launch error) */
    if (qscratch_bytes(T, cols) > c->xqcap) {   /* cu_matmul grew it; only a bug gets here */
        note_error(c, "quantized matmul: x scratch of %zu bytes for %d x %d, have %zu", qscratch_bytes(T, cols), T,
                   cols, c->xqcap);
        return;
    }
    int8_t *xq = (int8_t *)c->d_xq;
    float *xd = (float *)(c->d_xq + qscratch_scales_at(T, cols));
    long long nblk = (long long)T * nb;
    k_quantize_q8<<<(unsigned)((nblk + 7) / 8), 256, 0, c->s>>>(x, posp, xq, xd, T, cols);
    const uint8_t *Wq = (const uint8_t *)k.w;
    bool q8 = k.b == TL_Q8_0;
    const uint16_t *Wd = (const uint16_t *)(Wq + (size_t)rows * nb * (q8 ? 32 : 16));
    unsigned g = (unsigned)((rows + 7) / 8);
    for (int t0 = 0; t0 < T; t0 += 8) {
        int tn = T - t0 < 8 ? T - t0 : 8;
        const int8_t *xqs = xq + (size_t)t0 * cols;
        const float *xds = xd + (size_t)t0 * nb;
        dptr os = {out.base + (size_t)t0 * rows, out.stride};
        if (q8 && tn == 1)
            k_matvec_q<TL_QCUDA_Q8, 1><<<g, 256, 0, c->s>>>(Wq, Wd, xqs, xds, os, posp, rows, cols, tn);
        else if (q8)
            k_matvec_q<TL_QCUDA_Q8, 8><<<g, 256, 0, c->s>>>(Wq, Wd, xqs, xds, os, posp, rows, cols, tn);
        else if (tn == 1)
            k_matvec_q<TL_QCUDA_Q4, 1><<<g, 256, 0, c->s>>>(Wq, Wd, xqs, xds, os, posp, rows, cols, tn);
        else
            k_matvec_q<TL_QCUDA_Q4, 8><<<g, 256, 0, c->s>>>(Wq, Wd, xqs, xds, os, posp, rows, cols, tn);
        c->st.quant_launches++;
    }
    CKL(c);
}

void launch_matmul(cuctx *c, dptr out, dptr x, const cmd &k, const int *posp)
{
    if (k.b) {
        launch_matmul_q(c, out, x, k, posp);
        return;
    }
    const uint16_t *W = (const uint16_t *)k.w;
    int rows = (int)k.wr, cols = (int)k.wc, T = k.T;
    bool vec = !k.a && cols % 8 == 0 && ((uintptr_t)x.base & 15) == 0 && (x.stride * 4) % 16 == 0;
    if (k.a) { /* an fp32 vector as a [1, n] matrix: only tests do this */
        for (int t0 = 0; t0 < T; t0 += 16) {
            int tn = T - t0 < 16 ? T - t0 : 16;
            dptr xs = {x.base + (size_t)t0 * cols, x.stride}, os = {out.base + (size_t)t0 * rows, out.stride};
            k_matvec_any<float><<<(rows + 7) / 8, 256, 0, c->s>>>((const float *)k.w, xs, os, posp, rows, cols, tn);
        }
        CKL(c);
        return;
    }
    if (T > 16 && !posp && c->blas) {
        /* Prefill: tensor-core GEMM on bf16 copies of the activations, fp32 accumulate. */
        size_t n = (size_t)T * cols;
        if (n > c->xbcap) {
            if (c->d_xb)
                cudaFree(c->d_xb);
            c->d_xb = nullptr;
            c->xbcap = 0;
            if (CK(c, cudaMalloc(&c->d_xb, n * sizeof(uint16_t))))
                return;
            c->xbcap = n;
        }
        k_f32_to_bf16<<<ew_grid(c, (long long)n), 256, 0, c->s>>>(c->d_xb, x.base, n);
        CKL(c);
        float alpha = 1.0f, beta = 0.0f;
        cublasStatus_t st = blas.gemm_ex(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, rows, T, cols, &alpha, W,
                                         CUDA_R_16BF, cols, c->d_xb, CUDA_R_16BF, cols, &beta, out.base,
                                         CUDA_R_32F, rows, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        if (st != CUBLAS_STATUS_SUCCESS)
            note_error(c, "cublasGemmEx failed (status %d, [%d, %d] x %d tokens)", (int)st, rows, cols, T);
        return;
    }
    if (!vec) {
        for (int t0 = 0; t0 < T; t0 += 16) {
            int tn = T - t0 < 16 ? T - t0 : 16;
            dptr xs = {x.base + (size_t)t0 * cols, x.stride}, os = {out.base + (size_t)t0 * rows, out.stride};
            k_matvec_any<uint16_t><<<(rows + 7) / 8, 256, 0, c->s>>>(W, xs, os, posp, rows, cols, tn);
        }
        CKL(c);
        return;
    }
    int target = 4 * c->nsm;
    int rpb = rows / 8 >= target ? 8 : rows / 4 >= target ? 4 : rows / 2 >= target ? 2 : 1;
    /* up to 16 tokens per launch: a prefill of 9..16 tokens streams the weights once */
    for (int t0 = 0; t0 < T; t0 += 16) {
        int tn = T - t0 < 16 ? T - t0 : 16;
        dptr xs = {x.base + (size_t)t0 * cols, x.stride}, os = {out.base + (size_t)t0 * rows, out.stride};
        unsigned g = (unsigned)((rows + rpb - 1) / rpb);
#define MV(R, TT) k_matvec<R, TT><<<g, 256, 0, c->s>>>(W, xs, os, posp, rows, cols, tn)
#define MV_ALL(TT)                                                                                                   \
    switch (rpb) {                                                                                                   \
    case 8: MV(8, TT); break;                                                                                        \
    case 4: MV(4, TT); break;                                                                                        \
    case 2: MV(2, TT); break;                                                                                        \
    default: MV(1, TT); break;                                                                                       \
    }
        if (tn == 1) {
            MV_ALL(1);
            c->st.variants[TL_CUDA_V_MATVEC + (rpb == 8 ? 3 : rpb == 4 ? 2 : rpb == 2 ? 1 : 0)]++;
        } else if (tn <= 8) {
            MV_ALL(8);
        } else {
            MV_ALL(16);
        }
#undef MV_ALL
#undef MV
    }
    CKL(c);
}

/* k.T rows of a Q8_0/Q4_0 table (k.b); ids == NULL: the one id k.id. */
void launch_embed_q(cuctx *c, const cmd &k, dptr x, const int *posp, const int *ids)
{
    const uint8_t *Wq = (const uint8_t *)k.w;
    const uint16_t *Wd = (const uint16_t *)(Wq + (size_t)k.wr * (size_t)(k.wc / 32) * (k.b == TL_Q8_0 ? 32 : 16));
    if (k.b == TL_Q8_0)
        k_embed_q<TL_QCUDA_Q8><<<k.T, 256, 0, c->s>>>(x, posp, Wq, Wd, ids, k.id, (int)k.wr, (int)k.wc);
    else
        k_embed_q<TL_QCUDA_Q4><<<k.T, 256, 0, c->s>>>(x, posp, Wq, Wd, ids, k.id, (int)k.wr, (int)k.wc);
}

/* graph: pointers from the allocation table plus per-position strides, pos from the device.
 * Otherwise: the pointers as passed, pos from the host. */
void exec_cmd(cuctx *c, const cmd &k, bool graph)
{
    dptr P[MAXP];
    for (int j = 0; j < k.np; j++) {
        if (graph && k.abase[j])
            P[j] = dptr{(float *)k.abase[j] + k.goff[j], k.rel[j] ? k.W[j] : 0};
        else
            P[j] = dptr{k.p[j], 0};
    }
    const int *posp = graph ? c->d_pos : nullptr;
    switch (k.kind) {
    case OP_EMBED: /* a: fp32 table, b: its quantized dtype (else 0) */
        if (k.b)
            launch_embed_q(c, k, P[0], posp, graph ? c->d_ids + k.slot : nullptr);
        else if (k.a)
            k_embed<float><<<k.T, 256, 0, c->s>>>(P[0], posp, (const float *)k.w,
                                                  graph ? c->d_ids + k.slot : nullptr, k.id, (int)k.wr, (int)k.wc);
        else
            k_embed<uint16_t><<<k.T, 256, 0, c->s>>>(P[0], posp, (const uint16_t *)k.w,
                                                     graph ? c->d_ids + k.slot : nullptr, k.id, (int)k.wr, (int)k.wc);
        break;
    case OP_RMSNORM: /* a = n */
        k_rmsnorm<<<k.T, k.a >= 1024 ? 1024 : 256, 0, c->s>>>(P[0], P[1], posp, (const float *)k.w, k.a, k.f);
        break;
    case OP_MATMUL:
        launch_matmul(c, P[0], P[1], k, posp);
        return;
    case OP_ROPE: /* a = n_heads, b = head_dim */
        k_rope<<<dim3(k.a, k.T), 64, 0, c->s>>>(P[0], posp, k.pos, k.a, k.b, (const float *)k.w);
        break;
    case OP_ATTN: { /* a = n_heads, b = n_kv, c = head_dim */
        if (k.c > TL_CUDA_MAX_HEAD_DIM) {  /* accepts() refuses such models; never read past sm_o */
            note_error(c, "attention: head_dim %d is more than %d", k.c, TL_CUDA_MAX_HEAD_DIM);
            return;
        }
        dim3 g(k.a, k.T);
        float scale = 1.0f / sqrtf((float)k.c);
        int D = (k.c + 31) / 32;
        if (D <= 1)
            k_attention<1><<<g, 256, 0, c->s>>>(P[0], P[1], P[2], P[3], posp, k.pos, k.a, k.b, k.c, scale);
        else if (D <= 2)
            k_attention<2><<<g, 256, 0, c->s>>>(P[0], P[1], P[2], P[3], posp, k.pos, k.a, k.b, k.c, scale);
        else if (D <= 4)
            k_attention<4><<<g, 256, 0, c->s>>>(P[0], P[1], P[2], P[3], posp, k.pos, k.a, k.b, k.c, scale);
        else
            k_attention<8><<<g, 256, 0, c->s>>>(P[0], P[1], P[2], P[3], posp, k.pos, k.a, k.b, k.c, scale);
        break;
    }
    case OP_SWIGLU:
        k_swiglu<<<ew_grid(c, k.a), 256, 0, c->s>>>(P[0], P[1], posp, k.a);
        break;
    case OP_ADD:
        k_add<<<ew_grid(c, k.a), 256, 0, c->s>>>(P[0], P[1], posp, k.a);
        break;
    }
    CKL(c);
}

dptr arg(const cmd &k, int j, bool graph)
{
    if (graph && k.abase[j])
        return dptr{(float *)k.abase[j] + k.goff[j], k.rel[j] ? k.W[j] : 0};
    return dptr{k.p[j], 0};
}

bool same_dptr(dptr a, dptr b) { return a.base == b.base && a.stride == b.stride; }

/* A bf16 matrix-vector product that may share a launch. Q8_0/Q4_0 products (k.b) never do:
 * each runs on its own (x quantized, then k_matvec_q), so gate/up/SwiGLU stay three launches
 * and q/k/v three pairs of them. Simpler than quantized segments, and obviously the same
 * arithmetic as an unfused step. */
bool mv_ok(const cmd &k, bool graph)
{
    return k.kind == OP_MATMUL && k.T == 1 && !k.a && !k.b && k.wc % 8 == 0 &&
           ((uintptr_t)arg(k, 1, graph).base & 15) == 0;
}

int pick_rpb(cuctx *c, long long rows)
{
    long long target = 4LL * c->nsm;
    return rows / 8 >= target ? 8 : rows / 4 >= target ? 4 : rows / 2 >= target ? 2 : 1;
}

/* Runs a recorded decode step. Unless TL_CUDA_FUSE=0, neighbours share a launch: q/k/v (one
 * matrix-vector launch), gate/up/SwiGLU, a residual add and the RMSNorm of its result, the two
 * RoPEs. Launches are what a decode step has too many of. */
void exec_list(cuctx *c, const cmdlist &L, bool graph)
{
    const int *posp = graph ? c->d_pos : nullptr;
    for (int i = 0; i < L.n;) {
        const cmd &k = L.v[i];
        if (c->fuse && mv_ok(k, graph) && i + 2 < L.n && mv_ok(L.v[i + 1], graph) && L.v[i + 2].kind == OP_SWIGLU) {
            /* gate = x . Wg^T; up = x . Wu^T; gate = silu(gate) * up */
            const cmd &u = L.v[i + 1], &sw = L.v[i + 2];
            dptr x = arg(k, 1, graph), g = arg(k, 0, graph), up = arg(u, 0, graph);
            if (u.wr == k.wr && u.wc == k.wc && sw.a == k.wr && same_dptr(arg(u, 1, graph), x) &&
                same_dptr(arg(sw, 0, graph), g) && same_dptr(arg(sw, 1, graph), up) && g.base != x.base &&
                up.base != x.base && g.base != up.base) {
                int rows = (int)k.wr, cols = (int)k.wc, target = 4 * c->nsm;
                int R = rows / 4 >= target ? 4 : rows / 2 >= target ? 2 : 1;
                unsigned blocks = (unsigned)((rows + R - 1) / R);
                const uint16_t *Wg = (const uint16_t *)k.w, *Wu = (const uint16_t *)u.w;
                c->st.variants[TL_CUDA_V_GATE_UP + (R == 4 ? 2 : R == 2 ? 1 : 0)]++;
                if (R == 4)
                    k_gate_up_swiglu<4><<<blocks, 256, 0, c->s>>>(Wg, Wu, x, g, up, posp, rows, cols);
                else if (R == 2)
                    k_gate_up_swiglu<2><<<blocks, 256, 0, c->s>>>(Wg, Wu, x, g, up, posp, rows, cols);
                else
                    k_gate_up_swiglu<1><<<blocks, 256, 0, c->s>>>(Wg, Wu, x, g, up, posp, rows, cols);
                CKL(c);
                i += 3;
                continue;
            }
        }
        if (c->fuse && mv_ok(k, graph)) {
            dptr x = arg(k, 1, graph);
            int n = 1;
            while (n < 3 && i + n < L.n && mv_ok(L.v[i + n], graph) && L.v[i + n].wc == k.wc &&
                   same_dptr(arg(L.v[i + n], 1, graph), x))
                n++;
            bool alias = false;
            for (int m = 0; m < n; m++)
                alias |= arg(L.v[i + m], 0, graph).base == x.base;
            if (n > 1 && !alias) {
                long long total = 0;
                for (int m = 0; m < n; m++)
                    total += L.v[i + m].wr;
                int rpb = pick_rpb(c, total);
                mv_segs sg;
                memset(&sg, 0, sizeof sg);
                sg.n = n;
                int blocks = 0;
                for (int m = 0; m < n; m++) {
                    sg.W[m] = (const uint16_t *)L.v[i + m].w;
                    sg.out[m] = arg(L.v[i + m], 0, graph);
                    sg.rows[m] = (int)L.v[i + m].wr;
                    sg.first[m] = blocks;
                    blocks += (sg.rows[m] + rpb - 1) / rpb;
                }
                int cols = (int)k.wc;
                c->st.variants[TL_CUDA_V_MULTI + (rpb == 8 ? 3 : rpb == 4 ? 2 : rpb == 2 ? 1 : 0)]++;
                switch (rpb) {
                case 8: k_matvec_multi<8><<<blocks, 256, 0, c->s>>>(sg, x, posp, cols); break;
                case 4: k_matvec_multi<4><<<blocks, 256, 0, c->s>>>(sg, x, posp, cols); break;
                case 2: k_matvec_multi<2><<<blocks, 256, 0, c->s>>>(sg, x, posp, cols); break;
                default: k_matvec_multi<1><<<blocks, 256, 0, c->s>>>(sg, x, posp, cols); break;
                }
                CKL(c);
                i += n;
                continue;
            }
        }
        if (c->fuse && k.kind == OP_ADD && i + 1 < L.n) {
            const cmd &r = L.v[i + 1];
            if (r.kind == OP_RMSNORM && r.T == 1 && r.a == k.a && same_dptr(arg(r, 1, graph), arg(k, 0, graph))) {
                k_add_rmsnorm<<<1, k.a >= 1024 ? 1024 : 256, 0, c->s>>>(arg(k, 0, graph), arg(k, 1, graph),
                                                                       arg(r, 0, graph), posp, (const float *)r.w,
                                                                       r.a, r.f);
                CKL(c);
                i += 2;
                continue;
            }
        }
        if (c->fuse && k.kind == OP_ROPE && k.T == 1 && i + 1 < L.n) {
            const cmd &r = L.v[i + 1];
            /* distinct tensors only: blocks of one launch run in any order */
            bool apart = (k.abase[0] && r.abase[0] && k.abase[0] != r.abase[0]) ||
                         k.p[0] + (size_t)k.a * k.b <= r.p[0] || r.p[0] + (size_t)r.a * r.b <= k.p[0];
            if (r.kind == OP_ROPE && r.T == 1 && r.b == k.b && r.w == k.w && r.pos == k.pos && apart &&
                (!graph || k.abase[0] != r.abase[0] || k.rel[0] == r.rel[0])) {
                k_rope2<<<k.a + r.a, 64, 0, c->s>>>(arg(k, 0, graph), k.a, arg(r, 0, graph), posp, k.pos, k.b,
                                                     (const float *)k.w);
                CKL(c);
                i += 2;
                continue;
            }
        }
        exec_cmd(c, k, graph);
        i++;
    }
}

/* The pass's start event, recorded when its first work is launched rather than at begin_pass:
 * a decode step's operations are only recorded until end_pass, and that host time is no
 * device time. */
void start_timer(cuctx *c)
{
    if (!c->ev0_pending)
        return;
    c->ev0_pending = 0;
    CK(c, cudaEventRecord(c->ev0, c->s));
}

/* Runs what a deferred pass recorded so far, op by op; the rest of the pass runs eagerly. */
void flush(cuctx *c)
{
    if (!c->deferring)
        return;
    c->deferring = 0;
    start_timer(c);
    exec_list(c, c->cur, false);
    c->cur.n = 0;
    c->prev_valid = 0;
}

void submit(cuctx *c, cmd &k)
{
    if (c->deferring && (k.T != 1 || ((k.kind == OP_ROPE || k.kind == OP_ATTN) && k.pos != c->pass_pos)))
        flush(c); /* the graph reads the pass's position; anything else runs as called */
    if (c->deferring) {
        for (int j = 0; j < k.np; j++) {
            int a = find_alloc(c, k.p[j]);
            k.abase[j] = a >= 0 ? c->al[a].base : nullptr;
            long long byteoff = a >= 0 ? (char *)k.p[j] - c->al[a].base : 0;
            if (a >= 0 && byteoff % sizeof(float)) {  /* odd alignment: never captured */
                flush(c);
                exec_cmd(c, k, false);
                return;
            }
            k.off[j] = byteoff / (long long)sizeof(float);
        }
        if (c->cur.push(k) == 0)
            return;
        flush(c);
    }
    exec_cmd(c, k, false);
}

bool same_args(const cmd &x, const cmd &y)
{
    return x.kind == y.kind && x.np == y.np && x.T == y.T && x.a == y.a && x.b == y.b && x.c == y.c &&
           x.slot == y.slot && !memcmp(&x.f, &y.f, sizeof x.f) && x.w == y.w && x.wr == y.wr && x.wc == y.wc;
}

/* Classifies every pointer from two eager steps at different positions; false if they disagree. */
bool derive(cmdlist &prev, int pp, cmdlist &cur, int cp)
{
    if (prev.n != cur.n || pp == cp || cur.n == 0)
        return false;
    for (int i = 0; i < cur.n; i++) {
        const cmd &x = prev.v[i];
        cmd &y = cur.v[i];
        if (!same_args(x, y))
            return false;
        for (int j = 0; j < y.np; j++) {
            if (x.abase[j] != y.abase[j])
                return false;
            if (!y.abase[j]) {
                if (x.p[j] != y.p[j])
                    return false;
                y.rel[j] = 0;
                y.goff[j] = 0;
            } else if (x.off[j] == y.off[j]) {
                y.rel[j] = 0;
                y.goff[j] = y.off[j];
            } else if (x.off[j] - pp * x.W[j] == y.off[j] - cp * y.W[j] && y.off[j] - cp * y.W[j] >= 0) {
                y.rel[j] = 1;
                y.goff[j] = y.off[j] - cp * y.W[j];
            } else {
                return false;
            }
        }
    }
    return true;
}

bool matches_graph(const cmdlist &g, const cmdlist &cur, int cp)
{
    if (g.n != cur.n)
        return false;
    for (int i = 0; i < cur.n; i++) {
        const cmd &x = g.v[i], &y = cur.v[i];
        if (!same_args(x, y))
            return false;
        for (int j = 0; j < y.np; j++) {
            if (x.abase[j] != y.abase[j])
                return false;
            if (!y.abase[j] ? x.p[j] != y.p[j] : y.off[j] - (x.rel[j] ? cp * y.W[j] : 0) != x.goff[j])
                return false;
        }
    }
    return true;
}

void set_step(cuctx *c)
{
    step_ids s;
    memset(&s, 0, sizeof s);
    memcpy(s.v, c->ids, sizeof(int) * c->nids);
    k_set_step<<<1, 1, 0, c->s>>>(c->d_pos, c->pass_pos, c->d_ids, s, c->nids);
    CKL(c);
}

bool capture(cuctx *c)
{
    cudaGraph_t g = nullptr;
    if (cudaStreamBeginCapture(c->s, cudaStreamCaptureModeThreadLocal) != cudaSuccess)
        return false;
    exec_list(c, c->cur, true);
    cudaError_t e = cudaStreamEndCapture(c->s, &g);
    if (e != cudaSuccess || !g) {
        cudaGetLastError();
        return false;
    }
    e = cudaGraphInstantiate(&c->gexec, g, 0);
    cudaGraphDestroy(g);
    if (e != cudaSuccess) {
        cudaGetLastError();
        c->gexec = nullptr;
        return false;
    }
    return true;
}

void end_deferred(cuctx *c)
{
    c->deferring = 0;
    start_timer(c);
    set_step(c);
    int pos = c->pass_pos;
    bool done = false;
    if (c->graphs_enabled && !c->capture_failed) {
        if (c->gexec && matches_graph(c->gcmd, c->cur, pos)) {
            CK(c, cudaGraphLaunch(c->gexec, c->s));
            c->st.replays++;
            done = true;
        } else {
            if (c->gexec) {
                cudaGraphExecDestroy(c->gexec);
                c->gexec = nullptr;
            }
            if (c->prev_valid && derive(c->prev, c->prev_pos, c->cur, pos)) {
                if (capture(c)) {
                    CK(c, cudaGraphLaunch(c->gexec, c->s));
                    c->st.captures++;
                    c->gcmd.n = 0;
                    for (int i = 0; i < c->cur.n; i++)
                        c->gcmd.push(c->cur.v[i]);
                    done = true;
                } else {
                    c->capture_failed = 1;
                    fprintf(stderr, "tokenloop: cuda: graph capture failed; decode steps run op by op\n");
                }
            }
        }
    }
    if (!done) {
        exec_list(c, c->cur, false);
        c->st.eager_decode++;
    }
    cmdlist t = c->prev;
    c->prev = c->cur;
    c->cur = t;
    c->cur.n = 0;
    c->prev_pos = pos;
    c->prev_valid = 1;
}

/* ---- the ops table ---- */

void cu_destroy(void *ctx);

void *cu_create(int threads, tl_error *err)
{
    (void)threads;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        tl_error_set(err, "cuda: no CUDA device (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        return nullptr;
    }
    cudaDeviceProp prop;
    memset(&prop, 0, sizeof prop);
    if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess || prop.major < 8) {
        tl_error_set(err, "cuda: device 0 (%s) is sm_%d%d; this build needs sm_80 or newer", prop.name,
                     prop.major, prop.minor);
        return nullptr;
    }
    cuctx *c = new (std::nothrow) cuctx;
    if (!c) {
        tl_error_set(err, "cuda: out of memory");
        return nullptr;
    }
    c->nsm = prop.multiProcessorCount;
    const char *g = getenv("TL_CUDA_GRAPH");
    c->graphs_enabled = !(g && !strcmp(g, "0"));
    const char *f = getenv("TL_CUDA_FUSE");
    c->fuse = !(f && !strcmp(f, "0"));
    const char *fa = getenv("TL_CUDA_FAULT_AT_PASS");
    c->fault_at = fa && *fa ? strtol(fa, nullptr, 10) : -1;
    if (cudaSetDevice(0) != cudaSuccess || cudaStreamCreateWithFlags(&c->s, cudaStreamNonBlocking) != cudaSuccess ||
        cudaEventCreate(&c->ev0) != cudaSuccess || cudaEventCreate(&c->ev1) != cudaSuccess ||
        cudaEventCreateWithFlags(&c->pin_ev[0], cudaEventDisableTiming) != cudaSuccess ||
        cudaEventCreateWithFlags(&c->pin_ev[1], cudaEventDisableTiming) != cudaSuccess ||
        cudaMalloc(&c->d_pos, sizeof(int) * (1 + MAX_IDS)) != cudaSuccess) {
        tl_error_set(err, "cuda: cannot set up device 0: %s", cudaGetErrorString(cudaGetLastError()));
        cu_destroy(c);
        return nullptr;
    }
    c->d_ids = c->d_pos + 1;
    cudaMemsetAsync(c->d_pos, 0, sizeof(int) * (1 + MAX_IDS), c->s);
    char why[512];
    if (tl_cuda_load_blas(why, sizeof why)) {
        tl_error_set(err, "cuda: %s", why);
        cu_destroy(c);
        return nullptr;
    }
    if (blas.create(&c->blas) != CUBLAS_STATUS_SUCCESS) {
        tl_error_set(err, "cuda: cannot create a cuBLAS handle");
        c->blas = nullptr;
        cu_destroy(c);
        return nullptr;
    }
    blas.set_stream(c->blas, c->s);
    return c;
}

void cu_destroy(void *ctx)
{
    cuctx *c = (cuctx *)ctx;
    if (!c)
        return;
    const char *v = getenv("TL_CUDA_STATS");
    if (v && !strcmp(v, "1"))
        fprintf(stderr,
                "tokenloop: cuda: %ld passes; decode steps: %ld op by op, %ld graph captures, %ld graph replays; "
                "%ld errors; graphs %s, fused launches %s\n",
                c->st.passes, c->st.eager_decode, c->st.captures, c->st.replays, c->st.errors,
                c->graphs_enabled && !c->capture_failed ? "on" : "off", c->fuse ? "on" : "off");
    if (c->s)
        cudaStreamSynchronize(c->s);
    if (c->gexec)
        cudaGraphExecDestroy(c->gexec);
    for (int i = 0; i < c->nal; i++)
        cudaFree(c->al[i].base);
    for (int i = 0; i < c->nwg; i++)
        cudaFree(c->wg[i].dev);
    free(c->al);
    free(c->wg);
    free(c->cur.v);
    free(c->prev.v);
    free(c->gcmd.v);
    free(c->h_inv);
    cudaFree(c->d_pos);
    cudaFree(c->d_topk);
    if (c->h_topk)
        cudaFreeHost(c->h_topk);
    cudaFree(c->d_idsbuf);
    cudaFree(c->d_xb);
    cudaFree(c->d_xq);
    cudaFree(c->d_inv);
    for (int i = 0; i < 2; i++) {
        if (c->pinned[i])
            cudaFreeHost(c->pinned[i]);
        if (c->pin_ev[i])
            cudaEventDestroy(c->pin_ev[i]);
    }
    if (c->ev0)
        cudaEventDestroy(c->ev0);
    if (c->ev1)
        cudaEventDestroy(c->ev1);
    if (c->blas)
        blas.destroy(c->blas);
    if (c->s)
        cudaStreamDestroy(c->s);
    delete c;
}

float *cu_alloc(void *ctx, size_t n)
{
    cuctx *c = (cuctx *)ctx;
    if (c->nal == c->cal) {
        int nc = c->cal ? 2 * c->cal : 64;
        alloc_ent *na = (alloc_ent *)realloc(c->al, sizeof(alloc_ent) * nc);
        if (!na)
            return nullptr;
        c->al = na;
        c->cal = nc;
    }
    size_t bytes = (n ? n : 1) * sizeof(float);
    char *p = nullptr;
    if (CK(c, cudaMalloc(&p, bytes)))
        return nullptr;
    if (CK(c, cudaMemsetAsync(p, 0, bytes, c->s))) {
        cudaFree(p);
        return nullptr;
    }
    int i = c->nal;
    while (i > 0 && c->al[i - 1].base > p) {
        c->al[i] = c->al[i - 1];
        i--;
    }
    c->al[i] = alloc_ent{p, bytes};
    c->nal++;
    return (float *)p;
}

void cu_release(void *ctx, float *buf)
{
    cuctx *c = (cuctx *)ctx;
    if (!buf)
        return;
    flush(c);
    int a = find_alloc(c, buf);
    if (a < 0 || c->al[a].base != (char *)buf)
        return;
    cudaStreamSynchronize(c->s);
    drop_graph(c);
    cudaFree(buf);
    memmove(c->al + a, c->al + a + 1, sizeof(alloc_ent) * (c->nal - a - 1));
    c->nal--;
}

void cu_to_host(void *ctx, float *host, const float *buf, size_t n)
{
    cuctx *c = (cuctx *)ctx;
    flush(c);
    size_t bytes = n * sizeof(float);
    if (c->pinned[0] && bytes <= PIN_BYTES) {
        /* through pinned memory: the logits of every step come this way, at full PCIe speed */
        CK(c, cudaMemcpyAsync(c->pinned[0], buf, bytes, cudaMemcpyDeviceToHost, c->s));
        CK(c, cudaStreamSynchronize(c->s));
        memcpy(host, c->pinned[0], bytes);
        return;
    }
    CK(c, cudaMemcpyAsync(host, buf, bytes, cudaMemcpyDeviceToHost, c->s));
    CK(c, cudaStreamSynchronize(c->s));
}

uint16_t f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

bool is_quant(tl_dtype t) { return t == TL_Q8_0 || t == TL_Q4_0; }

/* Device bytes of an uploaded weight: fp32 vectors, Q8_0/Q4_0 blocks as in the file, bf16. */
long long device_bytes(int dtype, long long rows, long long cols)
{
    tl_weight w;
    memset(&w, 0, sizeof w);
    w.dtype = (tl_dtype)dtype;
    w.rows = rows;
    w.cols = cols;
    if (rows == 1)
        return cols * (long long)sizeof(float);
    return is_quant(w.dtype) ? (long long)tl_weight_bytes(&w) : rows * cols * (long long)sizeof(uint16_t);
}

/* The dtype a weight has on the device: vectors fp32, Q8_0/Q4_0 matrices as they are (repacked,
 * qkernels.cuh), every other matrix bf16. */
tl_dtype device_dtype(const tl_weight *host)
{
    return host->rows == 1 ? TL_F32 : is_quant(host->dtype) ? host->dtype : TL_BF16;
}

/* A Q8_0/Q4_0 matrix into d (rows * tl_dtype_row_bytes bytes) in the layout of qkernels.cuh:
 * every block's quant bytes, then every block's f16 scale, through the two pinned buffers. */
cudaError_t upload_quant(cuctx *c, const tl_weight *host, char *d)
{
    const size_t bb = tl_dtype_block_bytes(host->dtype), qb = host->dtype == TL_Q8_0 ? 32 : 16;
    const size_t nblk = (size_t)host->rows * (size_t)(host->cols / 32);
    const char *src = (const char *)host->data;
    int bi = 0;
    for (int part = 0; part < 2; part++) {   /* 0: the quants, 1: the scales */
        size_t esz = part == 0 ? qb : sizeof(uint16_t), chunk = PIN_BYTES / esz;
        char *dst = part == 0 ? d : d + nblk * qb;
        for (size_t i0 = 0; i0 < nblk; i0 += chunk, bi ^= 1) {
            size_t m = nblk - i0 < chunk ? nblk - i0 : chunk;
            cudaEventSynchronize(c->pin_ev[bi]);
            char *st = (char *)c->pinned[bi];
            for (size_t k = 0; k < m; k++)   /* a block: the f16 scale, then the quant bytes */
                memcpy(st + k * esz, src + (i0 + k) * bb + (part == 0 ? 2 : 0), esz);
            cudaMemcpyAsync(dst + i0 * esz, st, m * esz, cudaMemcpyHostToDevice, c->s);
            cudaEventRecord(c->pin_ev[bi], c->s);
        }
    }
    cudaError_t e = cudaStreamSynchronize(c->s);
    return e == cudaSuccess ? cudaGetLastError() : e;
}

int cu_upload(void *ctx, const tl_weight *host, tl_weight *dev, tl_error *err)
{
    cuctx *c = (cuctx *)ctx;
    if (host->dtype != TL_F32 && host->dtype != TL_F16 && host->dtype != TL_BF16 && !is_quant(host->dtype) &&
        !tl_dtype_is_kquant(host->dtype))
        return tl_error_set(err, "cuda: %s weights [%lld, %lld]: no CUDA kernels for this dtype; use --device cpu",
                            tl_dtype_name(host->dtype), (long long)host->rows, (long long)host->cols);
    bool quant = host->rows != 1 && is_quant(host->dtype);
    if (quant && (host->cols % 32 || host->cols <= 0))
        return tl_error_set(err, "cuda: %s weights [%lld, %lld]: width is not a multiple of 32",
                            tl_dtype_name(host->dtype), (long long)host->rows, (long long)host->cols);
    for (int i = 0; i < c->nwg; i++) {
        wreg &r = c->wg[i];
        if (r.host == host->data && r.dtype == (int)host->dtype && r.rows == host->rows && r.cols == host->cols) {
            r.refs++; /* a tied lm_head shares the embedding's copy */
            *dev = *host;
            dev->data = r.dev;
            dev->dtype = device_dtype(host);
            return 0;
        }
    }
    if (c->nwg == c->cwg) {
        int nc = c->cwg ? 2 * c->cwg : 64;
        wreg *nw = (wreg *)realloc(c->wg, sizeof(wreg) * nc);
        if (!nw)
            return tl_error_set(err, "cuda: out of host memory");
        c->wg = nw;
        c->cwg = nc;
    }
    /* Matrices become bf16; vectors (norm weights, RoPE frequencies) stay fp32: they are tiny
     * and the rotation angle pos * inv_freq needs every bit at long positions. Q8_0/Q4_0
     * matrices keep their blocks (upload_quant), exactly their bytes. */
    bool vec = host->rows == 1;
    size_t n = (size_t)host->rows * (size_t)host->cols, esz = vec ? sizeof(float) : sizeof(uint16_t);
    size_t bytes = quant ? (size_t)tl_weight_bytes(host) : n * esz;
    char *d = nullptr;
    cudaError_t e = cudaMalloc(&d, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return tl_error_set(err, "cuda: cannot allocate %zu MiB of device memory for a weight [%lld, %lld]: %s",
                            bytes >> 20, (long long)host->rows, (long long)host->cols, cudaGetErrorString(e));
    }
    for (int i = 0; i < 2; i++)
        if (!c->pinned[i] && cudaMallocHost(&c->pinned[i], PIN_BYTES) != cudaSuccess) {
            cudaFree(d);
            return tl_error_set(err, "cuda: cannot allocate pinned staging memory");
        }
    if (quant) {
        e = upload_quant(c, host, d);
        if (e != cudaSuccess) {
            cudaFree(d);
            return tl_error_set(err, "cuda: uploading a %s weight [%lld, %lld]: %s", tl_dtype_name(host->dtype),
                                (long long)host->rows, (long long)host->cols, cudaGetErrorString(e));
        }
        c->wg[c->nwg++] = wreg{host->data, (int)host->dtype, host->rows, host->cols, d, 1};
        c->st.weight_bytes += device_bytes(host->dtype, host->rows, host->cols);
        *dev = *host;
        dev->data = d;
        dev->dtype = host->dtype;
        return 0;
    }
    /* Two pinned buffers: the host converts into one while the other is in flight. */
    size_t chunk = PIN_BYTES / esz;
    int bi = 0;
    for (size_t i0 = 0; i0 < n; i0 += chunk, bi ^= 1) {
        size_t m = n - i0 < chunk ? n - i0 : chunk;
        cudaEventSynchronize(c->pin_ev[bi]);
        if (vec) {
            float *st = (float *)c->pinned[bi];
            for (size_t k = 0; k < m; k++)
                st[k] = tl_cpu_weight_at(host, (int64_t)(i0 + k));
        } else {
            uint16_t *st = (uint16_t *)c->pinned[bi];
            if (host->dtype == TL_BF16) {
                memcpy(st, (const uint16_t *)host->data + i0, m * sizeof(uint16_t));
            } else if (host->dtype == TL_F16) {
                const uint16_t *src = (const uint16_t *)host->data + i0;
                for (size_t k = 0; k < m; k++)
                    st[k] = f32_to_bf16(tl_cpu_f16_to_f32(src[k]));
            } else if (tl_dtype_is_kquant(host->dtype)) {   /* no CUDA kernels for their blocks: widened */
                float f[TL_QK_K];   /* (chunks and rows are whole super-blocks of 256) */
                for (size_t k = 0; k < m; k += TL_QK_K) {
                    tl_dequantize_row(host->dtype, (const char *)host->data +
                                      (i0 + k) / TL_QK_K * tl_dtype_block_bytes(host->dtype), f, TL_QK_K);
                    for (int j = 0; j < TL_QK_K; j++)
                        st[k + j] = f32_to_bf16(f[j]);
                }
            } else {
                const float *src = (const float *)host->data + i0;
                for (size_t k = 0; k < m; k++)
                    st[k] = f32_to_bf16(src[k]);
            }
        }
        cudaMemcpyAsync(d + i0 * esz, c->pinned[bi], m * esz, cudaMemcpyHostToDevice, c->s);
        cudaEventRecord(c->pin_ev[bi], c->s);
    }
    e = cudaStreamSynchronize(c->s);
    if (e == cudaSuccess)
        e = cudaGetLastError();
    if (e != cudaSuccess) {
        cudaFree(d);
        return tl_error_set(err, "cuda: uploading a weight [%lld, %lld]: %s", (long long)host->rows,
                            (long long)host->cols, cudaGetErrorString(e));
    }
    c->wg[c->nwg++] = wreg{host->data, (int)host->dtype, host->rows, host->cols, d, 1};
    c->st.weight_bytes += device_bytes(host->dtype, host->rows, host->cols);
    *dev = *host;
    dev->data = d;
    dev->dtype = vec ? TL_F32 : TL_BF16;
    return 0;
}

void cu_unload(void *ctx, tl_weight *dev)
{
    cuctx *c = (cuctx *)ctx;
    for (int i = 0; i < c->nwg; i++) {
        if (c->wg[i].dev != dev->data)
            continue;
        if (--c->wg[i].refs == 0) {
            flush(c);
            cudaStreamSynchronize(c->s);
            drop_graph(c);
            if (c->wg[i].dev == (const void *)c->last_inv)
                c->last_inv = nullptr;
            c->st.weight_bytes -= device_bytes(c->wg[i].dtype, c->wg[i].rows, c->wg[i].cols);
            cudaFree(c->wg[i].dev);
            c->wg[i] = c->wg[--c->nwg];
        }
        break;
    }
    dev->data = nullptr;
}

cmd new_cmd(int kind, int T)
{
    cmd k;
    memset(&k, 0, sizeof k);
    k.kind = kind;
    k.T = T;
    return k;
}

void addp(cmd &k, float *p, long long W)
{
    k.p[k.np] = p;
    k.W[k.np] = W;
    k.np++;
}

void cu_embed(void *ctx, float *x, const tl_weight *table, const int *ids, int T)
{
    cuctx *c = (cuctx *)ctx;
    if (T <= 0)
        return;
    cmd k = new_cmd(OP_EMBED, T);
    addp(k, x, table->cols);
    k.a = table->dtype == TL_F32;
    k.b = is_quant(table->dtype) ? (int)table->dtype : 0;
    k.w = table->data;
    k.wr = table->rows;
    k.wc = table->cols;
    if (T == 1) {
        k.id = ids[0];
        if (c->deferring) {
            if (c->nids == MAX_IDS)
                flush(c);
            else {
                k.slot = c->nids;
                c->ids[c->nids++] = ids[0];
            }
        }
        submit(c, k);
        return;
    }
    flush(c);
    if ((size_t)T > c->idscap) {
        cudaFree(c->d_idsbuf);
        c->d_idsbuf = nullptr;
        c->idscap = 0;
        if (CK(c, cudaMalloc(&c->d_idsbuf, sizeof(int) * T)))
            return;
        c->idscap = T;
    }
    /* From pageable memory the call returns once ids is staged, so the caller may reuse it. */
    CK(c, cudaMemcpyAsync(c->d_idsbuf, ids, sizeof(int) * T, cudaMemcpyHostToDevice, c->s));
    if (k.b)
        launch_embed_q(c, k, dptr{x, 0}, nullptr, c->d_idsbuf);
    else if (table->dtype == TL_F32)
        k_embed<float><<<T, 256, 0, c->s>>>(dptr{x, 0}, nullptr, (const float *)table->data, c->d_idsbuf, 0,
                                            (int)table->rows, (int)table->cols);
    else
        k_embed<uint16_t><<<T, 256, 0, c->s>>>(dptr{x, 0}, nullptr, (const uint16_t *)table->data, c->d_idsbuf, 0,
                                               (int)table->rows, (int)table->cols);
    CKL(c);
}

void cu_rmsnorm(void *ctx, float *out, const float *x, const tl_weight *w, int T, int n, float eps)
{
    cmd k = new_cmd(OP_RMSNORM, T);
    addp(k, out, n);
    addp(k, (float *)x, n);
    k.w = w->data;
    k.a = n;
    k.f = eps;
    submit((cuctx *)ctx, k);
}

/* The quantized products' x scratch holds T tokens of cols. Grown here, when an operation is
 * recorded, never while a graph is captured (cudaMalloc is not allowed in a capture): anything
 * recorded so far runs first, the stream drains, and the captured graph, which holds the old
 * pointer, is dropped (captured again two steps later). */
void grow_qscratch(cuctx *c, int T, long long cols)
{
    size_t need = qscratch_bytes(T, cols);
    if (need <= c->xqcap)
        return;
    flush(c);
    cudaStreamSynchronize(c->s);
    drop_graph(c);
    cudaFree(c->d_xq);
    c->d_xq = nullptr;
    c->xqcap = 0;
    if (CK(c, cudaMalloc(&c->d_xq, need)))
        return;
    c->xqcap = need;
}

void cu_matmul(void *ctx, float *out, const float *x, const tl_weight *W, int T)
{
    cuctx *c = (cuctx *)ctx;
    cmd k = new_cmd(OP_MATMUL, T);
    addp(k, out, W->rows);
    addp(k, (float *)x, W->cols);
    k.a = W->dtype == TL_F32;
    k.w = W->data;
    k.wr = W->rows;
    k.wc = W->cols;
    if (is_quant(W->dtype)) {
        k.b = (int)W->dtype;
        grow_qscratch(c, T, W->cols);
    }
    submit(c, k);
}

/* inv_freq is normally the engine's uploaded copy (device memory, fp32); a host array is
 * copied to the device once and kept, so the graph can read it at every replay. */
const float *device_inv_freq(cuctx *c, const float *inv, int half)
{
    if (inv == c->last_inv)
        return inv;
    for (int i = 0; i < c->nwg; i++)
        if (c->wg[i].dev == (const void *)inv) {
            c->last_inv = inv;
            return inv;
        }
    if (find_alloc(c, inv) >= 0)
        return inv;
    if (half != c->ninv || memcmp(c->h_inv, inv, sizeof(float) * half)) {
        flush(c);
        cudaStreamSynchronize(c->s);
        if (half > c->invcap) {
            drop_graph(c);
            cudaFree(c->d_inv);
            c->d_inv = nullptr;
            free(c->h_inv);
            c->h_inv = (float *)malloc(sizeof(float) * half);
            c->invcap = 0;
            c->ninv = 0;
            if (!c->h_inv || CK(c, cudaMalloc(&c->d_inv, sizeof(float) * half)))
                return nullptr;
            c->invcap = half;
        }
        /* on the stream: a pageable copy may return before its DMA lands */
        if (CK(c, cudaMemcpyAsync(c->d_inv, inv, sizeof(float) * half, cudaMemcpyHostToDevice, c->s)))
            return nullptr;
        memcpy(c->h_inv, inv, sizeof(float) * half);
        c->ninv = half;
    }
    return c->d_inv;
}

void cu_rope(void *ctx, float *x, int T, int n_heads, int head_dim, int pos0, const float *inv_freq)
{
    cuctx *c = (cuctx *)ctx;
    int half = head_dim / 2;
    const float *inv = half > 0 ? device_inv_freq(c, inv_freq, half) : nullptr;
    if (!inv)
        return;
    cmd k = new_cmd(OP_ROPE, T);
    addp(k, x, (long long)n_heads * head_dim);
    k.a = n_heads;
    k.b = head_dim;
    k.pos = pos0;
    k.w = inv;
    submit(c, k);
}

void cu_attention(void *ctx, float *out, const float *q, const float *k_, const float *v, int T, int pos0,
                  int n_heads, int n_kv, int head_dim)
{
    cmd k = new_cmd(OP_ATTN, T);
    long long qd = (long long)n_heads * head_dim, kvd = (long long)n_kv * head_dim;
    addp(k, out, qd);
    addp(k, (float *)q, qd);
    addp(k, (float *)k_, kvd);
    addp(k, (float *)v, kvd);
    k.a = n_heads;
    k.b = n_kv;
    k.c = head_dim;
    k.pos = pos0;
    submit((cuctx *)ctx, k);
}

/* An elementwise op on two n-float rows, x written in place (swiglu, add). */
static void submit_rows(void *ctx, int kind, float *x, const float *y, int n)
{
    cmd k = new_cmd(kind, 1);
    addp(k, x, n);
    addp(k, (float *)y, n);
    k.a = n;
    submit((cuctx *)ctx, k);
}

void cu_swiglu(void *ctx, float *gate, const float *up, int n) { submit_rows(ctx, OP_SWIGLU, gate, up, n); }

void cu_add(void *ctx, float *x, const float *y, int n) { submit_rows(ctx, OP_ADD, x, y, n); }

int cu_sync(void *ctx, tl_error *err)
{
    cuctx *c = (cuctx *)ctx;
    flush(c);
    CK(c, cudaStreamSynchronize(c->s));
    if (!c->st.errors)
        return 0;
    return tl_error_set(err, "cuda: %s%s", c->first_err,
                        c->st.errors > 1 ? " (and later errors; the device's results are not usable)" : "");
}

/* head_dim: k_attention keeps a row of q, acc and V in D = head_dim / 32 registers per lane,
 * D <= 8. Everything else of a Llama shape runs at any size. */
int cu_accepts(const tl_config *cfg, tl_error *err)
{
    if (cfg->head_dim > TL_CUDA_MAX_HEAD_DIM)
        return tl_error_set(err, "head_dim: %d is more than the %d the cuda backend's attention handles",
                            cfg->head_dim, TL_CUDA_MAX_HEAD_DIM);
    return 0;
}

void cu_begin_pass(void *ctx, int T, int pos0)
{
    cuctx *c = (cuctx *)ctx;
    flush(c);
    c->st.passes++;
    c->in_pass = 1;
    c->timed = 0;
    c->pass_T = T;
    c->pass_pos = pos0;
    c->ev0_pending = 1;
    if (c->fault_at >= 0 && c->st.passes == c->fault_at) {
        fprintf(stderr, "tokenloop: cuda: TL_CUDA_FAULT_AT_PASS=%ld: launching a faulting kernel\n", c->fault_at);
        start_timer(c);
        k_fault<<<1, 1, 0, c->s>>>(nullptr);
        CKL(c);
    }
    if (T == 1) {
        c->deferring = 1;
        c->cur.n = 0;
        c->nids = 0;
    } else {
        start_timer(c);
    }
}

void cu_end_pass(void *ctx)
{
    cuctx *c = (cuctx *)ctx;
    if (c->deferring)
        end_deferred(c);
    if (c->in_pass) {
        start_timer(c);
        CK(c, cudaEventRecord(c->ev1, c->s));
        c->timed = 1;
        c->in_pass = 0;
    }
}

double cu_pass_device_ms(void *ctx)
{
    cuctx *c = (cuctx *)ctx;
    float ms = 0.0f;
    if (!c->timed || cudaEventSynchronize(c->ev1) != cudaSuccess ||
        cudaEventElapsedTime(&ms, c->ev0, c->ev1) != cudaSuccess)
        return -1.0;
    return ms;
}

/* Result layout of topk_merge: k floats, k ints, then the double sum at an 8-byte boundary. */
size_t topk_out_bytes(int k) { return ((2 * sizeof(float) * k + 7) & ~(size_t)7) + sizeof(double); }

int cu_topk(void *ctx, const float *buf, int n, int k, int *ids, float *vals, double *sumexp)
{
    cuctx *c = (cuctx *)ctx;
    if (n <= 0 || k < 1 || k > TL_TOPK_MAX || k > n)
        return -1;
    long long nb = (n + (long long)TOPK_CHUNK - 1) / TOPK_CHUNK;
    if (nb * k > TOPK_MERGE)
        return -1;   /* a vocabulary this large takes the copy-everything path */
    /* scratch: TOPK_MERGE scores, ids, block maxima, block sums; then the result */
    const size_t o_ci = sizeof(float) * TOPK_MERGE, o_bmax = o_ci + sizeof(int) * TOPK_MERGE,
                 o_bsum = o_bmax + sizeof(float) * TOPK_MERGE, o_out = o_bsum + sizeof(double) * TOPK_MERGE;
    const size_t out_bytes = topk_out_bytes(TL_TOPK_MAX);
    flush(c);
    if (!c->d_topk && (CK(c, cudaMalloc(&c->d_topk, o_out + out_bytes)) ||
                       CK(c, cudaMallocHost(&c->h_topk, out_bytes)))) {
        cudaFree(c->d_topk);
        c->d_topk = nullptr;
        c->h_topk = nullptr;
        return -1;
    }
    char *d = c->d_topk;
    topk_chunks<<<(unsigned)nb, TOPK_THREADS, 0, c->s>>>(buf, n, k, (float *)d, (int *)(d + o_ci),
                                                         (float *)(d + o_bmax), (double *)(d + o_bsum));
    topk_merge<<<1, TOPK_THREADS, 0, c->s>>>((const float *)d, (const int *)(d + o_ci), (const float *)(d + o_bmax),
                                            (const double *)(d + o_bsum), (int)nb, k, d + o_out);
    if (CKL(c) || CK(c, cudaMemcpyAsync(c->h_topk, d + o_out, topk_out_bytes(k), cudaMemcpyDeviceToHost, c->s)) ||
        CK(c, cudaStreamSynchronize(c->s)))
        return -1;
    memcpy(vals, c->h_topk, sizeof(float) * k);
    memcpy(ids, c->h_topk + sizeof(float) * k, sizeof(int) * k);
    memcpy(sumexp, c->h_topk + topk_out_bytes(k) - sizeof(double), sizeof(double));
    return k;
}

/* The end of a bandwidth probe: its stream drained, the error of an allocation that failed
 * cleared (it is not the passes' error), its events and buffers freed. */
static void probe_free(cuctx *c, cudaEvent_t e0, cudaEvent_t e1, void *a, void *b)
{
    cudaGetLastError();
    cudaStreamSynchronize(c->s);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    cudaFree(a);
    cudaFree(b);
}

/* Device-to-device copies of a buffer far larger than L2 (50 MB on an H100), timed with events:
 * the best rate, counting the bytes read and the bytes written, as copy benchmarks do. */
double cu_bandwidth(void *ctx, double budget_s)
{
    cuctx *c = (cuctx *)ctx;
    flush(c);
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess)
        return 0;
    size_t bytes = (size_t)1 << 30;
    while (bytes > ((size_t)64 << 20) && 4 * bytes > fr)
        bytes >>= 1;
    char *a = nullptr, *b = nullptr;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    double best = 0, spent = 0;
    if (cudaMalloc(&a, bytes) == cudaSuccess && cudaMalloc(&b, bytes) == cudaSuccess &&
        cudaEventCreate(&e0) == cudaSuccess && cudaEventCreate(&e1) == cudaSuccess &&
        cudaMemsetAsync(a, 1, bytes, c->s) == cudaSuccess &&
        cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, c->s) == cudaSuccess) {
        if (budget_s <= 0)
            budget_s = 0.2;
        for (int i = 0; i < 200 && (i < 3 || spent < budget_s); i++) {
            float ms = 0;
            if (cudaEventRecord(e0, c->s) != cudaSuccess ||
                cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, c->s) != cudaSuccess ||
                cudaEventRecord(e1, c->s) != cudaSuccess || cudaEventSynchronize(e1) != cudaSuccess ||
                cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess || ms <= 0)
                break;
            spent += ms / 1e3;
            double rate = 2.0 * (double)bytes / (ms / 1e3);
            if (rate > best)
                best = rate;
        }
    }
    probe_free(c, e0, e1, a, b);
    return best;
}

const tl_backend_ops cuda_ops = [] {
    tl_backend_ops o;
    memset(&o, 0, sizeof o);
    o.name = "cuda";
    o.create = cu_create;
    o.accepts = cu_accepts;
    o.destroy = cu_destroy;
    o.alloc = cu_alloc;
    o.release = cu_release;
    o.to_host = cu_to_host;
    o.upload = cu_upload;
    o.unload = cu_unload;
    o.embed = cu_embed;
    o.rmsnorm = cu_rmsnorm;
    o.matmul = cu_matmul;
    o.rope = cu_rope;
    o.attention = cu_attention;
    o.swiglu = cu_swiglu;
    o.add = cu_add;
    o.sync = cu_sync;
    o.begin_pass = cu_begin_pass;
    o.end_pass = cu_end_pass;
    o.pass_ms = cu_pass_device_ms;
    o.topk = cu_topk;
    o.bandwidth = cu_bandwidth;
    return o;
}();

} // namespace

extern "C" const tl_backend_ops *tl_backend_cuda(void) { return &cuda_ops; }

extern "C" int tl_backend_cuda_available(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    cudaDeviceProp prop;
    return n > 0 && cudaGetDeviceProperties(&prop, 0) == cudaSuccess && prop.major >= 8;
}

extern "C" void tl_cuda_get_stats(void *ctx, tl_cuda_stats *out)
{
    *out = ((cuctx *)ctx)->st;
}

extern "C" int tl_cuda_quantize_x(void *ctx, const float *x, int T, int cols, int8_t *q, float *d)
{
    cuctx *c = (cuctx *)ctx;
    flush(c);
    if (T <= 0 || cols <= 0 || cols % 32)
        return -1;
    grow_qscratch(c, T, cols);
    if (qscratch_bytes(T, cols) > c->xqcap)
        return -1;
    int8_t *xq = (int8_t *)c->d_xq;
    float *xd = (float *)(c->d_xq + qscratch_scales_at(T, cols));
    long long nblk = (long long)T * (cols / 32);
    k_quantize_q8<<<(unsigned)((nblk + 7) / 8), 256, 0, c->s>>>(dptr{(float *)x, 0}, nullptr, xq, xd, T, cols);
    if (CKL(c) || CK(c, cudaMemcpyAsync(q, xq, (size_t)T * cols, cudaMemcpyDeviceToHost, c->s)) ||
        CK(c, cudaMemcpyAsync(d, xd, sizeof(float) * (size_t)nblk, cudaMemcpyDeviceToHost, c->s)) ||
        CK(c, cudaStreamSynchronize(c->s)))
        return -1;
    return 0;
}

extern "C" double tl_cuda_pass_device_ms(void *ctx)
{
    return cu_pass_device_ms(ctx);
}

extern "C" double tl_cuda_read_bandwidth(void *ctx, double budget_s)
{
    cuctx *c = (cuctx *)ctx;
    flush(c);
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess)
        return 0;
    size_t bytes = (size_t)2 << 30;   /* 2 GiB: 35 times an H200's L2 */
    while (bytes > ((size_t)64 << 20) && 2 * bytes > fr)
        bytes >>= 1;
    char *a = nullptr;
    unsigned *sink = nullptr;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    double best = 0, spent = 0;
    size_t n = bytes / sizeof(uint4);
    unsigned blocks = (unsigned)(c->nsm > 0 ? c->nsm * 8 : 1024);
    if (cudaMalloc(&a, bytes) == cudaSuccess && cudaMalloc(&sink, sizeof(unsigned)) == cudaSuccess &&
        cudaEventCreate(&e0) == cudaSuccess && cudaEventCreate(&e1) == cudaSuccess &&
        cudaMemsetAsync(a, 1, bytes, c->s) == cudaSuccess) {
        if (budget_s <= 0)
            budget_s = 0.2;
        k_read<<<blocks, 256, 0, c->s>>>((const uint4 *)a, n, sink);   /* warm-up */
        for (int i = 0; i < 200 && (i < 3 || spent < budget_s); i++) {
            float ms = 0;
            if (cudaEventRecord(e0, c->s) != cudaSuccess)
                break;
            k_read<<<blocks, 256, 0, c->s>>>((const uint4 *)a, n, sink);
            if (cudaGetLastError() != cudaSuccess || cudaEventRecord(e1, c->s) != cudaSuccess ||
                cudaEventSynchronize(e1) != cudaSuccess || cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess || ms <= 0)
                break;
            spent += ms / 1e3;
            double rate = (double)bytes / (ms / 1e3);
            if (rate > best)
                best = rate;
        }
    }
    probe_free(c, e0, e1, a, sink);
    return best;
}
