/* The CPU backend's operation table. Buffers are plain host memory and weights are read
 * straight from the mapping, so upload is a no-op. By default every operation is synchronous:
 * it splits its work over the context's thread pool and returns when all of it is done. In the
 * asynchronous mode (set_async) the operations are queued to a worker thread as a GPU's are to
 * its stream, and only sync waits (the lesson's trap 2, on any machine).
 * The matrix product picks the best kernel this CPU supports at run time (AVX-512 BF16,
 * AVX-512F, AVX2+FMA+F16C; NEON with BFDOT and SDOT, with SDOT, plain on AArch64; portable);
 * TL_CPU_ISA=generic|avx2|avx512|avx512bf16|neon|neon-dotprod|neon-bf16
 * forces one. */
#define _GNU_SOURCE   /* SCHED_BATCH */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "kq.h"
#include "mm.h"
#include "pool.h"
#include "tokenloop/backend.h"
#include "tokenloop/buf.h"
#include "tokenloop/system.h"
#include "tokenloop/quant.h"

typedef struct cpu_stream cpu_stream;

typedef struct cpu_ctx {
    tl_pool *pool;
    cpu_stream *stream;       /* the asynchronous mode's queue and worker; NULL: synchronous */
    const tl_cpu_isa *isa;
    int exact;                /* set_exact; 0: products with bf16 weights round x to bf16 */
    uint16_t *xpack;          /* packed activations for kernels that want them */
    size_t xpack_cap;         /* in uint16 */
    void *xquant;             /* x quantized for Q8_0/Q4_0 weights: xq, xd, xc (mm.h) */
    size_t xquant_cap;        /* bytes */
    float *scratch;           /* attention scores: one slice per thread */
    size_t scratch_cap;       /* floats per thread */
} cpu_ctx;

static const tl_cpu_isa *const isas[] = {
#ifdef TL_CPU_X86
    &tl_cpu_isa_avx512bf16, &tl_cpu_isa_avx512, &tl_cpu_isa_avx2,
#endif
#ifdef TL_CPU_NEON
    &tl_cpu_isa_neon_bf16, &tl_cpu_isa_neon_dotprod, &tl_cpu_isa_neon,
#endif
    &tl_cpu_isa_generic,
};

const tl_cpu_isa *tl_cpu_isa_find(const char *name)
{
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++)
        if (!name ? isas[i]->supported() : !strcmp(name, isas[i]->name))
            return isas[i];
    return NULL;
}

void *tl_cpu_create_isa(int threads, const char *isa_name, tl_error *err)
{
    const tl_cpu_isa *isa = tl_cpu_isa_find(isa_name);
    if (!isa) {
        tl_error_set(err, "%s: unknown CPU kernel set (generic, avx2, avx512, avx512bf16, neon, neon-dotprod, neon-bf16)", isa_name);
        return NULL;
    }
    if (!isa->supported()) {
        tl_error_set(err, "%s: this CPU does not support these kernels", isa_name);
        return NULL;
    }
    cpu_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        tl_error_set(err, "cpu backend: out of memory");
        return NULL;
    }
    c->isa = isa;
    c->exact = 1;   /* docs/accuracy.md: fp32-level products unless asked otherwise */
    c->pool = tl_pool_create(threads);
    if (!c->pool) {
        free(c);
        tl_error_set(err, "cpu backend: cannot start %d threads", threads);
        return NULL;
    }
    return c;
}

static void cpu_sync(void *ctx);
static void stream_stop(cpu_ctx *c);

const char *tl_cpu_ctx_isa(void *ctx) { return ((cpu_ctx *)ctx)->isa->name; }
int tl_cpu_ctx_threads(void *ctx) { return tl_pool_size(((cpu_ctx *)ctx)->pool); }

static void *cpu_create(int threads, tl_error *err)
{
    const char *forced = getenv("TL_CPU_ISA");
    return tl_cpu_create_isa(threads, forced && *forced ? forced : NULL, err);
}

static void cpu_destroy(void *ctx)
{
    cpu_ctx *c = ctx;
    if (!c)
        return;
    stream_stop(c);
    tl_pool_destroy(c->pool);
    free(c->xpack);
    free(c->xquant);
    free(c->scratch);
    free(c);
}

static float *cpu_alloc(void *ctx, size_t n)
{
    (void)ctx;
    size_t bytes = ((n ? n : 1) * sizeof(float) + 63) & ~(size_t)63;
    float *p = aligned_alloc(64, bytes);
    if (p)
        memset(p, 0, bytes);
    return p;
}

static void cpu_release(void *ctx, float *buf)
{
    cpu_sync(ctx);   /* queued work may still use it, as cudaFree waits */
    free(buf);
}

