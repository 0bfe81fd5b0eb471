/* The lessons' `pace` action: the pace law measured on weights that reach memory. */
#include "lesson_pace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenloop/bandwidth.h"
#include "tokenloop/pace.h"
#include "tokenloop/synthetic.h"

/* A test can play the lessons on a small shape (TOKENLOOP_LESSON_SHAPE=tiny): the steps and
 * their choices run as written, in a fraction of the time and memory. */
#define SHAPE_ENV "TOKENLOOP_LESSON_SHAPE"
#define MEM_MARGIN 512e6

struct lp_state {
    tl_pace_report r;
    char as[21], shape[32], ran[64];
    double within, warm_within, mem_gb, llc_mb, session_mb;
};

static const char *const dtype_parts[] = {"tpot_ms", "floor_ms", "floor_lo_ms", "floor_hi_ms", "tpot_over_floor",
                                          "weight_mb", "step_mb", "bandwidth_gbs", "prefill_ms", "first_decode_ms",
                                          "weight_ratio", "tpot_ratio", "floor_ratio", "floor_tokens_per_s", "reads", NULL};
static const char *const whole_parts[] = {"runs", "steps", "prompt_tokens", "mem_gb", "llc_mb", "session_weight_mb",
                                          NULL};
static const char *const text_parts[] = {"shape", "ran", NULL};

static int in(const char *const *list, const char *s)
{
    for (int i = 0; list[i]; i++)
        if (!strcmp(list[i], s))
            return 1;
    return 0;
}

/* 0 / 1 as lp_field_kind; *dt the dtype (-1 for the whole), *part what of it. */
static int parse(const char *name, int *dt, const char **part)
{
    if (strncmp(name, "pace.", 5))
        return -1;
    const char *p = name + 5, *dot = strchr(p, '.');
    *dt = -1;
    *part = p;
    if (!dot)
        return in(text_parts, p) ? 1 : in(whole_parts, p) ? 0 : -1;
    char d[16];
    tl_dtype t;
    if ((size_t)(dot - p) >= sizeof d)
        return -1;
    snprintf(d, sizeof d, "%.*s", (int)(dot - p), p);
    if (tl_dtype_parse(d, &t))
        return -1;
    *dt = (int)t;
    *part = dot + 1;
    return in(dtype_parts, *part) ? 0 : -1;
}

int lp_field_kind(const char *name)
{
    int dt;
    const char *part;
    return parse(name, &dt, &part);
}

static int is_int(const cJSON *v, double lo, double hi)
{
    return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) && v->valuedouble >= lo && v->valuedouble <= hi;
}

static int runnable(tl_dtype t)
{
    return t == TL_BF16 || t == TL_F16 || t == TL_F32 || t == TL_Q8_0 || t == TL_Q4_0;
}

const char *lp_check(const cJSON *v)
{
    static const char *const keys[] = {"as", "shape", "dtypes", "prompt_tokens", "steps", "runs", "same_within",
                                       "warm_within", NULL};
    if (!cJSON_IsObject(v))
        return "needs {\"as\"}";
    for (const cJSON *e = v->child; e; e = e->next)
        if (!in(keys, e->string))
            return "takes as, shape, dtypes, prompt_tokens, steps, runs, same_within, warm_within";
    const cJSON *as = cJSON_GetObjectItemCaseSensitive(v, "as");
    if (!cJSON_IsString(as) || !*as->valuestring || strlen(as->valuestring) > 20 || strpbrk(as->valuestring, ".|"))
        return "as: a name of 1-20 characters without . or |";
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(v, "shape");
    tl_config cfg;
    tl_error e;
    if (shape && !(cJSON_IsString(shape) && !tl_synthetic_config(&cfg, shape->valuestring, &e)))
        return "shape: a published shape (llama-3.2-1b, llama-3.1-8b, tiny, small)";
    const cJSON *dts = cJSON_GetObjectItemCaseSensitive(v, "dtypes");
    int n = dts ? (cJSON_IsArray(dts) ? cJSON_GetArraySize(dts) : -1) : 1;
    if (n < 1 || n > TL_PACE_MODELS)
        return "dtypes: an array of 1 to 4 dtypes";
    unsigned seen = 0;
    for (const cJSON *d = dts ? dts->child : NULL; d; d = d->next) {
        tl_dtype t;
        if (!cJSON_IsString(d) || tl_dtype_parse(d->valuestring, &t) || !runnable(t))
            return "dtypes: each one of bf16, f16, f32, q8_0, q4_0";
        if (seen & (1u << t))
            return "dtypes: each dtype once";
        seen |= 1u << t;
    }
    if (cJSON_GetObjectItemCaseSensitive(v, "prompt_tokens") &&
        !is_int(cJSON_GetObjectItemCaseSensitive(v, "prompt_tokens"), 1, 256))
        return "prompt_tokens: an integer from 1 to 256";
    if (cJSON_GetObjectItemCaseSensitive(v, "steps") &&
        !is_int(cJSON_GetObjectItemCaseSensitive(v, "steps"), 3, TL_PACE_STEPS))
        return "steps: an integer from 3 to 32";
    if (cJSON_GetObjectItemCaseSensitive(v, "runs") && !is_int(cJSON_GetObjectItemCaseSensitive(v, "runs"), 3, TL_PACE_RUNS))
        return "runs: an integer from 3 to 20";
    const char *fr[] = {"same_within", "warm_within"};
    for (int i = 0; i < 2; i++) {
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(v, fr[i]);
        if (w && !(cJSON_IsNumber(w) && w->valuedouble >= 0 && w->valuedouble <= 1))
            return i ? "warm_within: a fraction from 0 to 1" : "same_within: a fraction from 0 to 1";
    }
    return NULL;
}

