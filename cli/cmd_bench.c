/* tokenloop bench: time the forward passes of a model (a checkpoint, or a published shape with
 * random weights) through the engine's step API and set decode against the memory-bandwidth
 * floor: a decode step must read every weight and the KV cache so far once, so it cannot take
 * less than step bytes / read bandwidth.
 * On the CPU the floor is measured next to each step: right after it, a plain read loop goes
 * through the same weights (the same bytes, in the same pages, with as many threads), and the
 * step is set against that read's time scaled to the step's bytes. A shared machine's bandwidth
 * drifts by 2x within seconds here, so a floor probed once, elsewhere, compares a step with
 * another moment. The 256 MiB probe's best pass is still reported (probe_floor_ms). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "tokenloop/backend.h"
#include "tokenloop/bandwidth.h"
#include "tokenloop/batch.h"
#include "tokenloop/engine.h"
#include "tokenloop/model.h"
#include "tokenloop/system.h"

static const char usage[] =
    "usage: tokenloop bench (--model DIR | --synthetic NAME) [--prompt-tokens N] [--new-tokens N]\n"
    "                       [--threads N] [--device cpu|cuda] [--async] [--exact | --bf16-activations]\n"
    "                       [--dtype bf16|f16|f32|q8_0|q4_0] [--kv-cache fp32|bf16] [--seed S] [--json]\n"
    "       tokenloop bench --tokenizer ...   (the tokenizer benchmark; see its --help)\n"
    "       tokenloop bench --template ...    (the template engine benchmark; see its --help)\n"
    "       tokenloop bench --sampler ...     (the sampler's cost per step; see its --help)\n"
    "       tokenloop bench --batch 1,4,16 ...  (B streams decoding together; see its --help)\n"
    "  Runs one prefill of N prompt tokens (default 64) and N decode steps (default 32) and\n"
    "  reports TTFT, TPOT (median and p90), the bytes a decode step reads, this machine's\n"
    "  memory read bandwidth, the floor bytes / bandwidth and TPOT / floor. On the CPU the floor\n"
    "  is measured beside each step: a plain read loop over the same weights right after it\n"
    "  (TPOT / floor is the median of those pairs); a 256 MiB probe's best pass is shown too.\n"
    "  --synthetic: a published shape with random bf16 weights in memory (llama-3.2-1b,\n"
    "  llama-3.1-8b, tiny, small); no file is read. --threads: CPU threads (default: all cores).\n"
    "  --async: the CPU queues each pass to a worker thread as a GPU stream does; the decode\n"
    "  steps are then also timed the wrong way, before synchronizing (always so on cuda).\n"
    "  --exact: fp32 activations in every product with bf16 weights. Default: q/k/v keep them and\n"
    "  the other products round them to bf16. --bf16-activations: every product rounds them, as\n"
    "  llama.cpp and a bf16 transformers run do (docs/accuracy.md).\n"
    "  --dtype: convert the weights after loading (llama.cpp's Q8_0/Q4_0 blocks): the step reads\n"
    "  fewer bytes, and the floor is computed from those.\n"
    "  --kv-cache bf16: K and V kept in bf16 (default fp32): half the cache's bytes a step.\n";

typedef struct bench_opts {
    const char *model_dir, *synthetic, *device, *dtype;
    int prompt_tokens, new_tokens, threads, json, async, kv_bf16;
    tl_precision prec;
    unsigned long long seed;
} bench_opts;

static int parse_int(const char *opt, const char *s, int lo, int hi, int *out)
{
    long v;
    if (cli_parse_int(s, lo, hi, &v))
        return cli_fail(2, "%s: '%s' is not an integer in [%d, %d]", opt, s, lo, hi);
    *out = (int)v;
    return 0;
}

static int parse(int argc, char **argv, bench_opts *o)
{
    int pf;
    *o = (bench_opts){.device = "cpu", .prompt_tokens = 64, .new_tokens = 32, .seed = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (!strcmp(a, "--json")) {
            o->json = 1;
        } else if ((pf = cli_engine_flag(a, &o->async, &o->prec)) != 0) {
            if (pf < 0)
                return 2;
        } else if (!strcmp(a, "--model") || !strcmp(a, "--synthetic") || !strcmp(a, "--device") ||
                   !strcmp(a, "--prompt-tokens") || !strcmp(a, "--new-tokens") ||
                   !strcmp(a, "--threads") || !strcmp(a, "--seed") || !strcmp(a, "--dtype") ||
                   !strcmp(a, "--kv-cache")) {
            if (!has_value)
                return cli_fail(2, "%s: needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--model")) o->model_dir = v;
            else if (!strcmp(a, "--synthetic")) o->synthetic = v;
            else if (!strcmp(a, "--device")) o->device = v;
            else if (!strcmp(a, "--kv-cache")) {
                if (strcmp(v, "fp32") && strcmp(v, "bf16"))
                    return cli_fail(2, "--kv-cache: '%s' is not fp32 or bf16", v);
                o->kv_bf16 = !strcmp(v, "bf16");
            }
            else if (!strcmp(a, "--dtype")) {
                tl_dtype dt;
                if (tl_dtype_parse(v, &dt))
                    return cli_fail(2, "--dtype: '%s' is not bf16, f16, f32, q8_0 or q4_0", v);
                o->dtype = v;
            }
            else if (!strcmp(a, "--prompt-tokens")) { if (parse_int(a, v, 1, 1 << 20, &o->prompt_tokens)) return 2; }
            else if (!strcmp(a, "--new-tokens")) { if (parse_int(a, v, 1, 1 << 20, &o->new_tokens)) return 2; }
            else if (!strcmp(a, "--threads")) { if (parse_int(a, v, 0, 4096, &o->threads)) return 2; }
            else {
                char *end;
                errno = 0;
                o->seed = strtoull(v, &end, 10);
                if (errno || end == v || *end || *v == '-')
                    return cli_fail(2, "--seed: '%s' is not a non-negative integer", v);
            }
        } else {
            fputs(usage, stderr);
            return cli_fail(2, "%s: unknown option", a);
        }
    }
    if (!o->model_dir == !o->synthetic) {
        fputs(usage, stderr);
        return cli_fail(2, "bench: give exactly one of --model DIR and --synthetic NAME");
    }
    if (strcmp(o->device, "cpu") && strcmp(o->device, "cuda"))
        return cli_fail(2, "--device: '%s' is not cpu or cuda", o->device);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Linear interpolation between order statistics (NumPy's default percentile). */
