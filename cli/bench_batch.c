/* tokenloop bench --batch 1,4,16: why servers batch. For each batch size B, B sequences step
 * together through tl_engine_decode_batch, so each weight matrix is read once per step for all
 * of them. Per B it reports the step time (each stream's TPOT: a stream gets one token a step),
 * the total tokens/s, the bytes read per token, the memory floor (the weights read by a plain
 * loop beside each step, as `bench` does) and the compute roof (the products' arithmetic at the
 * rate this machine's prefill reaches, measured first). While the step stays near the floor,
 * tokens/s grows with B for free; the crossover is the B where the arithmetic of a step takes
 * as long as reading the weights, past which B costs time. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "tokenloop/bandwidth.h"
#include "tokenloop/engine.h"
#include "tokenloop/model.h"
#include "tokenloop/synthetic.h"
#include "tokenloop/system.h"

#define MAX_SIZES 16
#define ROOF_TOKENS 64

static const char usage[] =
    "usage: tokenloop bench --batch B1,B2,... (--model DIR | --synthetic NAME) [--prompt-tokens N]\n"
    "                       [--new-tokens N] [--threads N] [--dtype bf16|f16|f32|q8_0|q4_0]\n"
    "                       [--exact | --bf16-activations] [--seed S] [--json]\n"
    "  For each batch size B (1..256), B sequences of N prompt tokens (default 16) each are\n"
    "  prefilled alone, then decode N steps (default 16) together, one token each a step, every\n"
    "  weight read once a step. Reports per B: the step's median time (each stream's TPOT), total\n"
    "  tokens/s, bytes read per token, the floor (the weights read by a plain loop beside each\n"
    "  step) and the compute roof (2 x the products' weights x B at the FLOP/s of a prefill of\n"
    "  64 tokens, measured first), and the crossover B where the roof meets the floor.\n";

typedef struct batch_opts {
    const char *model_dir, *synthetic, *dtype;
    int sizes[MAX_SIZES], n_sizes, prompt_tokens, new_tokens, threads, json;
    tl_precision prec;
    unsigned long long seed;
} batch_opts;

typedef struct batch_row {
    int B;
    double step_ms, floor_ms, roof_ms, bytes_per_token;
    double vs_first, over_floor;   /* medians of the rounds' ratios: to the first size's step, to the floor */
} batch_row;

static int parse_sizes(const char *v, batch_opts *o)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
    o->n_sizes = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        long b;
        if (o->n_sizes == MAX_SIZES || cli_parse_int(t, 1, 256, &b))
            return cli_fail(2, "--batch: '%s' is not a list of at most %d sizes in [1, 256]", v, MAX_SIZES);
        o->sizes[o->n_sizes++] = (int)b;
    }
    if (!o->n_sizes)
        return cli_fail(2, "--batch: '%s' names no batch size", v);
    return 0;
}

