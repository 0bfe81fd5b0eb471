/* The step API: one call is one forward pass. A class steps through these one at a time;
 * tl_generate and the TUI are built on them. */
#ifndef TOKENLOOP_ENGINE_H
#define TOKENLOOP_ENGINE_H

#include "tokenloop/model.h"
#include "tokenloop/backend.h"
#include "tokenloop/topk.h"

typedef struct tl_engine tl_engine;

/* capacity <= 0: min(max_position_embeddings, 4096). */
int tl_engine_create(tl_engine **out, const tl_model *m, const tl_backend_ops *be,
                     int threads, int capacity, tl_error *err);
void tl_engine_free(tl_engine *e);

/* Appends n positions (the first call is the prefill); logits of the last position. */
int tl_engine_prefill(tl_engine *e, const int *ids, int n, tl_error *err);
int tl_engine_decode(tl_engine *e, int id, tl_error *err);
/* One decode step for B sequences at once, as a server batches its requests: es[b] appends
 * ids[b] at its own position. Each weight matrix is read once for all B rows (the law a batch
 * teaches: one read of the weights, B tokens); RoPE and attention run per sequence, over its
 * own KV cache. The engines share one model, backend and KV dtype, and each has had its
 * prefill; the pass runs on es[0]'s backend context and buffers (B <= its prefill chunk).
 * After it each engine holds its own logits, as after tl_engine_decode, and tl_engine_last_ms
 * is the batched pass's. No statistics are gathered (the sampler reads the scores). */
int tl_engine_decode_batch(tl_engine *const *es, const int *ids, int B, tl_error *err);
/* The same with n[b] >= 1 tokens for sequence b (ids[b][0..n[b]-1]): more than one is a chunk
 * of its prefill (the first when its engine is at position 0), so a new request's prompt can
 * share a pass with the others' decodes instead of holding them up. The logits are each
 * sequence's last row. The rows together fit es[0]'s prefill chunk (tl_engine_batch_max). */
#define TL_ENGINE_BATCH_MAX 256
int tl_engine_step_batch(tl_engine *const *es, const int *const *ids, const int *n, int B, tl_error *err);
/* The most rows (sequences, or their tokens) one batched pass on e as es[0] takes. */
int tl_engine_batch_max(const tl_engine *e);
/* Drops the last n positions from the KV cache; the logits become stale (returns -1 if n > pos). */
int tl_engine_rewind(tl_engine *e, int n);

int tl_engine_pos(const tl_engine *e);
int tl_engine_capacity(const tl_engine *e);
/* host, vocab_size floats; NULL while tl_engine_keep_top is on */
const float *tl_engine_logits(const tl_engine *e);
/* k (1..TL_TOPK_MAX): from the next pass on, keep only the k best scores and the softmax sum
 * (on a GPU only these cross to the host: a bench's decode loop). 0, the default: copy all. */
int tl_engine_keep_top(tl_engine *e, int k);
/* The k best scores of the last pass as tl_topk gives them (tokenloop/topk.h); the number
 * filled (at most the kept k in keep_top mode), or -1. */
int tl_engine_top(const tl_engine *e, int k, int *ids, float *vals, double *sumexp);
/* The last pass's best id (greedy), through tl_engine_top; 0 when there is none. */
int tl_engine_argmax(const tl_engine *e);
/* From the next pass on (on != 0), gather the scores' statistics (tokenloop/topk.h: the best
 * TL_TOPK_MAX, the softmax sum, and the TL_STATS_* in `what`, the tempered ones at `scale`,
 * i.e. 1 / temperature) in the threads that write the scores, as they write them: the sampler
 * then needs no pass of its own over the vocabulary, and the work is part of the pass and of
 * its time. -1 where the backend cannot (CUDA: tl_engine_keep_top does that on the device). */
int tl_engine_set_stats(tl_engine *e, int on, unsigned what, float scale);
/* The last pass's statistics; NULL when it gathered none, or after a rewind. */
const tl_logit_stats *tl_engine_stats(const tl_engine *e);
const tl_model *tl_engine_model(const tl_engine *e);
const char *tl_engine_device(const tl_engine *e);
/* The kernel set running ("avx2", "neon", ...; the device's name where it has no sets). */
const char *tl_engine_kernels(const tl_engine *e);

/* Wall time of the last pass, measured after the backend synchronized. */
double tl_engine_last_ms(const tl_engine *e);
/* Host clock read when the last pass's launches returned, before synchronizing:
 * the "unsynchronized timing" trap. Negative while the engine is synchronous (the CPU's
 * default mode), where the launches return only when the work is done. */
double tl_engine_last_unsynced_ms(const tl_engine *e);
/* The asynchronous mode, CUDA's semantics on any backend: from the next pass, each operation
 * is queued (on the CPU, to a worker thread, as to a GPU stream) and returns at once, so
 * tl_engine_last_unsynced_ms reads almost nothing while tl_engine_last_ms, taken after the
 * synchronize, still reads the whole pass. Prefill and decode still return with the logits
 * ready, the same bit for bit. CUDA is always asynchronous: turning it off there fails.
 * 0, or -1 with err set (the mode is then unchanged). */
int tl_engine_set_async(tl_engine *e, int on, tl_error *err);
int tl_engine_async(const tl_engine *e);   /* 1: the launches return before the work is done */

/* What a product with bf16 weights reads as its input x (docs/accuracy.md). On AVX-512 BF16
 * an fp32-level x costs two VDPBF16PS per 32 weights, a rounded one one. Rounding q/k/v's
 * input moves the logits most (softmax exponentiates q.k's error), so the default keeps it. */
typedef enum {
    TL_PRECISION_MIXED,    /* the CPU's default: q/k/v keep fp32-level x, every other product rounds */
    TL_PRECISION_EXACT,    /* every product keeps fp32-level x (--exact) */
    TL_PRECISION_BF16,     /* every product rounds x to bf16, as llama.cpp (--bf16-activations) */
    TL_PRECISION_DEVICE,   /* a backend's own rules (CUDA: rounds x only in prefills over 16 tokens) */
} tl_precision;
/* A backend without the choice (CUDA) refuses EXACT and keeps DEVICE for the others.
 * Between passes. 0, or -1 with err. */
int tl_engine_set_precision(tl_engine *e, tl_precision p, tl_error *err);
tl_precision tl_engine_precision(const tl_engine *e);   /* EXACT where the kernels never round */
const char *tl_precision_name(tl_precision p);   /* "mixed", "exact", "bf16", "device" */
const char *tl_precision_text(tl_precision p);   /* one line saying what the products read */
/* The KV cache's element type: TL_F32 (the default) or TL_BF16, which halves the bytes a
 * decode step reads from the cache and rounds K (after RoPE) and V to bf16 (docs/accuracy.md).
 * Replaces the cache: every position is dropped. 0, or -1 with err (a backend without it). */
int tl_engine_set_kv_dtype(tl_engine *e, tl_dtype dt, tl_error *err);
tl_dtype tl_engine_kv_dtype(const tl_engine *e);
/* Bytes a decode step at the current position reads: weights + the KV cache so far. */
double tl_engine_step_bytes(const tl_engine *e);
/* The device memory's copy bandwidth in bytes/s, measured by the backend with its own events
 * (CUDA); <= 0 where the backend has no probe (the CPU: use tl_bandwidth_probe). */
double tl_engine_device_bandwidth(tl_engine *e, double budget_s);

#endif