static double percentile(const double *sorted, int n, double p)
{
    double r = p / 100.0 * (n - 1);
    int i = (int)r;
    if (i + 1 >= n)
        return sorted[n - 1];
    return sorted[i] + (r - i) * (sorted[i + 1] - sorted[i]);
}

/* The greedy choice, from the scores the engine kept (ties: the lower id, as argmax). */
static int best_id(const tl_engine *e)
{
    int id = 0;
    float v;
    double z;
    return tl_engine_top(e, 1, &id, &v, &z) == 1 ? id : 0;
}

/* The denominator of the floor: the host's read probe on the CPU, the device's own copy probe
 * (CUDA events) on a GPU. Returns 1 if it measured something. */
static int probe(tl_engine *e, int is_cpu, int threads, tl_bandwidth *out, tl_error *err)
{
    if (is_cpu)
        return tl_bandwidth_probe(out, threads, 0.3, err) == 0;
    out->bytes_per_s = tl_engine_device_bandwidth(e, 0.3);
    return out->bytes_per_s > 0;
}

/* 1234567 -> "1.23 M": the tiny shape and the 8B in one format. */
static const char *si(char *buf, size_t n, double v)
{
    if (v >= 1e9)
        snprintf(buf, n, "%.2f G", v / 1e9);
    else if (v >= 1e6)
        snprintf(buf, n, "%.2f M", v / 1e6);
    else
        snprintf(buf, n, "%.2f k", v / 1e3);
    return buf;
}