static int parse(int argc, char **argv, batch_opts *o)
{
    *o = (batch_opts){.prompt_tokens = 16, .new_tokens = 16, .seed = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int pf;
        long v;
        if (!strcmp(a, "--json")) {
            o->json = 1;
        } else if ((pf = cli_precision_flag(a, &o->prec)) != 0) {
            if (pf < 0)
                return 2;
        } else if (!strcmp(a, "--batch") || !strcmp(a, "--model") || !strcmp(a, "--synthetic") ||
                   !strcmp(a, "--prompt-tokens") || !strcmp(a, "--new-tokens") || !strcmp(a, "--threads") ||
                   !strcmp(a, "--dtype") || !strcmp(a, "--seed")) {
            if (i + 1 >= argc)
                return cli_fail(2, "%s: needs a value", a);
            const char *s = argv[++i];
            tl_dtype dt;
            if (!strcmp(a, "--batch")) {
                if (parse_sizes(s, o))
                    return 2;
            } else if (!strcmp(a, "--model")) o->model_dir = s;
            else if (!strcmp(a, "--synthetic")) o->synthetic = s;
            else if (!strcmp(a, "--dtype")) {
                if (tl_dtype_parse(s, &dt))
                    return cli_fail(2, "--dtype: '%s' is not bf16, f16, f32, q8_0 or q4_0", s);
                o->dtype = s;
            } else {
                long hi = !strcmp(a, "--threads") ? 4096 : !strcmp(a, "--seed") ? 1L << 30 : 4096;
                long lo = !strcmp(a, "--threads") || !strcmp(a, "--seed") ? 0 : 1;
                if (cli_parse_int(s, lo, hi, &v))
                    return cli_fail(2, "%s: '%s' is not an integer in [%ld, %ld]", a, s, lo, hi);
                if (!strcmp(a, "--prompt-tokens")) o->prompt_tokens = (int)v;
                else if (!strcmp(a, "--new-tokens")) o->new_tokens = (int)v;
                else if (!strcmp(a, "--threads")) o->threads = (int)v;
                else o->seed = (unsigned long long)v;
            }
        } else {
            fputs(usage, stderr);
            return cli_fail(2, "%s: unknown option", a);
        }
    }
    if (!o->n_sizes)
        return cli_fail(2, "bench --batch: needs a list of batch sizes, e.g. --batch 1,4,16");
    if (!o->model_dir == !o->synthetic) {
        fputs(usage, stderr);
        return cli_fail(2, "bench --batch: give exactly one of --model DIR and --synthetic NAME");
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Weights a token's products multiply (every layer's seven matrices and the lm_head): a step of
 * B tokens does 2 x this x B FLOPs, a prefill of T tokens about 2 x (layers' x T + lm_head). */
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

static void random_ids(int *ids, int n, unsigned long long seed, const tl_config *c)
{
    unsigned long long s = seed * 6364136223846793005ull + 1442695040888963407ull;
    for (int i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = (int)((s >> 33) % (unsigned long long)c->vocab_size);
    }
    if (c->bos_id >= 0 && c->bos_id < c->vocab_size)
        ids[0] = c->bos_id;
}

/* The FLOP/s of the products in a prefill of ROOF_TOKENS tokens: the best of two. */
static double measure_peak(const tl_model *m, const batch_opts *o, tl_error *err)
{
    tl_engine *e = NULL;
    int ids[ROOF_TOKENS];
    double lm, p = product_params(m, &lm), best = 0;
    random_ids(ids, ROOF_TOKENS, o->seed + 999, &m->cfg);
    if (tl_engine_create(&e, m, tl_backend_cpu(), o->threads, ROOF_TOKENS, err) ||
        tl_engine_set_precision(e, o->prec, err)) {
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

static int best_id(const tl_engine *e)
{
    int id = 0;
    float v;
    double z;
    return tl_engine_top(e, 1, &id, &v, &z) == 1 ? id : 0;
}

/* One batch size's sequences, and what each round measured. */
typedef struct group {
    int B;
    tl_engine **es;
    int *ids;
    double *steps, *floors, kv_bytes;
} group;

static void group_free(group *g)
{
    for (int b = 0; g->es && b < g->B; b++)
        tl_engine_free(g->es[b]);   /* calloc'd: the ones never made are NULL */
    free(g->es);
    free(g->ids);
    free(g->steps);
    free(g->floors);
}

/* B engines, each prefilled alone with its own prompt; the first leads the batch. */
static int group_make(group *g, const tl_model *m, const batch_opts *o, int B, tl_error *err)
{
    int cap = o->prompt_tokens + o->new_tokens, n = B > o->prompt_tokens ? B : o->prompt_tokens;
    *g = (group){.B = B};
    g->es = calloc((size_t)B, sizeof *g->es);
    g->ids = malloc(sizeof(int) * (size_t)n);
    g->steps = malloc(sizeof(double) * (size_t)o->new_tokens);
    g->floors = malloc(sizeof(double) * (size_t)o->new_tokens);
    if (!g->es || !g->ids || !g->steps || !g->floors)
        return tl_error_set(err, "bench --batch: out of memory");
    for (int b = 0; b < B; b++) {
        int c = b == 0 && cap < B ? B : cap;   /* the leader's buffers hold B rows */
        if (tl_engine_create(&g->es[b], m, tl_backend_cpu(), o->threads, c, err) ||
            tl_engine_set_precision(g->es[b], o->prec, err) || tl_engine_keep_top(g->es[b], 1))
            return -1;
        random_ids(g->ids, o->prompt_tokens, o->seed + (unsigned long long)b, &m->cfg);
        if (tl_engine_prefill(g->es[b], g->ids, o->prompt_tokens, err))
            return -1;
    }
    if (B > tl_engine_batch_max(g->es[0]))
        return tl_error_set(err, "--batch %d: at most %d sequences a step on this backend", B,
                            tl_engine_batch_max(g->es[0]));
    return 0;
}

/* Step k of a group: every sequence's greedy token in one batched pass, then the floor: the
 * same weights read by a plain loop right after it. */
static int group_step(group *g, int k, const tl_model *m, const batch_opts *o, const tl_mem_region *regions,
                      int n_regions, tl_error *err)
{
    for (int b = 0; b < g->B; b++)
        g->ids[b] = best_id(g->es[b]);
    g->kv_bytes += tl_engine_step_bytes(g->es[0]) - (double)m->weight_bytes;   /* one sequence's rows */
    double t0 = tl_now_ms();
    if (tl_engine_decode_batch(g->es, g->ids, g->B, err))
        return -1;
    g->steps[k] = tl_now_ms() - t0;
    g->floors[k] = tl_bandwidth_read(regions, n_regions, o->threads) * 1e3;
    return 0;
}

/* The sizes alternate step by step, so a machine whose bandwidth drifts (a shared one) moves
 * them all alike; each size's ratios to the first are taken round by round. */
static int run_sizes(const tl_model *m, const batch_opts *o, const tl_mem_region *regions, int n_regions,
                     double peak, batch_row *rows, tl_error *err)
{
    group g[MAX_SIZES] = {{0}};
    int rc = -1, N = o->new_tokens;
    double *ratio = malloc(sizeof(double) * (size_t)N);
    for (int i = 0; i < o->n_sizes; i++)
        if (group_make(&g[i], m, o, o->sizes[i], err))
            goto out;
    if (!ratio) {
        tl_error_set(err, "bench --batch: out of memory");
        goto out;
    }
    for (int k = 0; k < N; k++) {
        if (!o->json)
            fprintf(stderr, "\rbench: step %d of %d for every batch size", k + 1, N);
        for (int i = 0; i < o->n_sizes; i++)
            if (group_step(&g[i], k, m, o, regions, n_regions, err))
                goto out;
    }
    if (!o->json)
        fputc('\n', stderr);
    double lm, p = product_params(m, &lm);
    for (int i = 0; i < o->n_sizes; i++) {
        batch_row *r = &rows[i];
        r->B = g[i].B;
        for (int k = 0; k < N; k++)
            ratio[k] = g[i].steps[k] / g[0].steps[k];
        r->vs_first = median(ratio, N);
        for (int k = 0; k < N; k++)
            ratio[k] = g[i].steps[k] / g[i].floors[k];
        r->over_floor = median(ratio, N);
        r->step_ms = median(g[i].steps, N);
        r->floor_ms = median(g[i].floors, N);
        r->roof_ms = 2.0 * (p + lm) * r->B / peak * 1e3;
        r->bytes_per_token = ((double)m->weight_bytes + r->B * g[i].kv_bytes / N) / r->B;
    }
    rc = 0;
out:
    for (int i = 0; i < o->n_sizes; i++)
        group_free(&g[i]);
    free(ratio);
    return rc;
}

int cmd_bench_batch(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return 0;
        }
    batch_opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    tl_error err = {{0}};
    tl_model *m = NULL;
    if (o.synthetic) {
        tl_config cfg;
        if (tl_synthetic_config(&cfg, o.synthetic, &err))
            return cli_fail(2, "--synthetic %s", err.msg);
        if (!o.json)
            fprintf(stderr, "bench: filling %s with random bf16 weights...\n", o.synthetic);
        if (tl_model_synthetic(&m, &cfg, TL_BF16, o.seed, &err))
            return cli_fail(1, "%s", err.msg);
    } else if (tl_model_load(&m, o.model_dir, &err)) {
        return cli_fail(1, "%s", err.msg);
    }
    tl_dtype want;
    if (o.dtype && !tl_dtype_parse(o.dtype, &want) && want != m->layers[0].wq.dtype) {
        tl_model *conv;
        if (tl_model_convert(&conv, m, want, &err)) {
            tl_model_free(m);
            return cli_fail(1, "%s", err.msg);
        }
        tl_model_free(m);
        m = conv;
    }
    tl_model_copy_to_hugepages(m, TL_HUGEPAGE_MIN);
    if (o.prompt_tokens + o.new_tokens > m->cfg.max_position_embeddings) {
        tl_model_free(m);
        return cli_fail(2, "--prompt-tokens + --new-tokens: %d positions exceed the context of %d",
                        o.prompt_tokens + o.new_tokens, m->cfg.max_position_embeddings);
    }
    batch_row rows[MAX_SIZES];
    tl_mem_region *regions = malloc(sizeof(tl_mem_region) * (size_t)tl_bandwidth_model_max(m));
    double peak = regions ? measure_peak(m, &o, &err) : -1;
    if (!regions || peak <= 0) {
        free(regions);
        tl_model_free(m);
        return cli_fail(1, "%s", regions ? err.msg : "bench --batch: out of memory");
    }
    int n_regions = tl_bandwidth_model_regions(m, regions);
    rc = run_sizes(m, &o, regions, n_regions, peak, rows, &err);
    free(regions);
    if (rc) {
        tl_model_free(m);
        return cli_fail(1, "%s", err.msg);
    }
    /* The crossover: the B whose arithmetic at the measured rate takes as long as the read. */
    double lm, p = product_params(m, &lm);
    double floor1 = rows[0].floor_ms, crossover = floor1 * 1e-3 * peak / (2.0 * (p + lm));
    /* The first size listed is the baseline of the ratios (B = 1 when it is listed first). */
    const batch_row *base = &rows[0];
    const char *name = o.synthetic ? o.synthetic : o.model_dir;
    if (o.json) {
        cJSON *j = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(j, "batches");
        cJSON_AddStringToObject(j, "model", name);
        cJSON_AddStringToObject(j, "dtype", tl_dtype_name(m->layers[0].wq.dtype));
        cJSON_AddNumberToObject(j, "weight_bytes", (double)m->weight_bytes);
        cJSON_AddNumberToObject(j, "prompt_tokens", o.prompt_tokens);
        cJSON_AddNumberToObject(j, "new_tokens", o.new_tokens);
        cJSON_AddNumberToObject(j, "peak_gflops", peak / 1e9);
        cJSON_AddNumberToObject(j, "crossover_batch", crossover);
        for (int i = 0; i < o.n_sizes; i++) {
            const batch_row *r = &rows[i];
            cJSON *x = cJSON_CreateObject();
            cJSON_AddNumberToObject(x, "batch", r->B);
            cJSON_AddNumberToObject(x, "tpot_ms", r->step_ms);
            cJSON_AddNumberToObject(x, "tokens_per_s", r->B / r->step_ms * 1e3);
            cJSON_AddNumberToObject(x, "bytes_per_token", r->bytes_per_token);
            cJSON_AddNumberToObject(x, "floor_ms", r->floor_ms);
            cJSON_AddNumberToObject(x, "roof_ms", r->roof_ms);
            cJSON_AddNumberToObject(x, "tpot_over_floor", r->over_floor);
            cJSON_AddNumberToObject(x, "tpot_vs_first", r->vs_first);
            cJSON_AddNumberToObject(x, "tokens_per_s_vs_first", (double)r->B / base->B / r->vs_first);
            cJSON_AddItemToArray(arr, x);
        }
        char *txt = cJSON_PrintUnformatted(j);
        if (txt)
            puts(txt);
        free(txt);
        cJSON_Delete(j);
    } else {
        printf("model     %s (%s), %.2f GB of weights read once per step\n", name,
               tl_dtype_name(m->layers[0].wq.dtype), (double)m->weight_bytes / 1e9);
        printf("compute   %.1f GFLOP/s (a prefill of %d tokens): the roof; crossover at B = %.1f\n", peak / 1e9,
               ROOF_TOKENS, crossover);
        printf("%5s %10s %12s %13s %10s %10s %9s %9s %9s\n", "B", "TPOT ms", "tokens/s", "bytes/token",
               "floor ms", "roof ms", "TPOT/fl", "TPOT/1st", "tok/s/1st");
        for (int i = 0; i < o.n_sizes; i++) {
            const batch_row *r = &rows[i];
            printf("%5d %10.2f %12.1f %12.3gB %10.2f %10.2f %9.2f %9.2f %9.2f\n", r->B, r->step_ms,
                   r->B / r->step_ms * 1e3, r->bytes_per_token, r->floor_ms, r->roof_ms, r->over_floor, r->vs_first,
                   (double)r->B / base->B / r->vs_first);
        }
    }
    tl_model_free(m);
    return 0;
}
