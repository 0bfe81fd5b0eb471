/* Why servers batch, measured (tokenloop/batch.h). For each batch size B, B sequences are
 * prefilled alone, then decode together, one token each a step, every weight read once a step.
 * Right after each step a plain loop reads the same weights (the floor at that moment, as
 * `tokenloop bench` times it); the compute roof is the products' arithmetic at the fastest rate
 * seen here (a 64-token prefill, or a batched step that went faster). While the step stays near the floor, tokens/s grows with B for free;
 * the crossover is the B whose arithmetic takes as long as the read, past which B costs time. */
#include <stdlib.h>
#include <string.h>

#include "tokenloop/bandwidth.h"
#include "tokenloop/batch.h"
#include "tokenloop/system.h"

#define ROOF_TOKENS 64

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
    double s[TL_BATCH_STEPS];
    memcpy(s, v, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

/* Weights a token's products multiply (every layer's seven matrices, and the lm_head apart). */
static double product_params(const tl_model *m, double *lm_head)
{
    double p = 0;
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const tl_layer *L = &m->layers[l];
        const tl_weight *w[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
            p += (double)w[i]->rows * (double)w[i]->cols;
    }
    *lm_head = (double)m->lm_head.rows * (double)m->lm_head.cols;
    return p;
}

void tl_batch_prompt_ids(int *ids, int n, unsigned long long seed, const tl_config *c)
{
    unsigned long long s = seed * 6364136223846793005ull + 1442695040888963407ull;
    for (int i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = (int)((s >> 33) % (unsigned long long)c->vocab_size);
    }
    if (c->bos_id >= 0 && c->bos_id < c->vocab_size)
        ids[0] = c->bos_id;
}

/* The FLOP/s of the products in a prefill of ROOF_TOKENS tokens, the best of two; a prefill
 * reads each weight once for all its tokens, so its rate is the arithmetic's. */
static double measure_peak(const tl_model *m, const tl_batch_opts *o, tl_error *err)
{
    tl_engine *e = NULL;
    int ids[ROOF_TOKENS];
    double lm, p = product_params(m, &lm), best = 0;
    tl_batch_prompt_ids(ids, ROOF_TOKENS, o->seed + 999, &m->cfg);
    if (tl_engine_create(&e, m, tl_backend_cpu(), o->threads, ROOF_TOKENS, err) ||
        tl_engine_set_precision(e, o->precision, err)) {
        tl_engine_free(e);
        return -1;
    }
    for (int r = 0; r < 2; r++) {
        tl_engine_rewind(e, tl_engine_pos(e));
        if (tl_engine_prefill(e, ids, ROOF_TOKENS, err)) {
            tl_engine_free(e);
            return -1;
        }
        double rate = 2.0 * (p * ROOF_TOKENS + lm) / (tl_engine_last_ms(e) * 1e-3);
        if (rate > best)
            best = rate;
    }
    tl_engine_free(e);
    return best;
}

/* One batch size's sequences. */
typedef struct group {
    int B;
    tl_engine **es;
    int *ids;
    double kv_bytes;   /* one sequence's KV rows, summed over the steps */
} group;

static void group_free(group *g)
{
    for (int b = 0; g->es && b < g->B; b++)
        tl_engine_free(g->es[b]);   /* calloc'd: the ones never made are NULL */
    free(g->es);
    free(g->ids);
}

/* B engines, each prefilled alone with its own prompt; the first leads the batch. */
static int group_make(group *g, const tl_model *m, const tl_batch_opts *o, int B, tl_error *err)
{
    int cap = o->prompt_tokens + o->steps, n = B > o->prompt_tokens ? B : o->prompt_tokens;
    *g = (group){.B = B};
    g->es = calloc((size_t)B, sizeof *g->es);
    g->ids = malloc(sizeof(int) * (size_t)n);
    if (!g->es || !g->ids)
        return tl_error_set(err, "batch: out of memory");
    for (int b = 0; b < B; b++) {
        int c = b == 0 && cap < B ? B : cap;   /* the leader's buffers hold B rows */
        if (tl_engine_create(&g->es[b], m, tl_backend_cpu(), o->threads, c, err) ||
            tl_engine_set_precision(g->es[b], o->precision, err) || tl_engine_keep_top(g->es[b], 1))
            return -1;
        tl_batch_prompt_ids(g->ids, o->prompt_tokens, o->seed + (unsigned long long)b, &m->cfg);
        if (tl_engine_prefill(g->es[b], g->ids, o->prompt_tokens, err))
            return -1;
    }
    if (B > tl_engine_batch_max(g->es[0]))
        return tl_error_set(err, "batch %d: at most %d sequences a step on this backend", B,
                            tl_engine_batch_max(g->es[0]));
    return 0;
}

/* Step k of a group: every sequence's greedy token in one batched pass, then the floor. */
static int group_step(group *g, tl_batch_row *row, int k, const tl_model *m, int threads, const tl_mem_region *regions,
                      int n_regions, tl_error *err)
{
    for (int b = 0; b < g->B; b++)
        g->ids[b] = tl_engine_argmax(g->es[b]);
    g->kv_bytes += tl_engine_step_bytes(g->es[0]) - (double)m->weight_bytes;
    double t0 = tl_now_ms();
    if (tl_engine_decode_batch(g->es, g->ids, g->B, err))
        return -1;
    row->step_ms[k] = tl_now_ms() - t0;
    row->floor_ms[k] = tl_bandwidth_read(regions, n_regions, threads) * 1e3;
    return 0;
}

static int check_opts(const tl_batch_opts *o, tl_error *err)
{
    if (o->n_sizes < 1 || o->n_sizes > TL_BATCH_SIZES)
        return tl_error_set(err, "batch: %d sizes (1..%d)", o->n_sizes, TL_BATCH_SIZES);
    for (int i = 0; i < o->n_sizes; i++)
        if (o->sizes[i] < 1 || o->sizes[i] > 256)
            return tl_error_set(err, "batch: size %d (1..256)", o->sizes[i]);
    if (o->steps < 1 || o->steps > TL_BATCH_STEPS)
        return tl_error_set(err, "batch: %d steps (1..%d)", o->steps, TL_BATCH_STEPS);
    if (o->prompt_tokens < 1)
        return tl_error_set(err, "batch: a prompt of %d tokens", o->prompt_tokens);
    return 0;
}

int tl_batch_measure(const tl_model *m, const tl_batch_opts *o, tl_batch_report *out, tl_error *err)
{
    memset(out, 0, sizeof *out);
    if (check_opts(o, err))
        return -1;
    if (o->prompt_tokens + o->steps > m->cfg.max_position_embeddings)
        return tl_error_set(err, "batch: %d positions exceed the context of %d", o->prompt_tokens + o->steps,
                            m->cfg.max_position_embeddings);
    tl_mem_region *regions = malloc(sizeof(tl_mem_region) * (size_t)tl_bandwidth_model_max(m));
    if (!regions)
        return tl_error_set(err, "batch: out of memory");
    int n_regions = tl_bandwidth_model_regions(m, regions), rc = -1;
    group g[TL_BATCH_SIZES] = {{0}};
    out->peak_flops = measure_peak(m, o, err);
    if (out->peak_flops <= 0)
        goto done;
    for (int i = 0; i < o->n_sizes; i++)
        if (group_make(&g[i], m, o, o->sizes[i], err))
            goto done;
    for (int k = 0; k < o->steps; k++) {
        for (int i = 0; i < o->n_sizes; i++)
            if (group_step(&g[i], &out->rows[i], k, m, o->threads, regions, n_regions, err))
                goto done;
        if (o->progress)
            o->progress(o->progress_ctx, k + 1, o->steps);
    }
    double lm, p = product_params(m, &lm), ratio[TL_BATCH_STEPS];
    /* The roof is the fastest arithmetic seen: a batched step that beat the prefill's rate
     * (under a shared machine's load, or with the few-token kernels) raises it, so no step
     * is ever shown faster than its own arithmetic allows. */
    for (int i = 0; i < o->n_sizes; i++)
        for (int k = 0; k < o->steps; k++) {
            double rate = 2.0 * (p + lm) * g[i].B / (out->rows[i].step_ms[k] * 1e-3);
            if (rate > out->peak_flops)
                out->peak_flops = rate;
        }
    out->n = o->n_sizes;
    out->steps = o->steps;
    out->weight_bytes = (double)m->weight_bytes;
    out->product_params = p + lm;
    for (int i = 0; i < o->n_sizes; i++) {
        tl_batch_row *r = &out->rows[i];
        r->B = g[i].B;
        for (int k = 0; k < o->steps; k++)
            ratio[k] = r->step_ms[k] / out->rows[0].step_ms[k];
        r->vs_first = median(ratio, o->steps);
        for (int k = 0; k < o->steps; k++)
            ratio[k] = r->step_ms[k] / r->floor_ms[k];
        r->over_floor = median(ratio, o->steps);
        r->tpot_ms = median(r->step_ms, o->steps);
        r->floor_med_ms = median(r->floor_ms, o->steps);
        r->roof_ms = 2.0 * (p + lm) * r->B / out->peak_flops * 1e3;
        r->bytes_per_token = ((double)m->weight_bytes + r->B * g[i].kv_bytes / o->steps) / r->B;
    }
    out->crossover = out->rows[0].floor_med_ms * 1e-3 * out->peak_flops / (2.0 * (p + lm));
    rc = 0;
done:
    for (int i = 0; i < o->n_sizes; i++)
        group_free(&g[i]);
    free(regions);
    return rc;
}