static void cpu_to_host(void *ctx, float *host, const float *buf, size_t n)
{
    cpu_sync(ctx);   /* a blocking copy, as cudaMemcpy to pageable memory is */
    if (host != buf)
        memmove(host, buf, n * sizeof(float));
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

/* ---- matrix product ---- */

#define MM_MAX 3   /* products of one x in one dispatch: q/k/v */

#define MM_RANGES 64   /* threads a decode's stolen split serves; more: the uniform split */
#define DECODE_RANGES_T 16   /* a batched decode of up to this many tokens is still a stream */

/* One thread's share of a decode's rows, [lo, hi) packed as lo | hi << 32 in the job's row
 * space (every matrix's rows one after another): the owner takes from lo, a thief from hi. */
typedef struct {
    alignas(64) _Atomic uint64_t span;
} mm_range;

/* Items are chunks of rows of each matrix in turn; first[m] is matrix m's first item. Item i
 * of matrix m covers rows i*chunk.. of it. With ranges (a decode), item i is range i instead:
 * base[m] is matrix m's first row in the job's row space. */
typedef struct {
    const tl_cpu_mm *mm;
    tl_cpu_mm_fn fn;
    int64_t chunk;
    int first[MM_MAX + 1];
    int nw, nranges;
    int64_t base[MM_MAX + 1];
    mm_range *ranges;
    tl_cpu_mv_scores_fn fn_scores;   /* matmul_scores: the kernel, and each thread's accumulator */
    tl_cpu_scores *const *slots;
} mm_job;

/* Rows [r0, r1) of one product, feeding thread tid's accumulator if there is one. */
static void mm_rows(const mm_job *j, const tl_cpu_mm *mm, int64_t r0, int64_t r1, int tid)
{
    if (!j->slots)
        j->fn(mm, r0, r1);
    else if (j->fn_scores)
        j->fn_scores(mm, r0, r1, j->slots[tid]);
    else {   /* the kernel this ISA fell back to cannot feed it: the rows, then their scores */
        j->fn(mm, r0, r1);
        tl_cpu_scores_add(j->slots[tid], mm->out + r0, r0, (int)(r1 - r0));
    }
}

/* Rows [a, b) of the job's row space, cut at the matrices' borders. */
static void mm_span(const mm_job *j, int64_t a, int64_t b, int tid)
{
    for (int m = 0; m < j->nw && a < b; m++) {
        int64_t lo = a > j->base[m] ? a : j->base[m], hi = b < j->base[m + 1] ? b : j->base[m + 1];
        if (lo < hi)
            mm_rows(j, &j->mm[m], lo - j->base[m], hi - j->base[m], tid);
    }
}

static inline uint64_t span_pack(uint32_t lo, uint32_t hi) { return (uint64_t)lo | (uint64_t)hi << 32; }

/* Range `item` of a decode, front to back in steps of an eighth of what is left (each step
 * follows the last in memory, so the thread's weights are one stream), then the back half of
 * what another range has left, while any has 16 rows or more: a thread that finished early
 * takes over half the remaining work of one that is behind, and again if it finishes first.
 * Every piece starts on a multiple of 8 rows in the job's row space, so the decode kernels'
 * tiles of 8 (wide rows: mv_avx512bf16.c; 4 in mv_tmpl.h) always cover the same rows and each
 * row is summed the same way whoever takes it: a decode's scores are the same bits on every run.
 * Pieces cut at any multiple of 4 let the tiles shift with the threads' timing, so a row could
 * go through the one-row loop in one run and a tile in the next, whose sums round differently
 * (found when `serve --slots 1` gave another greedy text for the same request of random 1B
 * weights, near-ties everywhere, in a later round of tools/bench/serve_batch.py under load). */
static void mm_range_item(mm_job *j, int item, int tid)
{
    _Atomic uint64_t *own = &j->ranges[item].span;
    uint64_t s = atomic_load_explicit(own, memory_order_relaxed);
    for (;;) {
        uint32_t lo = (uint32_t)s, hi = (uint32_t)(s >> 32);
        if (lo >= hi)
            break;
        uint32_t step = (hi - lo) / 8 < 16 ? 16 : ((hi - lo) / 8 + 7) / 8 * 8;
        uint32_t to = hi - lo < step ? hi : lo + step;
        if (atomic_compare_exchange_weak_explicit(own, &s, span_pack(to, hi), memory_order_relaxed,
                                                  memory_order_relaxed)) {
            mm_span(j, lo, to, tid);
            s = atomic_load_explicit(own, memory_order_relaxed);
        }
    }
    for (int d = 1; d < j->nranges; d++) {
        _Atomic uint64_t *other = &j->ranges[(item + d) % j->nranges].span;
        s = atomic_load_explicit(other, memory_order_relaxed);
        for (;;) {
            uint32_t lo = (uint32_t)s, hi = (uint32_t)(s >> 32);
            if (lo >= hi)
                break;
            uint32_t cut = (lo + (hi - lo) / 2 + 7) / 8 * 8;   /* on a multiple of 8, as every start is */
            uint32_t take = hi - lo <= 16 || cut >= hi ? hi - lo : hi - cut;
            if (atomic_compare_exchange_weak_explicit(other, &s, span_pack(lo, hi - take), memory_order_relaxed,
                                                      memory_order_relaxed)) {
                mm_span(j, hi - take, hi, tid);
                s = atomic_load_explicit(other, memory_order_relaxed);
            }
        }
    }
}

static void mm_item(void *arg, int item, int tid)
{
    mm_job *j = arg;
    if (j->ranges) {
        mm_range_item(j, item, tid);
        return;
    }
    int m = 0;
    while (item >= j->first[m + 1])
        m++;
    const tl_cpu_mm *mm = &j->mm[m];
    int64_t r0 = (int64_t)(item - j->first[m]) * j->chunk;
    int64_t r1 = r0 + j->chunk < mm->rows ? r0 + j->chunk : mm->rows;
    mm_rows(j, mm, r0, r1, tid);
}

typedef struct {
    uint16_t *xpack;
    const float *x;
    int T, halves, panels;
    int64_t cols, cols_pad;
} pack_job;

/* Item t: token t, or with panels the panel of tokens 16t.. (one writer per cache line). */
static void pack_item(void *arg, int t, int tid)
{
    (void)tid;
    pack_job *p = arg;
    size_t n = p->panels ? TL_CPU_PANEL : 1;
    uint16_t *dst = p->xpack + (size_t)t * n * (size_t)p->halves * (size_t)p->cols_pad;
    const float *src = p->x + (size_t)t * n * (size_t)p->cols;
#ifdef TL_CPU_X86   /* the packing lives with its users (want_pack): mm_avx512bf16.c, mv_bfdot_neon.c */
    if (p->panels) {
        tl_cpu_pack_bf16_panel(dst, src, p->T - t * TL_CPU_PANEL < TL_CPU_PANEL ? p->T - t * TL_CPU_PANEL : TL_CPU_PANEL,
                               p->cols, p->cols_pad, p->halves);
        return;
    }
#endif
#if defined(TL_CPU_X86) || defined(TL_CPU_NEON)
    tl_cpu_pack_bf16(dst, src, 1, p->cols, p->cols_pad, p->halves);
#else
    (void)dst, (void)src;
#endif
}

/* x packed for this kernel set into c->xpack (mm gets where and how): fp32-level (hi + lo)
 * when the context is exact or the weight keeps x, else rounded to bf16. 0, or -1 when there is
 * no memory for it: the caller then runs the portable kernel, which needs no packing. */
static int pack_x(cpu_ctx *c, tl_cpu_mm *mm, const float *x, int64_t cols, int T, int keep_x, int threads)
{
    int64_t al = c->isa->pack_align;
    mm->cols_pad = (cols + al - 1) / al * al;
    mm->halves = c->exact || keep_x ? 2 : 1;
    mm->panels = c->isa->panel_T > 0 && T >= c->isa->panel_T;
    int items = mm->panels ? (T + TL_CPU_PANEL - 1) / TL_CPU_PANEL : T;
    size_t need = (size_t)items * (mm->panels ? TL_CPU_PANEL : 1) * (size_t)mm->halves * (size_t)mm->cols_pad;
    if (need > c->xpack_cap) {
        uint16_t *p = aligned_alloc(64, (need * sizeof(uint16_t) + 63) & ~(size_t)63);
        if (!p)
            return -1;
        free(c->xpack);
        c->xpack = p;
        c->xpack_cap = need;
    }
    pack_job pj = {c->xpack, x, T, mm->halves, mm->panels, cols, mm->cols_pad};
    if (T == 1 || threads == 1)   /* a vector pass over one row: not worth a hand-off */
        for (int i = 0; i < items; i++)
            pack_item(&pj, i, 0);
    else
        tl_pool_for(c->pool, items, pack_item, &pj);
    mm->xpack = c->xpack;
    return 0;
}

typedef struct {
    const tl_cpu_mm *mm;
    const float *x;
    tl_cpu_qpack_fn fn;
    tl_dtype dt;
    int qbias;
} qpack_job;

static void qpack_item(void *arg, int t, int tid)
{
    (void)tid;
    const qpack_job *p = arg;
    const tl_cpu_mm *m = p->mm;
    const size_t cols = (size_t)m->cols;
    if (p->fn)
        p->fn(m, p->dt, p->x, t, p->qbias);
    else
        tl_cpu_pack_q8((int8_t *)m->xq + t * cols, (float *)m->xd + t * cols / 32,
                       m->xc ? (int32_t *)m->xc + t * cols / 4 : NULL, p->x + t * cols, 1, m->cols, p->qbias);
}

/* x quantized for products with Q8_0/Q4_0 weights into c->xquant (mm gets where), by fn (NULL:
 * the portable layout). 0, or -1 when there is no memory for it. */
static int pack_x_q8(cpu_ctx *c, tl_cpu_mm *mm, const float *x, int64_t cols, int T, tl_dtype dt,
                     tl_cpu_qpack_fn fn, int qbias, int threads)
{
    size_t nq = (size_t)T * (size_t)cols, nd = nq / 4 * sizeof(float), nc = qbias ? nq : 0;
    size_t need = ((nq + 63) & ~(size_t)63) + ((nd + 63) & ~(size_t)63) + nc;
    if (need > c->xquant_cap) {
        void *p = aligned_alloc(64, (need + 63) & ~(size_t)63);
        if (!p)
            return -1;
        free(c->xquant);
        c->xquant = p;
        c->xquant_cap = need;
    }
    char *base = c->xquant;
    mm->xq = (const int8_t *)base;
    mm->xd = (const float *)(base + ((nq + 63) & ~(size_t)63));
    mm->xc = qbias ? (const int32_t *)(base + ((nq + 63) & ~(size_t)63) + ((nd + 63) & ~(size_t)63)) : NULL;
    qpack_job j = {mm, x, fn, dt, qbias};
    if (T == 1 || threads == 1)
        for (int t = 0; t < T; t++)
            qpack_item(&j, t, 0);
    else
        tl_pool_for(c->pool, T, qpack_item, &j);
    return 0;
}

/* A decode's rows, as one contiguous range a thread (mm_range_item). Each thread's weights
 * are then one long stream; the guided split before (rounds of items halving in size, any
 * thread taking the next) began a new stream at each of about 14 items a matrix, and each new
 * stream waits for the prefetchers to ramp up again. At 60-65 GB/s that cost o_proj 1.20-1.29x
 * a plain read of its bytes, 1.01-1.04x now (1B shape, 2 threads, tools/bench/decode_vs_read.c,
 * the two builds alternated); `bench --synthetic llama-3.2-1b` TPOT / floor 1.115 and 1.154
 * before, 1.082-1.110 after. 0 when the row space or the threads do not fit the ranges. */
static int split_ranges(mm_job *j, mm_range *ranges, const tl_cpu_mm *mm, int nw, int n)
{
    j->base[0] = 0;
    for (int m = 0; m < nw; m++)
        j->base[m + 1] = j->base[m] + (mm[m].rows > 0 ? mm[m].rows : 0);
    int64_t total = j->base[nw];
    if (n > MM_RANGES || total > (int64_t)UINT32_MAX)
        return 0;
    for (int i = 0; i < n; i++) {
        int64_t a = total * i / n / 8 * 8, b = i + 1 == n ? total : total * (i + 1) / n / 8 * 8;
        atomic_init(&ranges[i].span, span_pack((uint32_t)a, (uint32_t)b));
    }
    j->nw = nw;
    j->nranges = n;
    j->ranges = ranges;
    return 1;
}

/* out[i][T, W[i].rows] = x[T, cols] . W[i]^T for nw <= MM_MAX weights of one dtype and width:
 * x is packed once and every matrix's rows go to the threads in one dispatch, so q/k/v (or
 * gate/up) cost one hand-off instead of three (two). With slots (matmul_scores: one product,
 * T == 1), each thread's accumulator gets the scores it writes. */
static void run_matmul(cpu_ctx *c, float *const *out, const float *x, const tl_weight *W, int nw, int T,
                       tl_cpu_scores *const *slots)
{
    if (T <= 0)
        return;
    for (int i = 1; i < nw; i++)
        if (W[i].dtype != W[0].dtype || W[i].cols != W[0].cols) {   /* not one x: one at a time */
            for (int k = 0; k < nw; k++)
                run_matmul(c, &out[k], x, &W[k], 1, T, slots);
            return;
        }
    const int64_t cols = W[0].cols;
    tl_cpu_mm mm[MM_MAX];
    int64_t rows = 0;
    for (int i = 0; i < nw; i++) {
        mm[i] = (tl_cpu_mm){.out = out[i], .x = x, .w = W[i].data, .rows = W[i].rows, .cols = cols, .T = T};
        rows += W[i].rows > 0 ? W[i].rows : 0;
        if (cols <= 0 && W[i].rows > 0)
            memset(out[i], 0, sizeof(float) * (size_t)T * (size_t)W[i].rows);
    }
    if (rows <= 0)
        return;
    if (cols <= 0) {
        if (slots)
            tl_cpu_scores_add(slots[0], out[0], 0, (int)W[0].rows);
        return;
    }
    int n = tl_pool_size(c->pool);
    if ((double)T * (double)rows * (double)cols < 32768.0)
        n = 1;   /* not worth waking anyone */
    const tl_dtype dt = W[0].dtype;
    tl_cpu_mm_fn fn = c->isa->mm[dt];
    tl_cpu_mv_scores_fn fn_scores = slots && T == 1 ? c->isa->mv_scores[dt] : NULL;
    const int kq = tl_dtype_is_kquant(dt);
    if (kq) {   /* K-quants (kq.h): x as Q8_K, its bsums where xc goes */
        fn = tl_cpu_kq_kernel(c->isa->name, dt);
        fn_scores = NULL;
    }
    if (dt == TL_Q8_0 || dt == TL_Q4_0 || kq) {
        int ok = kq ? pack_x_q8(c, &mm[0], x, cols, T, dt, tl_cpu_kq_qpack(c->isa->name), 1, n) == 0
                    : pack_x_q8(c, &mm[0], x, cols, T, dt, c->isa->qpack, c->isa->qbias[dt], n) == 0;
        if (!ok && !kq && (ok = pack_x_q8(c, &mm[0], x, cols, T, dt, NULL, 0, 1) == 0)) {   /* (no room for xc) */
            fn = tl_cpu_isa_generic.mm[dt];
            fn_scores = NULL;
        }
        if (!ok) {   /* no memory even for that: every output is NaN, which the caller can see */
            for (int i = 0; i < nw; i++)
                for (size_t k = 0; k < (size_t)T * (size_t)W[i].rows; k++)
                    out[i][k] = NAN;
            if (slots)
                tl_cpu_scores_add(slots[0], out[0], 0, (int)W[0].rows);
            return;
        }
        for (int i = 1; i < nw; i++) {
            mm[i].xq = mm[0].xq;
            mm[i].xd = mm[0].xd;
            mm[i].xc = mm[0].xc;
        }
    } else if (c->isa->want_pack[W[0].dtype] && pack_x(c, &mm[0], x, cols, T, W[0].keep_x, n) == 0) {
        for (int i = 1; i < nw; i++) {
            mm[i].xpack = mm[0].xpack;
            mm[i].cols_pad = mm[0].cols_pad;
            mm[i].halves = mm[0].halves;
            mm[i].panels = mm[0].panels;
        }
    } else if (c->isa->want_pack[W[0].dtype]) {
        fn = tl_cpu_isa_generic.mm[W[0].dtype];   /* out of memory for the packed copy */
        fn_scores = NULL;
    }
    mm_job j = {.mm = mm, .fn = fn, .fn_scores = fn_scores, .slots = slots};
    if (n == 1) {
        for (int i = 0; i < nw; i++)
            if (mm[i].rows > 0)
                mm_rows(&j, &mm[i], 0, mm[i].rows, 0);
        return;
    }
    /* A decode's rows in one range a thread (split_ranges); a prefill's in contiguous chunks
     * of one size, several per thread, handed out as threads come for them. */
    mm_range ranges[MM_RANGES];
    if (T > DECODE_RANGES_T || !split_ranges(&j, ranges, mm, nw, n)) {
        int64_t pieces = T == 1 ? 16 : 4;
        int64_t chunk = rows / (n * pieces);
        int64_t min_chunk = T == 1 ? 16 : 64;
        if (chunk < min_chunk)
            chunk = min_chunk;
        int64_t unit = mm[0].panels ? 8 : 4;   /* the kernels' row tiles */
        chunk = (chunk + unit - 1) / unit * unit;
        j.chunk = chunk;
        for (int i = 0; i < nw; i++)
            j.first[i + 1] = j.first[i] + (int)((mm[i].rows > 0 ? mm[i].rows + chunk - 1 : 0) / chunk);
    }
    tl_pool_for(c->pool, j.ranges ? j.nranges : j.first[nw], mm_item, &j);
}

/* ---- attention: one (token, kv head) pair per work item ---- */

typedef struct {
    cpu_ctx *c;
    tl_cpu_attn_fn fn;
    tl_cpu_attn a;
} attn_job;

static void attn_item(void *arg, int it, int tid)
{
    attn_job *j = arg;
    float *scores = j->c->scratch + (size_t)tid * j->c->scratch_cap;
    j->fn(&j->a, it / j->a.n_kv, it % j->a.n_kv, scores);
}


static void run_attention(cpu_ctx *c, float *out, const float *q, const void *k, const void *v, int kv_bf16,
                          int T, int pos0, int n_heads, int n_kv, int head_dim)
{
    size_t need = ((size_t)pos0 + (size_t)T) * (size_t)(n_heads / n_kv);   /* a group's scores */
    int n = tl_pool_size(c->pool);
    if (need > c->scratch_cap) {
        size_t cap = need < 4096 ? 4096 : need * 2;
        float *s = malloc(sizeof(float) * cap * (size_t)n);
        if (!s) {   /* the reference allocates only one row */
            if (kv_bf16)
                tl_cpu_ref_attention_bf16(out, q, k, v, T, pos0, n_heads, n_kv, head_dim);
            else
                tl_cpu_ref_attention(out, q, k, v, T, pos0, n_heads, n_kv, head_dim);
            return;
        }
        free(c->scratch);
        c->scratch = s;
        c->scratch_cap = cap;
    }
    attn_job j = {c, kv_bf16 ? c->isa->attn_bf16 : c->isa->attn, {out, q, k, v, T, pos0, n_heads, n_kv, head_dim}};
    if ((double)T * n_heads * ((double)pos0 + T) * head_dim < 65536.0)
        for (int i = 0; i < T * n_kv; i++)
            attn_item(&j, i, 0);
    else
        tl_pool_for(c->pool, T * n_kv, attn_item, &j);
}

/* ---- the small operations ---- */

static void run_embed(float *x, const tl_weight *t, const int *ids, int T)
{
    tl_cpu_ref_embed(x, t, ids, T);
}

/* A prefill's tokens are split among the threads (one thread took 1-2% of a prefill's time
 * while the others waited); each token is the reference's own arithmetic, so the same bits. */
typedef struct {
    float *o;
    const float *x;
    const tl_weight *w;
    int n;
    float eps;
} norm_job;

static void norm_item(void *arg, int t, int tid)
{
    (void)tid;
    const norm_job *j = arg;
    tl_cpu_ref_rmsnorm(j->o + (size_t)t * (size_t)j->n, j->x + (size_t)t * (size_t)j->n, j->w, 1, j->n, j->eps);
}

static void run_rmsnorm(cpu_ctx *c, float *o, const float *x, const tl_weight *w, int T, int n, float eps)
{
    norm_job j = {o, x, w, n, eps};
    /* a hand-off costs more than a small norm (the bundled model's 20-token prompt: 2,560
     * values), and on a busy machine it can wait for a worker that is not running */
    if ((double)T * n < 65536.0 || tl_pool_size(c->pool) == 1)
        tl_cpu_ref_rmsnorm(o, x, w, T, n, eps);
    else
        tl_pool_for(c->pool, T, norm_item, &j);
}

/* The angles depend on the position only, so sin/cos are computed once per position rather
 * than once per head; the arithmetic is the reference's, operation for operation. */
static void run_rope(float *x, int T, int nh, int hd, int pos0, const float *inv_freq)
{
    int half = hd / 2;
    float cs[512], sn[512];
    if (half > 512) {
        tl_cpu_ref_rope(x, T, nh, hd, pos0, inv_freq);
        return;
    }
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < half; i++) {
            float angle = (float)(pos0 + t) * inv_freq[i];
            cs[i] = cosf(angle);
            sn[i] = sinf(angle);
        }
        for (int h = 0; h < nh; h++) {
            float *v = x + ((size_t)t * nh + h) * hd;
            for (int i = 0; i < half; i++) {
                float a = v[i], b = v[i + half];
                v[i] = a * cs[i] - b * sn[i];
                v[i + half] = b * cs[i] + a * sn[i];
            }
        }
    }
}