static int get_int(const cJSON *v, const char *k, int dflt)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(v, k);
    return x ? (int)x->valuedouble : dflt;
}

static double get_num(const cJSON *v, const char *k, double dflt)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(v, k);
    return x ? x->valuedouble : dflt;
}

/* The dtypes to run: the list's, in order, while they fit in the memory available beside the
 * bf16 weights they are converted from; the rest are left out (pace.ran names what ran). */
static int pick_dtypes(lp_state *p, const cJSON *v, const tl_config *cfg, tl_dtype *dts, tl_error *err)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(v, "dtypes");
    double avail = tl_synthetic_mem_available(), need = tl_synthetic_bytes(cfg, TL_BF16);
    p->mem_gb = avail > 0 ? avail / 1e9 : NAN;
    if (avail > 0 && need + MEM_MARGIN > avail)
        return tl_error_set(err, "pace: %s needs %.1f GB of memory for its bf16 weights, %.1f GB available", p->shape,
                            (need + MEM_MARGIN) / 1e9, avail / 1e9);
    int n = 0;
    size_t o = 0;
    for (const cJSON *d = list ? list->child : NULL; d || (!list && n == 0); d = d ? d->next : NULL) {
        tl_dtype t = TL_BF16;
        if (d)
            tl_dtype_parse(d->valuestring, &t);
        double add = t == TL_BF16 ? 0 : tl_synthetic_bytes(cfg, t);
        if (avail > 0 && need + add + MEM_MARGIN > avail)
            continue;
        need += add;
        dts[n++] = t;
        o += (size_t)snprintf(p->ran + o, sizeof p->ran - o, "%s%s", o ? ", " : "", tl_dtype_name(t));
        if (!d)
            break;
    }
    if (n == 0)
        return tl_error_set(err, "pace: none of the dtypes asked for fits beside %s's bf16 weights in %.1f GB of memory",
                            p->shape, avail / 1e9);
    return n;
}

int lp_run(lp_state **pp, tl_session *s, const cJSON *v, tl_error *err)
{
    lp_state *p = calloc(1, sizeof *p);
    if (!p)
        return tl_error_set(err, "pace: out of memory");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(v, "shape");
    const char *sh = getenv(SHAPE_ENV) && *getenv(SHAPE_ENV) ? getenv(SHAPE_ENV)
                     : shape                                  ? shape->valuestring
                                                              : "llama-3.2-1b";
    snprintf(p->as, sizeof p->as, "%s", cJSON_GetObjectItemCaseSensitive(v, "as")->valuestring);
    snprintf(p->shape, sizeof p->shape, "%s", sh);
    p->within = get_num(v, "same_within", 0.1);
    p->warm_within = get_num(v, "warm_within", 0.25);
    double llc = tl_bandwidth_llc_bytes();
    p->llc_mb = llc > 0 ? llc / 1e6 : NAN;
    p->session_mb = (double)tl_session_model(s)->weight_bytes / 1e6;
    tl_pace_opts o = {.prompt_tokens = get_int(v, "prompt_tokens", 8), .steps = get_int(v, "steps", 6),
                      .runs = get_int(v, "runs", 5), .seed = 1,
                      .precision = tl_engine_precision(tl_session_engine(s))};
    tl_config cfg;
    tl_dtype dts[TL_PACE_MODELS];
    tl_model *base = NULL, *conv[TL_PACE_MODELS] = {0};
    const tl_model *models[TL_PACE_MODELS];
    int n = 0, rc = -1;
    if (tl_synthetic_config(&cfg, sh, err) || (n = pick_dtypes(p, v, &cfg, dts, err)) <= 0 ||
        tl_model_synthetic(&base, &cfg, TL_BF16, 1, err))
        goto done;
    tl_model_copy_to_hugepages(base, TL_HUGEPAGE_MIN);
    for (int i = 0; i < n; i++) {
        if (dts[i] != TL_BF16 && tl_model_convert(&conv[i], base, dts[i], err))
            goto done;
        models[i] = dts[i] == TL_BF16 ? base : conv[i];
    }
    rc = tl_pace_measure(models, n, &o, &p->r, err);
done:
    for (int i = 0; i < TL_PACE_MODELS; i++)
        tl_model_free(conv[i]);
    tl_model_free(base);
    if (rc) {
        free(p);
        return -1;
    }
    lp_free(*pp);
    *pp = p;
    return 0;
}

