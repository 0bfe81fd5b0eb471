/* The one interface between core's forward pass and the kernels. core/engine.c calls these
 * operations in order, top to bottom; a backend (kernels/cpu, kernels/cuda) implements them
 * over buffers it allocated itself. Activations are fp32; weights keep their file dtype.
 * Row-major everywhere: a [T, n] activation is T rows of n floats. */
#ifndef TOKENLOOP_BACKEND_H
#define TOKENLOOP_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include "tokenloop/model.h"

typedef struct tl_backend_ops {
    const char *name;
    /* Buffers are plain host memory (the CPU): the engine reads the logits where the last
     * product wrote them instead of copying 128,256 floats after every pass. */
    int host_buffers;
    void *(*create)(int threads, tl_error *err);     /* threads <= 0: all cores */
    /* Optional: whether this backend can run a model of this shape, asked before create (no
     * device is touched). 0, or -1 with err naming the config.json field, e.g. "head_dim: ...". */
    int (*accepts)(const tl_config *cfg, tl_error *err);
    void (*destroy)(void *ctx);

    float *(*alloc)(void *ctx, size_t n_floats);      /* zeroed; NULL on failure */
    void (*release)(void *ctx, float *buf);
    void (*to_host)(void *ctx, float *host, const float *buf, size_t n);
    /* Make a weight usable by this backend (the CPU reads the mapping; CUDA copies it). */
    int (*upload)(void *ctx, const tl_weight *host, tl_weight *dev, tl_error *err);
    void (*unload)(void *ctx, tl_weight *dev);

    void (*embed)(void *ctx, float *x, const tl_weight *table, const int *ids, int T);
    void (*rmsnorm)(void *ctx, float *out, const float *x, const tl_weight *w, int T, int n, float eps);
    /* out[T, W.rows] = x[T, W.cols] . W^T */
    void (*matmul)(void *ctx, float *out, const float *x, const tl_weight *W, int T);
    /* Optional, both or neither (the CPU): matmul of one token (T == 1) whose kernel also
     * gathers the scores' statistics (tokenloop/topk.h) as it writes them, each thread into
     * its own accumulator, slots[thread] (the CPU's kind: core/include/tokenloop/scores.h), for
     * scores_slots threads. The exp and the compares run between the rows' loads, so they add
     * almost nothing to a product bound by memory. 0, or -1 when this weight has no such
     * kernel here (nothing is launched: the engine then calls matmul). The accumulators are
     * complete when the operation is (sync, in the asynchronous mode). */
    int (*scores_slots)(void *ctx);
    int (*matmul_scores)(void *ctx, float *out, const float *x, const tl_weight *W, void *const *slots);
    /* Optional: n <= 3 products of the same x (q/k/v; gate/up), out[i] = x . W[i]^T, as one
     * operation, so a backend can read x once and split all the rows over its threads in one
     * go. The results equal n matmul calls bit for bit. NULL: the engine calls matmul n times. */
    void (*matmul_n)(void *ctx, int n, float *const *out, const float *x, const tl_weight *const *W, int T);
    /* Rotate-half RoPE in place on T rows of n_heads*head_dim, positions pos0..pos0+T-1.
     * inv_freq has head_dim/2 entries (llama3 scaling already applied). */
    void (*rope)(void *ctx, float *x, int T, int n_heads, int head_dim, int pos0, const float *inv_freq);
    /* Causal GQA attention of T queries at positions pos0.. over cache rows 0..pos0+T-1.
     * q: [T, n_heads*head_dim]; k, v: [>= pos0+T, n_kv*head_dim]; out like q. */
    void (*attention)(void *ctx, float *out, const float *q, const float *k, const float *v,
                      int T, int pos0, int n_heads, int n_kv, int head_dim);
    /* Optional, both or neither: a bf16 KV cache (tl_engine_set_kv_dtype). store_bf16 rounds n
     * floats to bf16, nearest even (tl_f32_to_bf16), into dst; attention_bf16 is attention
     * with k and v as bf16 rows. NULL: the cache can only be fp32. */
    void (*store_bf16)(void *ctx, uint16_t *dst, const float *src, int n);
    void (*attention_bf16)(void *ctx, float *out, const float *q, const uint16_t *k, const uint16_t *v,
                           int T, int pos0, int n_heads, int n_kv, int head_dim);
    /* Optional: dst[0..n) = src[0..n), in order with the other operations. A batched decode
     * (tl_engine_decode_batch) needs it to put each sequence's new K/V rows into its own
     * cache and its scores into its own logits. NULL: no batched decode. */
    void (*copy)(void *ctx, float *dst, const float *src, size_t n);
    void (*swiglu)(void *ctx, float *gate, const float *up, int n);   /* gate = silu(gate) * up */
    void (*add)(void *ctx, float *x, const float *y, int n);          /* x += y */
    /* Wait for queued work. 0, or -1 with err set when the backend failed since it was created
     * (a device fault, a failed launch): its buffers can no longer be trusted, and every later
     * sync fails too. err may be NULL. */
    int (*sync)(void *ctx, tl_error *err);

    /* Optional: bracket one forward pass of T tokens at pos0, so a backend can capture the
     * decode step as a graph and replay it (CUDA), or hand a whole pass to its worker at once
     * (the CPU's asynchronous mode). core/engine.c calls begin_pass before the first operation
     * of a pass and end_pass after the last (before sync). */
    void (*begin_pass)(void *ctx, int T, int pos0);
    void (*end_pass)(void *ctx);
    /* Optional (NULL on the CPU): device time of the last begin_pass..end_pass in ms, from
     * events recorded on the device (CUDA events), valid after sync; < 0 when unknown. */
    double (*pass_ms)(void *ctx);
    /* Optional (NULL on the CPU, where the scores already are in host memory): tl_topk
     * (tokenloop/topk.h) of n floats in buf, computed where they live, so only k ids, k scores
     * and the sum cross to the host. Same results as tl_topk; -1 if it cannot (the engine then
     * copies every score). */
    int (*topk)(void *ctx, const float *buf, int n, int k, int *ids, float *vals, double *sumexp);
    /* Optional (NULL on the CPU): the device memory's bandwidth in bytes/s, from copies timed
     * with device events for about budget_s seconds (read + write bytes); <= 0 if unknown. */
    double (*bandwidth)(void *ctx, double budget_s);
    /* Optional: the kernel set this context runs, chosen at create (the CPU's: avx2, neon, ...):
     * speed depends on it, so the screens and bench name it. */
    const char *(*kernels)(void *ctx);
    /* Optional: a backend that is synchronous by default (the CPU: every operation returns when
     * its work is done) and can queue its operations instead, as a GPU stream does (on != 0):
     * each operation then returns at once, buffers hold their results only after sync, and the
     * results are the same bit for bit. NULL: every operation is always queued (CUDA). Call it
     * between passes. 0, or -1 with err set. */
    int (*set_async)(void *ctx, int on, tl_error *err);
    /* Optional: the precision of products with bf16 weights (docs/accuracy.md). A backend with
     * this operation starts exact (fp32 activations); on == 0 lets it round the activations to
     * bf16 where that is faster, except in products whose weight has keep_x set. Returns 1 when
     * its products do round then, 0 when they never do (kernels without bf16 arithmetic). NULL:
     * no exact mode (CUDA: its prefill GEMM rounds them). Call it between passes. */
    int (*set_exact)(void *ctx, int on);
} tl_backend_ops;

const tl_backend_ops *tl_backend_cpu(void);
const tl_backend_ops *tl_backend_cuda(void);  /* NULL when not compiled in */
const tl_backend_ops *tl_backend_find(const char *name);  /* "cpu", "cuda"; NULL if absent */
int tl_backend_cuda_available(void);          /* a device is present and usable */

#endif