typedef struct {
    float *x;
    const float *y;
    int n;
    int op;   /* 0: swiglu, 1: add */
} ew_job;

static void ew_range(ew_job *e, int i0, int i1)
{
    if (e->op == 0)
        tl_cpu_ref_swiglu(e->x + i0, e->y + i0, i1 - i0);
    else
        tl_cpu_ref_add(e->x + i0, e->y + i0, i1 - i0);
}

#define EW_CHUNK (1 << 15)

static void ew_item(void *arg, int item, int tid)
{
    (void)tid;
    ew_job *e = arg;
    int i0 = item * EW_CHUNK, i1 = e->n - i0 < EW_CHUNK ? e->n : i0 + EW_CHUNK;
    ew_range(e, i0, i1);
}

static void ew_run(cpu_ctx *c, ew_job *e)
{
    if (e->n < 2 * EW_CHUNK)
        ew_range(e, 0, e->n);
    else
        tl_pool_for(c->pool, (e->n + EW_CHUNK - 1) / EW_CHUNK, ew_item, e);
}

/* ---- the asynchronous mode: a stream, as on a GPU ----
 * With set_async on, every operation above is recorded as a cpu_op and returns at once; one
 * worker thread (the "device") runs them in order through the same functions, using the pool
 * as the synchronous mode does, so the results are bit for bit the same. sync waits until the
 * queue is empty, as cudaStreamSynchronize does. Inside begin_pass..end_pass the operations
 * are collected without a lock and handed over at end_pass in one go (the CUDA backend
 * launches its captured graph there too), so the launching thread spends microseconds on a
 * pass and is not preempted by the worker it just woke: the unsynchronized clock then reads
 * what it reads on a GPU, the launches only. */

