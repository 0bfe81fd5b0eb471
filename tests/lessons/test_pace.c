/* tl_pace_measure (core/pace.c), the lessons' pace figures: on the small shape in bf16 and q8_0,
 * each row's medians are the medians of what it recorded, the reads' extremes bound their median,
 * every decode after the first has its read, the bytes are the models', the KV cache adds to a
 * step's; and each malformed request is refused with a message, measuring nothing. Then the pace
 * action in a lesson (argv[1], on the model argv[2]): it says it is measuring, once, in both
 * languages, before it blocks (tl_lesson_set_busy), and its expectations hold. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tl_test.h"
#include "tokenloop/lesson.h"
#include "tokenloop/metrics.h"
#include "tokenloop/session.h"
#include "tokenloop/pace.h"
#include "tokenloop/synthetic.h"

static double med(const double *v, int n)
{
    double s[TL_PACE_RUNS * TL_PACE_STEPS];
    memcpy(s, v, sizeof(double) * (size_t)n);
    return tl_median(s, n);
}

static void check_row(const tl_pace_row *r, const tl_model *m, const tl_pace_opts *o)
{
    TL_CHECK(r->dtype == m->layers[0].wq.dtype);
    TL_CHECK(r->weight_bytes == (double)m->weight_bytes);
    TL_CHECK_MSG(r->step_bytes > r->weight_bytes, "step %.0f weights %.0f", r->step_bytes, r->weight_bytes);
    TL_CHECK(r->n_reads == o->runs * o->steps);
    TL_CHECK(r->n_over == o->runs * (o->steps - 1));
    TL_CHECK(r->tpot_ms == med(r->decode_ms, o->runs));
    TL_CHECK(r->prefill_med_ms == med(r->prefill_ms, o->runs));
    TL_CHECK(r->first_med_ms == med(r->first_ms, o->runs));
    TL_CHECK(r->floor_ms == med(r->read_ms, r->n_reads));
    TL_CHECK(r->over_floor == med(r->over, r->n_over));
    TL_CHECK(r->floor_lo_ms <= r->floor_ms && r->floor_ms <= r->floor_hi_ms);
    for (int i = 0; i < r->n_reads; i++)
        TL_CHECK(r->read_ms[i] >= r->floor_lo_ms && r->read_ms[i] <= r->floor_hi_ms && r->read_ms[i] > 0);
    for (int k = 0; k < o->runs; k++)
        TL_CHECK(r->prefill_ms[k] > 0 && r->first_ms[k] > 0 && r->decode_ms[k] > 0);
}

static int busy_calls;
static char busy_en[128], busy_vi[128];

static void on_busy(void *ctx, const char *en, const char *vi)
{
    (void)ctx;
    busy_calls++;
    snprintf(busy_en, sizeof busy_en, "%s", en);
    snprintf(busy_vi, sizeof busy_vi, "%s", vi);
}

static void check_busy(const char *lesson, const char *model)
{
    tl_error err = {{0}};
    tl_lesson *l = NULL;
    tl_session *s = NULL;
    tl_session_opts o = {.model_dir = model, .threads = 2, .bandwidth_gbs = 10};
    TL_CHECK_MSG(tl_lesson_load(&l, lesson, &err) == 0, "%s", err.msg);
    TL_CHECK_MSG(tl_session_open(&s, &o, &err) == 0, "%s", err.msg);
    if (!l || !s) return;
    tl_lesson_set_busy(l, on_busy, NULL);
    char why[512];
    TL_CHECK_MSG(tl_lesson_apply(l, 0, s, NULL, &err) == 0, "%s", err.msg);
    TL_CHECK_MSG(tl_lesson_check(l, 0, s, why, sizeof why) == 0, "%s", why);
    TL_CHECK_MSG(busy_calls == 1 && strstr(busy_en, "measuring") && strstr(busy_vi, "đang đo"), "%d: %s / %s",
                 busy_calls, busy_en, busy_vi);
    tl_session_free(s);
    tl_lesson_free(l);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_pace LESSON.json MODEL_DIR\n");
        return 2;
    }
    check_busy(argv[1], argv[2]);
    tl_error err = {{0}};
    tl_config cfg;
    tl_model *bf16 = NULL, *q8 = NULL;
    TL_CHECK(tl_synthetic_config(&cfg, "small", &err) == 0);
    TL_CHECK_MSG(tl_model_synthetic(&bf16, &cfg, TL_BF16, 1, &err) == 0, "%s", err.msg);
    TL_CHECK_MSG(tl_model_convert(&q8, bf16, TL_Q8_0, &err) == 0, "%s", err.msg);
    const tl_model *ms[2] = {bf16, q8};
    tl_pace_opts o = {.prompt_tokens = 5, .steps = 4, .runs = 3, .threads = 2, .seed = 7};
    tl_pace_report *r = calloc(1, sizeof *r);
    TL_CHECK(r != NULL);
    TL_CHECK_MSG(tl_pace_measure(ms, 2, &o, r, &err) == 0, "%s", err.msg);
    TL_CHECK(r->n == 2 && r->runs == 3 && r->steps == 4 && r->prompt_tokens == 5);
    check_row(&r->rows[0], bf16, &o);
    check_row(&r->rows[1], q8, &o);
    TL_CHECK(r->rows[1].weight_bytes < r->rows[0].weight_bytes);

    /* refusals: each names what is wrong */
    struct { int n, runs, steps, prompt; const char *says; } bad[] = {
        {0, 3, 4, 5, "models"}, {5, 3, 4, 5, "models"}, {2, 0, 4, 5, "runs"}, {2, TL_PACE_RUNS + 1, 4, 5, "runs"},
        {2, 3, 1, 5, "steps"}, {2, 3, TL_PACE_STEPS + 1, 5, "steps"}, {2, 3, 4, 0, "prompt"}, {2, 3, 4, 257, "prompt"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tl_pace_opts b = {.prompt_tokens = bad[i].prompt, .steps = bad[i].steps, .runs = bad[i].runs, .threads = 1};
        err.msg[0] = '\0';
        TL_CHECK_MSG(tl_pace_measure(ms, bad[i].n, &b, r, &err) == -1 && strstr(err.msg, bad[i].says), "case %zu: %s",
                     i, err.msg);
        TL_CHECK(r->n == 0);
    }
    /* past the context: the shape holds 2,048 positions */
    cfg.max_position_embeddings = 8;
    tl_model *shortctx = NULL;
    TL_CHECK_MSG(tl_model_synthetic(&shortctx, &cfg, TL_BF16, 1, &err) == 0, "%s", err.msg);
    const tl_model *one[1] = {shortctx};
    TL_CHECK(tl_pace_measure(one, 1, &o, r, &err) == -1 && strstr(err.msg, "context"));
    tl_model_free(shortctx);
    free(r);
    tl_model_free(q8);
    tl_model_free(bf16);
    return TL_TEST_END("test_pace");
}