/* What a run measured, and what it is set against. */
typedef struct bench_run {
    const bench_opts *o;
    tl_model *m;
    tl_engine *e;
    int is_cpu, threads, have_bw;
    double t_load, t_convert;   /* s */
    uint64_t copied;            /* bytes copied into huge pages at load */
    double *tpot, *unsynced, *floors, *sorted;   /* a value per decode step (ms) */
    double ttft, med, p90, best, unsynced_med, step_bytes;
    tl_bandwidth bw, bw_before, bw_after;
    double probe_floor_ms, floor_ms, over, over_best;
    double load;   /* the load average, -1 unknown */
    long ncpu;
    tl_error err;
} bench_run;

/* The model and an engine on the device asked for, its KV cache sized to this run (the 8B
 * shape stays within a small machine). 0, or the exit status (said). */
static int open_engine(bench_run *r)
{
    const bench_opts *o = r->o;
    const tl_backend_ops *be = tl_backend_find(o->device);
    if (!be)
        return cli_fail(1, "--device %s: this build has no %s backend (compiled in: cpu%s)", o->device,
                        o->device, tl_backend_cuda() ? ", cuda" : "");
    if (!strcmp(o->device, "cuda") && !tl_backend_cuda_available())
        return cli_fail(1, "--device cuda: no usable CUDA device on this machine");
    int64_t need = (int64_t)o->prompt_tokens + o->new_tokens;
    r->t_load = tl_now_s();
    int rc = cli_open_model(&r->m, o->model_dir, o->synthetic, o->dtype, o->seed, need, o->json, &r->t_convert);
    if (rc)
        return rc;
    r->copied = !strcmp(o->device, "cpu") ? tl_model_copy_to_hugepages(r->m, TL_HUGEPAGE_MIN) : 0;
    r->t_load = tl_now_s() - r->t_load;
    if (tl_engine_create(&r->e, r->m, be, o->threads, (int)need, &r->err) ||
        (o->async && tl_engine_set_async(r->e, 1, &r->err)) || tl_engine_set_precision(r->e, o->prec, &r->err) ||
        (o->kv_bf16 && tl_engine_set_kv_dtype(r->e, TL_BF16, &r->err)))
        return cli_fail(1, "%s", r->err.msg);
    return 0;
}

/* The prefill, then the decode steps, each (on the CPU) followed by a plain read of the same
 * weights; the bandwidth probed before and after. 0, or the exit status (said). */
static int run_steps(bench_run *r, const int *ids, tl_mem_region *regions)
{
    const bench_opts *o = r->o;
    r->have_bw = probe(r->e, r->is_cpu, o->threads, &r->bw_before, &r->err);
    /* A decode loop needs the best few scores, not all 128,256: on a GPU only those cross. */
    tl_engine_keep_top(r->e, TL_TOPK_MAX);
    if (tl_engine_prefill(r->e, ids, o->prompt_tokens, &r->err))
        return cli_fail(1, "%s", r->err.msg);
    r->ttft = tl_engine_last_ms(r->e);
    int next = best_id(r->e);
    int n_regions = tl_bandwidth_model_regions(r->m, regions);
    double bytes_sum = 0;
    for (int i = 0; i < o->new_tokens; i++) {
        double bytes = tl_engine_step_bytes(r->e);
        bytes_sum += bytes;
        if (tl_engine_decode(r->e, next, &r->err))
            return cli_fail(1, "%s", r->err.msg);
        r->tpot[i] = tl_engine_last_ms(r->e);
        r->unsynced[i] = tl_engine_last_unsynced_ms(r->e);
        next = best_id(r->e);
        /* the KV rows are read at the weights' rate: scaled, not read (they are the engine's) */
        if (r->is_cpu)
            r->floors[i] = tl_bandwidth_read(regions, n_regions, o->threads) * 1e3 * bytes / (double)r->m->weight_bytes;
    }
    r->have_bw |= probe(r->e, r->is_cpu, o->threads, &r->bw_after, &r->err);
    r->step_bytes = bytes_sum / o->new_tokens;
    return 0;
}