typedef enum { OP_EMBED, OP_RMSNORM, OP_MATMUL, OP_ROPE, OP_ATTENTION, OP_SWIGLU, OP_ADD, OP_STORE_BF16, OP_COPY } op_kind;

typedef struct cpu_op {
    op_kind kind;
    float *out;
    const float *x, *y, *z;    /* inputs: x, then up/addend or k, then v */
    const uint16_t *k16, *v16; /* attention over a bf16 KV cache: k and v */
    uint16_t *out16;           /* store_bf16 */
    tl_weight w;               /* a copy: the caller's struct may be gone when the op runs */
    tl_weight ws[MM_MAX];      /* matmul: nw weights of one x, and their outputs */
    float *outs[MM_MAX];
    int nw;
    tl_cpu_scores *const *slots;   /* matmul_scores: each thread's accumulator */
    int *ids;                  /* embed, queued: a copy the worker frees */
    const int *ids_in;         /* embed, run now: the caller's */
    int T, n, pos0, n_heads, n_kv, head_dim;
    size_t len;                /* copy */
    float eps;
} cpu_op;

typedef struct op_list {
    cpu_op *v;
    size_t n, cap;
} op_list;

struct cpu_stream {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t wake, idle;   /* the worker waits for work; sync waits for an empty queue */
    op_list queued;              /* handed over, not taken yet (mu) */
    int busy, stop;              /* the worker is running what it took; asked to exit (mu) */
    op_list running;             /* the worker's own */
    op_list rec;                 /* the launching thread's own: this pass so far */
    int in_pass;
};

