/* tokenloop bench --sampler: what choosing a token costs outside the forward pass, per step,
 * for each sampling setting, at a vocabulary of 128,256 (or --vocab N): tl_sampler_sample with
 * the report a TUI step keeps (the top 10, every figure), the same with the model's figures
 * only (what generate --json and serve's logprobs ask for), the same again given the scores'
 * statistics that the CPU's decode kernel gathers during the pass (what is left after the pass
 * there: tl_sampler_choose_with), and tl_topk of the best 64 with its softmax sum (what
 * keep_top does each step). Scores are generated: a model's peaked shape, a
 * wide Gaussian (a nucleus of hundreds of tokens), and all equal (the worst case for top-k and
 * top-p: every tie kept, nine tenths of the vocabulary after top-p). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "commands.h"
#include "tokenloop/metrics.h"
#include "tokenloop/sampler.h"
#include "tokenloop/topk.h"
#include "tokenloop/system.h"

static const char usage[] =
    "usage: tokenloop bench --sampler [--vocab N] [--reps N] [--json]\n"
    "  Median microseconds per step of tl_sampler_sample (with the top-10 report: every figure,\n"
    "  and the model's figures only; after_pass: the model's figures given the statistics the\n"
    "  CPU's decode pass gathers, i.e. what is left outside the pass) for greedy and sampled\n"
    "  settings, and of tl_topk (k 64, with its softmax sum), on generated scores of N tokens\n"
    "  (default 128256), each timed over --reps steps (default 300).\n";

static uint64_t rng = 88172645463325252ull;

static double gauss(void)
{
    /* Box-Muller on xorshift64: the same scores on every run */
    double u[2];
    for (int i = 0; i < 2; i++) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        u[i] = ((double)(rng >> 11) + 0.5) * 0x1.0p-53;
    }
    return sqrt(-2 * log(u[0])) * cos(6.283185307179586 * u[1]);
}

enum { N_VARIANTS = 4 };   /* distinct score vectors per shape, so no step reuses the last */

static void make_scores(float *v, int n, int shape)
{
    for (int i = 0; i < n; i++)
        v[i] = shape == 2 ? 0.0f : (float)(gauss() * (shape == 0 ? 2.0 : 3.0));
    if (shape == 0) {
        /* a model's step: a few tokens far above the rest, the first most likely */
        for (int j = 0; j < 6; j++) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            v[rng % (uint64_t)n] = 20.0f - 1.5f * (float)j;
        }
    }
}

typedef struct {
    const char *name;
    tl_sampling p;
} setting;

/* The median time of a step over the N_VARIANTS score vectors at v: med[0] with every figure of
 * the report, med[1] the model's only, med[2] the model's after a pass that gathered the
 * statistics (untimed, as the pass leaves them); p NULL: tl_topk alone (med[0]). *kept: the
 * tokens the last step kept. t: room for reps times. -1 when the sampler cannot be made. */
static int time_setting(const float *v, int vocab, int reps, const tl_sampling *p, double *t, tl_sample_report *rep,
                        double med[3], int *kept)
{
    for (int f = 0; f < (p ? 3 : 1); f++) {
        tl_sampler *s = p ? tl_sampler_create(vocab, *p) : NULL;
        if (p && !s)
            return -1;
        unsigned fields = f ? TL_REPORT_MODEL : TL_REPORT_ALL;
        tl_logit_stats st[N_VARIANTS];
        for (int j = 0; f == 2 && j < N_VARIANTS; j++) {
            unsigned what;
            float scale;
            tl_sampler_stats_want(s, fields, &what, &scale);
            tl_logit_stats_compute(v + (size_t)j * vocab, vocab, what, scale, &st[j]);
        }
        for (int r = -10; r < reps; r++) {   /* ten untimed steps warm the caches */
            const float *x = v + (size_t)((r + 10) % N_VARIANTS) * vocab;
            double t0 = tl_now_s() * 1e6;
            if (s) {
                tl_sampler_choose_with(s, x, f == 2 ? &st[(r + 10) % N_VARIANTS] : NULL, 10, fields, rep);
                *kept = rep->kept;
            } else {
                int ids[TL_TOPK_MAX];
                float vals[TL_TOPK_MAX];
                double z;
                tl_topk(x, vocab, TL_TOPK_MAX, ids, vals, &z);
            }
            double dt = tl_now_s() * 1e6 - t0;
            if (r >= 0) t[r] = dt;
        }
        tl_sampler_free(s);
        med[f] = tl_median(t, reps);
    }
    return 0;
}

