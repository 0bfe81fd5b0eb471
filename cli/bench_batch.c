/* tokenloop bench --batch 1,4,16: why servers batch, as a command. The measurement is core's
 * (tl_batch_measure, core/batch_bench.c); this file reads the options and prints the table or
 * the JSON. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "tokenloop/batch.h"
#include "tokenloop/engine.h"
#include "tokenloop/model.h"

#define MAX_SIZES TL_BATCH_SIZES

static const char usage[] =
    "usage: tokenloop bench --batch B1,B2,... (--model DIR | --synthetic NAME) [--prompt-tokens N]\n"
    "                       [--new-tokens N] [--threads N] [--dtype bf16|f16|f32|q8_0|q4_0]\n"
    "                       [--exact | --bf16-activations] [--seed S] [--json]\n"
    "  For each batch size B (1..256), B sequences of N prompt tokens (default 16) each are\n"
    "  prefilled alone, then decode N steps (default 16) together, one token each a step, every\n"
    "  weight read once a step. Reports per B: the step's median time (each stream's TPOT), total\n"
    "  tokens/s, bytes read per token, the floor (the weights read by a plain loop beside each\n"
    "  step) and the compute roof (2 x the products' weights x B at the fastest FLOP/s seen: a\n"
    "  prefill of 64 tokens, or a batched step when faster), and the crossover B where the roof\n"
    "  meets the floor.\n";

typedef struct batch_opts {
    const char *model_dir, *synthetic, *dtype;
    int sizes[MAX_SIZES], n_sizes, prompt_tokens, new_tokens, threads, json;
    tl_precision prec;
    unsigned long long seed;
} batch_opts;

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
                long hi = !strcmp(a, "--new-tokens") ? TL_BATCH_STEPS : !strcmp(a, "--seed") ? 1L << 30 : 4096;
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

static void progress(void *ctx, int step, int steps)
{
    (void)ctx;
    fprintf(stderr, "\rbench: step %d of %d for every batch size%s", step, steps, step == steps ? "\n" : "");
}

static void print_json(const char *name, const tl_model *m, const batch_opts *o, const tl_batch_report *r)
{
    cJSON *j = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(j, "batches");
    cJSON_AddStringToObject(j, "model", name);
    cJSON_AddStringToObject(j, "dtype", tl_dtype_name(m->layers[0].wq.dtype));
    cJSON_AddNumberToObject(j, "weight_bytes", r->weight_bytes);
    cJSON_AddNumberToObject(j, "prompt_tokens", o->prompt_tokens);
    cJSON_AddNumberToObject(j, "new_tokens", o->new_tokens);
    cJSON_AddNumberToObject(j, "peak_gflops", r->peak_flops / 1e9);
    cJSON_AddNumberToObject(j, "crossover_batch", r->crossover);
    const tl_batch_row *base = &r->rows[0];
    for (int i = 0; i < r->n; i++) {
        const tl_batch_row *x = &r->rows[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "batch", x->B);
        cJSON_AddNumberToObject(e, "tpot_ms", x->tpot_ms);
        cJSON_AddNumberToObject(e, "tokens_per_s", x->B / x->tpot_ms * 1e3);
        cJSON_AddNumberToObject(e, "bytes_per_token", x->bytes_per_token);
        cJSON_AddNumberToObject(e, "floor_ms", x->floor_med_ms);
        cJSON_AddNumberToObject(e, "roof_ms", x->roof_ms);
        cJSON_AddNumberToObject(e, "tpot_over_floor", x->over_floor);
        cJSON_AddNumberToObject(e, "tpot_vs_first", x->vs_first);
        cJSON_AddNumberToObject(e, "tokens_per_s_vs_first", (double)x->B / base->B / x->vs_first);
        cJSON_AddItemToObject(e, "tpot_ms_steps", cJSON_CreateDoubleArray(x->step_ms, r->steps));
        cJSON_AddItemToArray(arr, e);
    }
    char *txt = cJSON_PrintUnformatted(j);
    if (txt)
        puts(txt);
    free(txt);
    cJSON_Delete(j);
}

static void print_table(const char *name, const tl_model *m, const tl_batch_report *r)
{
    const tl_batch_row *base = &r->rows[0];
    printf("model     %s (%s), %.2f GB of weights read once per step\n", name, tl_dtype_name(m->layers[0].wq.dtype),
           r->weight_bytes / 1e9);
    printf("compute   %.1f GFLOP/s (the fastest products seen: a 64-token prefill or a batched step): the\n"
           "          roof; crossover at B = %.1f\n", r->peak_flops / 1e9, r->crossover);
    printf("%5s %10s %12s %13s %10s %10s %9s %9s %9s\n", "B", "TPOT ms", "tokens/s", "bytes/token", "floor ms",
           "roof ms", "TPOT/fl", "TPOT/1st", "tok/s/1st");
    for (int i = 0; i < r->n; i++) {
        const tl_batch_row *x = &r->rows[i];
        printf("%5d %10.2f %12.1f %12.3gB %10.2f %10.2f %9.2f %9.2f %9.2f\n", x->B, x->tpot_ms,
               x->B / x->tpot_ms * 1e3, x->bytes_per_token, x->floor_med_ms, x->roof_ms, x->over_floor, x->vs_first,
               (double)x->B / base->B / x->vs_first);
    }
}

int cmd_bench_batch(int argc, char **argv)
{
    if (cli_help(argc, argv, usage))
        return 0;
    batch_opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    tl_error err = {{0}};
    tl_model *m = NULL;
    double convert_s;
    if ((rc = cli_open_model(&m, o.model_dir, o.synthetic, o.dtype, o.seed, (int64_t)o.prompt_tokens + o.new_tokens,
                             o.json, &convert_s)))
        return rc;
    tl_model_copy_to_hugepages(m, TL_HUGEPAGE_MIN);
    tl_batch_opts bo = {.n_sizes = o.n_sizes, .prompt_tokens = o.prompt_tokens, .steps = o.new_tokens,
                        .threads = o.threads, .precision = o.prec, .seed = o.seed,
                        .progress = o.json ? NULL : progress};
    memcpy(bo.sizes, o.sizes, sizeof(int) * (size_t)o.n_sizes);
    tl_batch_report *r = malloc(sizeof *r);
    if (!r || tl_batch_measure(m, &bo, r, &err)) {
        free(r);
        tl_model_free(m);
        return cli_fail(1, "%s", r ? err.msg : "bench --batch: out of memory");
    }
    const char *name = o.synthetic ? o.synthetic : o.model_dir;
    if (o.json)
        print_json(name, m, &o, r);
    else
        print_table(name, m, r);
    free(r);
    tl_model_free(m);
    return 0;
}