static void run_op(cpu_ctx *c, const cpu_op *o)
{
    switch (o->kind) {
    case OP_EMBED: run_embed(o->out, &o->w, o->ids ? o->ids : o->ids_in, o->T); break;
    case OP_RMSNORM: run_rmsnorm(c, o->out, o->x, &o->w, o->T, o->n, o->eps); break;
    case OP_MATMUL: run_matmul(c, o->outs, o->x, o->ws, o->nw, o->T, o->slots); break;
    case OP_ROPE: run_rope(o->out, o->T, o->n_heads, o->head_dim, o->pos0, o->x); break;
    case OP_ATTENTION:
        if (o->k16)
            run_attention(c, o->out, o->x, o->k16, o->v16, 1, o->T, o->pos0, o->n_heads, o->n_kv, o->head_dim);
        else
            run_attention(c, o->out, o->x, o->y, o->z, 0, o->T, o->pos0, o->n_heads, o->n_kv, o->head_dim);
        break;
    case OP_STORE_BF16: tl_quantize_row(TL_BF16, o->x, o->out16, o->n); break;
    case OP_COPY: memcpy(o->out, o->x, sizeof(float) * o->len); break;
    case OP_SWIGLU:
    case OP_ADD: {
        ew_job e = {o->out, o->y, o->n, o->kind == OP_ADD};
        ew_run(c, &e);
        break;
    }
    }
}