void lp_free(lp_state *p) { free(p); }

static const tl_pace_row *row_of(const lp_state *p, int dt)
{
    for (int i = 0; p && i < p->r.n; i++)
        if ((int)p->r.rows[i].dtype == dt)
            return &p->r.rows[i];
    return NULL;
}

static double whole(const lp_state *p, const char *part)
{
    if (!strcmp(part, "runs")) return p->r.runs;
    if (!strcmp(part, "steps")) return p->r.steps;
    if (!strcmp(part, "prompt_tokens")) return p->r.prompt_tokens;
    if (!strcmp(part, "mem_gb")) return p->mem_gb;
    if (!strcmp(part, "llc_mb")) return p->llc_mb;
    return p->session_mb;
}

double lp_num(const lp_state *p, const char *name)
{
    int dt;
    const char *part;
    if (!p || parse(name, &dt, &part) != 0)
        return NAN;
    if (dt < 0)
        return whole(p, part);
    const tl_pace_row *x = row_of(p, dt), *first = &p->r.rows[0];
    if (!x)
        return NAN;
    if (!strcmp(part, "tpot_ms")) return x->tpot_ms;
    if (!strcmp(part, "floor_ms")) return x->floor_ms;
    if (!strcmp(part, "floor_lo_ms")) return x->floor_lo_ms;
    if (!strcmp(part, "floor_hi_ms")) return x->floor_hi_ms;
    if (!strcmp(part, "tpot_over_floor")) return x->over_floor;
    if (!strcmp(part, "weight_mb")) return x->weight_bytes / 1e6;
    if (!strcmp(part, "step_mb")) return x->step_bytes / 1e6;
    if (!strcmp(part, "bandwidth_gbs")) return x->weight_bytes / (x->floor_ms * 1e-3) / 1e9;
    if (!strcmp(part, "prefill_ms")) return x->prefill_med_ms;
    if (!strcmp(part, "first_decode_ms")) return x->first_med_ms;
    if (!strcmp(part, "weight_ratio")) return x->weight_bytes / first->weight_bytes;
    if (!strcmp(part, "tpot_ratio")) return x->tpot_ms / first->tpot_ms;
    if (!strcmp(part, "floor_ratio")) return x->floor_ms / first->floor_ms;
    if (!strcmp(part, "floor_tokens_per_s")) return 1e3 / x->floor_ms;
    return x->n_reads;
}

const char *lp_str(const lp_state *p, const char *name)
{
    if (!p)
        return "";
    return !strcmp(name, "pace.ran") ? p->ran : p->shape;
}

/* "q8_0" -> "q8", "bf16" -> "bf16": the name a dtype's comparison goes by. */
static void short_name(char *out, size_t n, tl_dtype t)
{
    const char *d = tl_dtype_name(t);
    const char *u = strchr(d, '_');
    snprintf(out, n, "%.*s", (int)(u ? (size_t)(u - d) : strlen(d)), d);
}

int lp_compare(const lp_state *p, int i, char name[32], tl_cmp *c, double *same_within)
{
    if (!p || i < 0 || i >= 3 + p->r.n - 1)
        return -1;
    const tl_pace_row *f = &p->r.rows[0];
    int runs = p->r.runs;
    *same_within = p->within;
    if (i == 0) {   /* one figure a side: how the session's weights compare with the cache */
        snprintf(name, 32, "%s_cache", p->as);
        *same_within = 1.0;
        double a[5] = {p->session_mb, p->session_mb, p->session_mb, p->session_mb, p->session_mb};
        double b[5] = {p->llc_mb, p->llc_mb, p->llc_mb, p->llc_mb, p->llc_mb};
        *c = tl_compare(a, 5, b, 5, 1.0);   /* one figure a side, given as many times as a lesson's runs */
        if (isnan(p->llc_mb))
            c->outcome = TL_CMP_UNDECIDED;
    } else if (i == 1) {
        snprintf(name, 32, "%s_pre", p->as);
        *c = tl_compare(f->prefill_ms, runs, f->decode_ms, runs, p->within);
    } else if (i == 2) {
        snprintf(name, 32, "%s_warm", p->as);
        *same_within = p->warm_within;
        *c = tl_compare(f->first_ms, runs, f->decode_ms, runs, p->warm_within);
    } else {
        const tl_pace_row *a = &p->r.rows[i - 3], *b = &p->r.rows[i - 2];
        char sn[16];
        short_name(sn, sizeof sn, b->dtype);
        snprintf(name, 32, "%s_%.8s", p->as, sn);
        *c = tl_compare(a->decode_ms, runs, b->decode_ms, runs, p->within);
    }
    return 0;
}