/* The median of n values (sorted into r->sorted). */
static double median_of(bench_run *r, const double *v, int n)
{
    memcpy(r->sorted, v, sizeof(double) * (size_t)n);
    qsort(r->sorted, (size_t)n, sizeof(double), cmp_double);
    return percentile(r->sorted, n, 50);
}

/* The figures: TPOT's median, p90 and best, the floor and TPOT / floor (on the CPU, each step
 * against the read beside it), the load on the machine. */
static void summarize(bench_run *r)
{
    const int n = r->o->new_tokens;
    r->med = median_of(r, r->tpot, n);
    r->p90 = percentile(r->sorted, n, 90);
    r->best = r->sorted[0];
    /* trap 2: the same steps timed when the launches returned (< 0: a synchronous engine) */
    r->unsynced_med = r->unsynced[0] >= 0 ? median_of(r, r->unsynced, n) : -1;
    /* Other processes competing for the cores (a shared machine) stretch every pass. */
    r->ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (getloadavg(&r->load, 1) != 1)
        r->load = -1;
    r->bw = r->bw_after.bytes_per_s > r->bw_before.bytes_per_s ? r->bw_after : r->bw_before;
    r->probe_floor_ms = r->have_bw ? r->step_bytes / r->bw.bytes_per_s * 1e3 : 0;
    r->floor_ms = r->probe_floor_ms;
    r->over = r->have_bw ? r->med / r->probe_floor_ms : 0;
    r->over_best = r->have_bw ? r->best / r->floor_ms : 0;
    if (r->is_cpu) {   /* each step against the read beside it */
        for (int i = 0; i < n; i++)
            r->sorted[i] = r->tpot[i] / r->floors[i];
        qsort(r->sorted, (size_t)n, sizeof(double), cmp_double);
        r->over = percentile(r->sorted, n, 50);
        r->over_best = r->sorted[0];
        r->floor_ms = median_of(r, r->floors, n);
        r->have_bw = 1;
    }
    r->threads = r->bw.threads ? r->bw.threads : r->o->threads;
}

static void print_json(const bench_run *r)
{
    const bench_opts *o = r->o;
    const tl_model *m = r->m;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "model", o->synthetic ? o->synthetic : o->model_dir);
    cJSON_AddBoolToObject(j, "synthetic", o->synthetic != NULL);
    cJSON_AddStringToObject(j, "dtype", tl_dtype_name(m->layers[0].wq.dtype));
    cJSON_AddNumberToObject(j, "parameters", (double)m->n_params);
    cJSON_AddStringToObject(j, "device", tl_engine_device(r->e));
    cJSON_AddStringToObject(j, "kernels", tl_engine_kernels(r->e));
    if (r->is_cpu)
        cJSON_AddNumberToObject(j, "threads", r->threads);
    cJSON_AddNumberToObject(j, "prompt_tokens", o->prompt_tokens);
    cJSON_AddNumberToObject(j, "new_tokens", o->new_tokens);
    cJSON_AddNumberToObject(j, "load_s", r->t_load);
    cJSON_AddNumberToObject(j, "convert_s", r->t_convert);
    cJSON_AddNumberToObject(j, "weights_copied_bytes", (double)r->copied);
    cJSON_AddNumberToObject(j, "ttft_ms", r->ttft);
    cJSON_AddNumberToObject(j, "tpot_ms_median", r->med);
    cJSON_AddNumberToObject(j, "tpot_ms_p90", r->p90);
    cJSON_AddNumberToObject(j, "tpot_ms_min", r->best);
    cJSON_AddItemToObject(j, "tpot_ms", cJSON_CreateDoubleArray(r->tpot, o->new_tokens));
    cJSON_AddBoolToObject(j, "async", tl_engine_async(r->e));
    cJSON_AddStringToObject(j, "precision", tl_precision_name(tl_engine_precision(r->e)));
    cJSON_AddStringToObject(j, "kv_cache", tl_engine_kv_dtype(r->e) == TL_BF16 ? "bf16" : "fp32");
    if (r->unsynced_med >= 0)
        cJSON_AddNumberToObject(j, "unsynced_tpot_ms_median", r->unsynced_med);
    else
        cJSON_AddNullToObject(j, "unsynced_tpot_ms_median");
    cJSON_AddNumberToObject(j, "step_bytes", r->step_bytes);
    cJSON_AddNumberToObject(j, "weight_bytes", (double)m->weight_bytes);
    if (r->have_bw) {
        cJSON_AddNumberToObject(j, "bandwidth_gbps", r->step_bytes / r->floor_ms / 1e6);
        cJSON_AddStringToObject(j, "bandwidth_probe",
                                r->is_cpu ? "the step's weights read beside each step" : "device copy");
        cJSON_AddNumberToObject(j, "floor_ms", r->floor_ms);
        cJSON_AddNumberToObject(j, "tpot_over_floor", r->over);
        if (r->is_cpu) {
            cJSON_AddItemToObject(j, "floor_ms_steps", cJSON_CreateDoubleArray(r->floors, o->new_tokens));
            cJSON_AddNumberToObject(j, "probe_gbps", r->bw.bytes_per_s / 1e9);
            cJSON_AddNumberToObject(j, "probe_floor_ms", r->probe_floor_ms);
            cJSON_AddNumberToObject(j, "tpot_over_probe_floor", r->med / r->probe_floor_ms);
        }
        cJSON_AddNumberToObject(j, "bandwidth_gbps_before", r->bw_before.bytes_per_s / 1e9);
        cJSON_AddNumberToObject(j, "bandwidth_gbps_after", r->bw_after.bytes_per_s / 1e9);
    } else {
        cJSON_AddNullToObject(j, "bandwidth_gbps");
        cJSON_AddNullToObject(j, "floor_ms");
        cJSON_AddNullToObject(j, "tpot_over_floor");
    }
    if (r->load >= 0)
        cJSON_AddNumberToObject(j, "load_average", r->load);
    else
        cJSON_AddNullToObject(j, "load_average");
    char *txt = cJSON_PrintUnformatted(j);
    if (txt)
        puts(txt);
    free(txt);
    cJSON_Delete(j);
}