static void *stream_main(void *arg)
{
    cpu_ctx *c = arg;
    cpu_stream *s = c->stream;
#ifdef SCHED_BATCH
    /* A GPU does not take the host's core when it starts on a launch. Woken as an ordinary
     * thread on a busy machine, the worker would preempt the thread that just launched it, and
     * the clock read "right after the launch" would wait out a slice of the work. A batch
     * thread has the same share of the CPU but does not preempt on wake-up. */
    struct sched_param sp = {0};
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
#endif
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->queued.n && !s->stop)
            pthread_cond_wait(&s->wake, &s->mu);
        if (!s->queued.n)
            break;
        op_list t = s->running;   /* take everything: one lock per hand-over, not per op */
        s->running = s->queued;
        s->queued = t;
        s->queued.n = 0;
        s->busy = 1;
        pthread_mutex_unlock(&s->mu);
        for (size_t i = 0; i < s->running.n; i++) {
            run_op(c, &s->running.v[i]);
            free(s->running.v[i].ids);
        }
        s->running.n = 0;
        pthread_mutex_lock(&s->mu);
        s->busy = 0;
        if (!s->queued.n)
            pthread_cond_broadcast(&s->idle);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static int list_push(op_list *l, const cpu_op *o)
{
    cpu_op *v = tl_grow(l->v, &l->cap, l->n + 1, sizeof *v, 256);
    if (!v)
        return -1;
    l->v = v;
    l->v[l->n++] = *o;
    return 0;
}

