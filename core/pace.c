/* The pace law, measured (tokenloop/pace.h). Each run prefills the same random prompt, then
 * decodes greedily; right after each decode a plain loop reads the same weights (the floor at
 * that moment, as `tokenloop bench` times it), outside the decode's clock. */
#include <stdlib.h>
#include <string.h>

#include "tokenloop/bandwidth.h"
#include "tokenloop/metrics.h"
#include "tokenloop/pace.h"
#include "tokenloop/system.h"

static int check_opts(int n, const tl_pace_opts *o, tl_error *err)
{
    if (n < 1 || n > TL_PACE_MODELS)
        return tl_error_set(err, "pace: %d models (1..%d)", n, TL_PACE_MODELS);
    if (o->runs < 1 || o->runs > TL_PACE_RUNS)
        return tl_error_set(err, "pace: %d runs (1..%d)", o->runs, TL_PACE_RUNS);
    if (o->steps < 2 || o->steps > TL_PACE_STEPS)
        return tl_error_set(err, "pace: %d steps (2..%d)", o->steps, TL_PACE_STEPS);
    if (o->prompt_tokens < 1 || o->prompt_tokens > 256)
        return tl_error_set(err, "pace: a prompt of %d tokens (1..256)", o->prompt_tokens);
    return 0;
}

/* One model's engine and the plain read of its weights. */
typedef struct lane {
    tl_engine *e;
    tl_mem_region *regions;
    int n_regions;
} lane;

static int lane_make(lane *ln, const tl_model *m, const tl_pace_opts *o, tl_error *err)
{
    *ln = (lane){0};
    ln->regions = malloc(sizeof(tl_mem_region) * (size_t)tl_bandwidth_model_max(m));
    if (!ln->regions)
        return tl_error_set(err, "pace: out of memory");
    ln->n_regions = tl_bandwidth_model_regions(m, ln->regions);
    if (tl_engine_create(&ln->e, m, tl_backend_cpu(), o->threads, o->prompt_tokens + o->steps, err) ||
        tl_engine_set_precision(ln->e, o->precision, err) || tl_engine_keep_top(ln->e, 1))
        return -1;
    return 0;
}

static void lane_free(lane *ln)
{
    tl_engine_free(ln->e);
    free(ln->regions);
}

/* Run r of one model: from an empty cache, the prefill, then the decodes, each followed by a read. */
static int run_once(lane *ln, tl_pace_row *row, int r, const int *ids, const tl_pace_opts *o, tl_error *err)
{
    double later[TL_PACE_STEPS];
    tl_engine_rewind(ln->e, tl_engine_pos(ln->e));
    double t0 = tl_now_ms();
    if (tl_engine_prefill(ln->e, ids, o->prompt_tokens, err))
        return -1;
    row->prefill_ms[r] = tl_now_ms() - t0;
    for (int k = 0; k < o->steps; k++) {
        int id = tl_engine_argmax(ln->e);
        t0 = tl_now_ms();
        if (tl_engine_decode(ln->e, id, err))
            return -1;
        double ms = tl_now_ms() - t0;
        double read = tl_bandwidth_read(ln->regions, ln->n_regions, o->threads) * 1e3;
        row->read_ms[row->n_reads++] = read;
        if (k == 0) {
            row->first_ms[r] = ms;
            continue;
        }
        later[k - 1] = ms;
        row->over[row->n_over++] = ms / read;
    }
    row->decode_ms[r] = tl_median(later, o->steps - 1);   /* later is this run's own */
    row->step_bytes = tl_engine_step_bytes(ln->e);
    return 0;
}

/* tl_median sorts what it is given: a copy keeps each run's figures in run order. */
static double median_of(const double *v, int n)
{
    double s[TL_PACE_RUNS * TL_PACE_STEPS];
    memcpy(s, v, sizeof(double) * (size_t)n);
    return tl_median(s, n);
}

static void summarize(tl_pace_row *row, int runs)
{
    row->tpot_ms = median_of(row->decode_ms, runs);
    row->prefill_med_ms = median_of(row->prefill_ms, runs);
    row->first_med_ms = median_of(row->first_ms, runs);
    row->floor_ms = median_of(row->read_ms, row->n_reads);
    row->over_floor = median_of(row->over, row->n_over);
    row->floor_lo_ms = row->floor_hi_ms = row->read_ms[0];
    for (int i = 1; i < row->n_reads; i++) {
        if (row->read_ms[i] < row->floor_lo_ms) row->floor_lo_ms = row->read_ms[i];
        if (row->read_ms[i] > row->floor_hi_ms) row->floor_hi_ms = row->read_ms[i];
    }
}

int tl_pace_measure(const tl_model *const *models, int n, const tl_pace_opts *o, tl_pace_report *out,
                    tl_error *err)
{
    memset(out, 0, sizeof *out);
    if (check_opts(n, o, err))
        return -1;
    const tl_config *c = &models[0]->cfg;
    if (o->prompt_tokens + o->steps > c->max_position_embeddings)
        return tl_error_set(err, "pace: %d positions exceed the context of %d", o->prompt_tokens + o->steps,
                            c->max_position_embeddings);
    int ids[256];
    unsigned long long s = o->seed * 6364136223846793005ull + 1442695040888963407ull;
    for (int i = 0; i < o->prompt_tokens; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = (int)((s >> 33) % (unsigned long long)c->vocab_size);
    }
    if (c->bos_id >= 0 && c->bos_id < c->vocab_size)
        ids[0] = c->bos_id;
    lane ln[TL_PACE_MODELS] = {{0}};
    int rc = -1;
    for (int i = 0; i < n; i++) {
        out->rows[i].dtype = models[i]->layers[0].wq.dtype;
        out->rows[i].weight_bytes = (double)models[i]->weight_bytes;
        if (lane_make(&ln[i], models[i], o, err))
            goto done;
    }
    for (int r = 0; r < o->runs; r++)
        for (int j = 0; j < n; j++) {
            int i = (r + j) % n;
            if (run_once(&ln[i], &out->rows[i], r, ids, o, err))
                goto done;
        }
    for (int i = 0; i < n; i++)
        summarize(&out->rows[i], o->runs);
    out->n = n;
    out->runs = o->runs;
    out->steps = o->steps;
    out->prompt_tokens = o->prompt_tokens;
    rc = 0;
done:
    for (int i = 0; i < n; i++)
        lane_free(&ln[i]);
    return rc;
}