static void print_text(const bench_run *r)
{
    const bench_opts *o = r->o;
    const tl_model *m = r->m;
    char b1[32], b2[32], b3[32];
    printf("model          %s (%s%s), %s parameters, %sB of weights per decode step\n",
           o->synthetic ? o->synthetic : o->model_dir, o->synthetic ? "synthetic, random " : "",
           tl_dtype_name(m->layers[0].wq.dtype), si(b1, sizeof b1, (double)m->n_params),
           si(b2, sizeof b2, (double)m->weight_bytes));
    if (r->is_cpu)
        printf("device         cpu, %d thread%s, %s kernels\n", r->threads, r->threads == 1 ? "" : "s",
               tl_engine_kernels(r->e));
    else
        printf("device         %s\n", tl_engine_device(r->e));
    if (r->copied)
        printf("weights        %sB copied from the file's mapping into 2 MiB pages at load (%.2f s "
               "with the load)\n", si(b3, sizeof b3, (double)r->copied), r->t_load);
    printf("precision      %s (docs/accuracy.md)\n", tl_precision_text(tl_engine_precision(r->e)));
    printf("prefill        %d tokens: TTFT %.1f ms (%.1f tokens/s)\n", o->prompt_tokens, r->ttft,
           o->prompt_tokens / r->ttft * 1e3);
    printf("decode         %d tokens: TPOT median %.2f ms, p90 %.2f ms, best %.2f ms (%.2f tokens/s)\n",
           o->new_tokens, r->med, r->p90, r->best, 1e3 / r->med);
    if (r->unsynced_med >= 0)
        printf("unsynchronized TPOT median %.3f ms: the clock read when the launches returned (wrong)\n",
               r->unsynced_med);
    printf("bytes/step     %sB (weights %sB + the %s KV cache so far; mean over the steps)\n",
           si(b1, sizeof b1, r->step_bytes), si(b3, sizeof b3, (double)m->weight_bytes),
           tl_engine_kv_dtype(r->e) == TL_BF16 ? "bf16" : "fp32");
    if (!r->have_bw) {
        printf("bandwidth      not probed (%s)\n", r->is_cpu ? r->err.msg : "the device probe failed");
    } else {
        if (r->is_cpu) {
            printf("bandwidth      %.1f GB/s: the step's weights read by a plain loop right after each step "
                   "(median)\n", r->step_bytes / r->floor_ms / 1e6);
            printf("probe          %.1f GB/s: best pass over 256 MiB (%.1f before, %.1f after decode), a "
                   "floor of %.2f ms (TPOT / it %.2f)\n", r->bw.bytes_per_s / 1e9, r->bw_before.bytes_per_s / 1e9,
                   r->bw_after.bytes_per_s / 1e9, r->probe_floor_ms, r->med / r->probe_floor_ms);
        } else
            printf("bandwidth      %.1f GB/s (device copy, read + write, timed with events; %.1f before, "
                   "%.1f after decode)\n", r->bw.bytes_per_s / 1e9, r->bw_before.bytes_per_s / 1e9,
                   r->bw_after.bytes_per_s / 1e9);
        printf("floor          %.2f ms per token (bytes/step / bandwidth)\n", r->floor_ms);
        printf("TPOT / floor   %.2f (median%s; best step %.2f)\n", r->over,
               r->is_cpu ? " of each step over the read beside it" : "", r->over_best);
    }
    if (r->load > r->ncpu && r->ncpu > 0)
        printf("note           load average %.1f on %ld cores: other processes share the CPU and the\n"
               "               memory bus, which stretches the passes; the ratio is pessimistic\n", r->load,
               r->ncpu);
}