static void stream_wait(cpu_stream *s)
{
    pthread_mutex_lock(&s->mu);
    while (s->queued.n || s->busy)
        pthread_cond_wait(&s->idle, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

/* Hands the recorded operations to the worker. The common case swaps two buffers; appending
 * (the worker has not taken the last pass yet) may need memory, and without it we wait for
 * the queue to drain and swap. */
static void stream_flush(cpu_stream *s)
{
    if (!s->rec.n)
        return;
    pthread_mutex_lock(&s->mu);
    int ok = 1;
    if (!s->queued.n) {
        op_list t = s->queued;
        s->queued = s->rec;
        s->rec = t;
    } else {
        size_t i = 0;
        for (; i < s->rec.n && ok; i++)
            ok = list_push(&s->queued, &s->rec.v[i]) == 0;
        if (!ok) {
            i--;   /* rec[i] did not go in: keep it and what follows */
            memmove(s->rec.v, s->rec.v + i, (s->rec.n - i) * sizeof *s->rec.v);
            s->rec.n -= i;
        }
    }
    if (ok)
        s->rec.n = 0;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
    if (!ok) {
        stream_wait(s);
        stream_flush(s);   /* the queue is empty now: a swap */
    }
}

static void cpu_sync(void *ctx)
{
    cpu_ctx *c = ctx;
    if (!c->stream)
        return;
    stream_flush(c->stream);
    stream_wait(c->stream);
}

static int cpu_sync_op(void *ctx, tl_error *err)
{
    (void)err;   /* the CPU's operations cannot fail once their buffers exist */
    cpu_sync(ctx);
    return 0;
}

/* Runs the operation now (synchronous mode) or queues it. Whatever cannot be queued for want
 * of memory runs now, after everything queued before it: the order is all that matters. */
static void launch(cpu_ctx *c, cpu_op *o)
{
    cpu_stream *s = c->stream;
    if (!s) {
        run_op(c, o);
        return;
    }
    if (o->kind == OP_EMBED) {
        o->ids = malloc(sizeof(int) * (size_t)(o->T > 0 ? o->T : 1));
        if (o->ids)
            memcpy(o->ids, o->ids_in, sizeof(int) * (size_t)(o->T > 0 ? o->T : 0));
    }
    if ((o->kind == OP_EMBED && !o->ids) || list_push(&s->rec, o)) {
        cpu_sync(c);
        run_op(c, o);
        free(o->ids);
        return;
    }
    if (!s->in_pass)
        stream_flush(s);
}

static void stream_stop(cpu_ctx *c)
{
    cpu_stream *s = c->stream;
    if (!s)
        return;
    cpu_sync(c);
    tl_thread_stop(s->thread, &s->mu, &s->wake, &s->stop);
    pthread_cond_destroy(&s->idle);
    free(s->queued.v);
    free(s->running.v);
    free(s->rec.v);
    free(s);
    c->stream = NULL;
}

static int cpu_set_async(void *ctx, int on, tl_error *err)
{
    cpu_ctx *c = ctx;
    if (!on) {
        stream_stop(c);
        return 0;
    }
    if (c->stream)
        return 0;
    cpu_stream *s = calloc(1, sizeof *s);
    if (!s)
        return tl_error_set(err, "cpu backend: out of memory for the asynchronous mode");
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->wake, NULL);
    pthread_cond_init(&s->idle, NULL);
    c->stream = s;
    if (pthread_create(&s->thread, NULL, stream_main, c)) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->wake);
        pthread_cond_destroy(&s->idle);
        free(s);
        c->stream = NULL;
        return tl_error_set(err, "cpu backend: cannot start the asynchronous mode's worker thread");
    }
    return 0;
}

static int cpu_set_exact(void *ctx, int on)
{
    cpu_ctx *c = ctx;
    cpu_sync(c);   /* queued products keep the precision they were launched with */
    c->exact = on != 0;
    return c->isa->want_pack[TL_BF16];   /* only the packing kernels (AVX-512 BF16, NEON BFDOT) round x */
}

static void cpu_begin_pass(void *ctx, int T, int pos0)
{
    (void)T;
    (void)pos0;
    cpu_ctx *c = ctx;
    if (c->stream)
        c->stream->in_pass = 1;
}