int cmd_bench_sampler(int argc, char **argv)
{
    int vocab = 128256, reps = 300, json = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "bench")) continue;
        if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if ((!strcmp(a, "--vocab") || !strcmp(a, "--reps")) && i + 1 < argc) {
            long v;
            if (cli_parse_int(argv[++i], 1, 1 << 24, &v))
                return cli_fail(2, "bench --sampler: %s %s: expected 1..%d", a, argv[i], 1 << 24);
            if (!strcmp(a, "--vocab")) vocab = (int)v;
            else reps = (int)v;
        } else {
            fprintf(stderr, "%s", usage);
            return cli_fail(2, "bench --sampler: unknown argument %s", a);
        }
    }
    static const char *shapes[] = {"peaked", "gaussian", "flat"};
    const setting settings[] = {
        {"greedy", {.greedy = 1, .temperature = 1.0f, .top_k = 50, .top_p = 1.0f}},
        {"T0.6 k50 p0.9", {.temperature = 0.6f, .top_k = 50, .top_p = 0.9f}},
        {"T0.6 k0 p0.9", {.temperature = 0.6f, .top_k = 0, .top_p = 0.9f}},
        {"T1 k0 p1", {.temperature = 1.0f, .top_k = 0, .top_p = 1.0f}},
        {"T0.8 k200 p1", {.temperature = 0.8f, .top_k = 200, .top_p = 1.0f}},
        {"T0.7 k1000 p0.95", {.temperature = 0.7f, .top_k = 1000, .top_p = 0.95f}},
        {"T1 k0 p0.999", {.temperature = 1.0f, .top_k = 0, .top_p = 0.999f}},
        {"T1.5 k0 p0.99", {.temperature = 1.5f, .top_k = 0, .top_p = 0.99f}},
        {"T1 k5000 p1", {.temperature = 1.0f, .top_k = 5000, .top_p = 1.0f}},
    };
    const int n_set = (int)(sizeof settings / sizeof *settings);
    float *v = malloc(sizeof(float) * (size_t)vocab * N_VARIANTS);
    double *t = malloc(sizeof(double) * (size_t)reps);
    tl_sample_report *rep = malloc(sizeof *rep);
    if (!v || !t || !rep) {
        free(v);
        free(t);
        free(rep);
        return cli_fail(1, "bench --sampler: out of memory");
    }
    cJSON *root = cJSON_CreateObject(), *rows = cJSON_AddArrayToObject(root, "cases");
    cJSON_AddNumberToObject(root, "vocab", vocab);
    cJSON_AddNumberToObject(root, "reps", reps);
    if (!json)
        printf("%-10s %-18s %10s %10s %13s %10s\n", "scores", "setting", "median_us", "model_us", "after_pass_us",
               "kept");
    double worst = 0, worst_after = 0;
    int rc = 0;
    for (int sh = 0; sh < 3 && !rc; sh++) {
        for (int j = 0; j < N_VARIANTS; j++) make_scores(v + (size_t)j * vocab, vocab, sh);
        for (int c = 0; c <= n_set && !rc; c++) {
            int kept = 0;
            double med[3] = {0, 0, 0};
            if (time_setting(v, vocab, reps, c < n_set ? &settings[c].p : NULL, t, rep, med, &kept))
                rc = cli_fail(1, "bench --sampler: cannot make a sampler of %d tokens", vocab);
            if (rc) break;
            const char *name = c < n_set ? settings[c].name : "tl_topk k64";
            if (med[0] > worst) worst = med[0];
            if (med[2] > worst_after) worst_after = med[2];
            if (json) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "scores", shapes[sh]);
                cJSON_AddStringToObject(o, "setting", name);
                cJSON_AddNumberToObject(o, "median_us", med[0]);
                if (c < n_set) {
                    cJSON_AddNumberToObject(o, "model_median_us", med[1]);
                    cJSON_AddNumberToObject(o, "after_pass_median_us", med[2]);
                    cJSON_AddNumberToObject(o, "kept", kept);
                }
                cJSON_AddItemToArray(rows, o);
            } else if (c < n_set) {
                printf("%-10s %-18s %10.1f %10.1f %13.1f %10d\n", shapes[sh], name, med[0], med[1], med[2], kept);
            } else {
                printf("%-10s %-18s %10.1f %10s %13s %10d\n", shapes[sh], name, med[0], "", "", TL_TOPK_MAX);
            }
        }
    }
    cJSON_AddNumberToObject(root, "worst_median_us", worst);
    cJSON_AddNumberToObject(root, "worst_after_pass_median_us", worst_after);
    if (!rc && json) {
        char *js = cJSON_PrintUnformatted(root);
        if (js) puts(js);
        free(js);
    } else if (!rc) {
        printf("worst median (every shape, every figure): %.1f us; after a pass that gathered the statistics: %.1f us\n",
               worst, worst_after);
    }
    cJSON_Delete(root);
    free(v);
    free(t);
    free(rep);
    return rc;
}