/* A benchmark of its own (bench --tokenizer, --template, --sampler) on the arguments without the
 * flag that chose it. */
static int run_other(int (*cmd)(int argc, char **argv), int argc, char **argv, int at)
{
    char **rest = malloc(sizeof *rest * (size_t)argc);
    if (!rest)
        return cli_fail(1, "bench: out of memory");
    int n = 0;
    for (int i = 0; i < argc; i++)
        if (i != at)
            rest[n++] = argv[i];
    int rc = cmd(n, rest);
    free(rest);
    return rc;
}

int cmd_bench(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tokenizer"))
            return run_other(cmd_bench_tokenizer, argc, argv, i);
        if (!strcmp(argv[i], "--template"))
            return run_other(cmd_bench_template, argc, argv, i);
        if (!strcmp(argv[i], "--sampler"))
            return run_other(cmd_bench_sampler, argc, argv, i);
        if (!strcmp(argv[i], "--batch"))
            return cmd_bench_batch(argc, argv);
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return 0;
        }
    }
    bench_opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    bench_run r = {.o = &o, .is_cpu = !strcmp(o.device, "cpu")};
    int *ids = NULL;
    tl_mem_region *regions = NULL;
    if ((rc = open_engine(&r)))
        goto done;
    size_t n = (size_t)o.new_tokens;
    ids = malloc(sizeof(int) * (size_t)o.prompt_tokens);
    regions = malloc(sizeof(tl_mem_region) * (size_t)tl_bandwidth_model_max(r.m));
    r.tpot = malloc(sizeof(double) * n);
    r.sorted = malloc(sizeof(double) * n);
    r.unsynced = malloc(sizeof(double) * n);
    r.floors = malloc(sizeof(double) * n);   /* ms, the read beside each step */
    if (!ids || !regions || !r.tpot || !r.sorted || !r.unsynced || !r.floors) {
        rc = cli_fail(1, "bench: out of memory");
        goto done;
    }
    tl_batch_prompt_ids(ids, o.prompt_tokens, o.seed, &r.m->cfg);   /* BOS first, as a chat would start */
    if ((rc = run_steps(&r, ids, regions)))
        goto done;
    summarize(&r);
    if (o.json)
        print_json(&r);
    else
        print_text(&r);
done:
    free(r.floors);
    free(regions);
    free(ids);
    free(r.unsynced);
    free(r.tpot);
    free(r.sorted);
    tl_engine_free(r.e);
    tl_model_free(r.m);
    return rc;
}