static void cpu_end_pass(void *ctx)
{
    cpu_ctx *c = ctx;
    if (c->stream) {
        c->stream->in_pass = 0;
        stream_flush(c->stream);
    }
}

/* ---- the table's operations: each one is a launch ---- */

static void cpu_embed(void *ctx, float *x, const tl_weight *t, const int *ids, int T)
{
    cpu_op o = {.kind = OP_EMBED, .out = x, .w = *t, .ids_in = ids, .T = T};
    launch(ctx, &o);
}

static void cpu_rmsnorm(void *ctx, float *out, const float *x, const tl_weight *w, int T, int n, float eps)
{
    cpu_op o = {.kind = OP_RMSNORM, .out = out, .x = x, .w = *w, .T = T, .n = n, .eps = eps};
    launch(ctx, &o);
}

static void cpu_matmul(void *ctx, float *out, const float *x, const tl_weight *W, int T)
{
    cpu_op o = {.kind = OP_MATMUL, .outs = {out}, .x = x, .ws = {*W}, .nw = 1, .T = T};
    launch(ctx, &o);
}

static int cpu_scores_slots(void *ctx) { return tl_pool_size(((cpu_ctx *)ctx)->pool); }

static int cpu_matmul_scores(void *ctx, float *out, const float *x, const tl_weight *W, void *const *slots)
{
    cpu_ctx *c = ctx;
    if ((int)W->dtype < 0 || W->dtype >= TL_DTYPE_COUNT || !c->isa->mv_scores[W->dtype])
        return -1;
    cpu_op o = {.kind = OP_MATMUL, .outs = {out}, .x = x, .ws = {*W}, .nw = 1, .T = 1,
                .slots = (tl_cpu_scores *const *)slots};
    launch(ctx, &o);
    return 0;
}

static void cpu_matmul_n(void *ctx, int n, float *const *out, const float *x, const tl_weight *const *W, int T)
{
    cpu_op o = {.kind = OP_MATMUL, .x = x, .nw = n, .T = T};
    for (int i = 0; i < n; i++) {
        o.outs[i] = out[i];
        o.ws[i] = *W[i];
    }
    launch(ctx, &o);
}

static void cpu_rope(void *ctx, float *x, int T, int nh, int hd, int pos0, const float *inv_freq)
{
    cpu_op o = {.kind = OP_ROPE, .out = x, .x = inv_freq, .T = T, .n_heads = nh, .head_dim = hd, .pos0 = pos0};
    launch(ctx, &o);
}

static void cpu_attention(void *ctx, float *out, const float *q, const float *k, const float *v,
                          int T, int pos0, int n_heads, int n_kv, int head_dim)
{
    cpu_op o = {.kind = OP_ATTENTION, .out = out, .x = q, .y = k, .z = v, .T = T, .pos0 = pos0,
                .n_heads = n_heads, .n_kv = n_kv, .head_dim = head_dim};
    launch(ctx, &o);
}

static void cpu_attention_bf16(void *ctx, float *out, const float *q, const uint16_t *k, const uint16_t *v,
                               int T, int pos0, int n_heads, int n_kv, int head_dim)
{
    cpu_op o = {.kind = OP_ATTENTION, .out = out, .x = q, .k16 = k, .v16 = v, .T = T, .pos0 = pos0,
                .n_heads = n_heads, .n_kv = n_kv, .head_dim = head_dim};
    launch(ctx, &o);
}

static void cpu_store_bf16(void *ctx, uint16_t *dst, const float *src, int n)
{
    cpu_op o = {.kind = OP_STORE_BF16, .out16 = dst, .x = src, .n = n};
    launch(ctx, &o);
}

static void cpu_copy(void *ctx, float *dst, const float *src, size_t n)
{
    cpu_op o = {.kind = OP_COPY, .out = dst, .x = src, .len = n};
    launch(ctx, &o);
}

static void cpu_swiglu(void *ctx, float *g, const float *u, int n)
{
    cpu_op o = {.kind = OP_SWIGLU, .out = g, .y = u, .n = n};
    launch(ctx, &o);
}

static void cpu_add(void *ctx, float *x, const float *y, int n)
{
    cpu_op o = {.kind = OP_ADD, .out = x, .y = y, .n = n};
    launch(ctx, &o);
}

static const tl_backend_ops cpu_ops = {
    .name = "cpu",
    .host_buffers = 1,
    .create = cpu_create, .destroy = cpu_destroy,
    .alloc = cpu_alloc, .release = cpu_release, .to_host = cpu_to_host,
    .upload = cpu_upload, .unload = cpu_unload,
    .embed = cpu_embed, .rmsnorm = cpu_rmsnorm, .matmul = cpu_matmul, .matmul_n = cpu_matmul_n, .rope = cpu_rope,
    .attention = cpu_attention, .swiglu = cpu_swiglu, .add = cpu_add, .copy = cpu_copy, .sync = cpu_sync_op,
    .begin_pass = cpu_begin_pass, .end_pass = cpu_end_pass, .set_async = cpu_set_async,
    .set_exact = cpu_set_exact, .attention_bf16 = cpu_attention_bf16, .store_bf16 = cpu_store_bf16,
    .scores_slots = cpu_scores_slots, .matmul_scores = cpu_matmul_scores, .kernels = tl_cpu_ctx_isa,
};

const tl_backend_ops *tl_backend_cpu(void) { return &cpu_ops; }
