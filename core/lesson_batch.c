/* The lessons' `batch` action: why servers batch, measured where the class sits. */
#include "lesson_batch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenloop/batch.h"
#include "tokenloop/synthetic.h"

#define LB_MAX_SIZES 6
#define LB_MAX_STEPS 64

struct lb_state {
    tl_batch_report r;
    char as[24], shape[32];
    double within;
};

/* batch.B.X with B a size (digits), or batch.X: the whole's. */
static const char *const size_parts[] = {"tpot_ms", "tokens_per_s", "tokens_ratio", "tpot_ratio", "bytes_per_token_mb",
                                         "floor_ms", "roof_ms", "tpot_over_floor", NULL};
static const char *const whole_parts[] = {"crossover", "peak_gflops", "weight_mb", "steps", NULL};

static int in(const char *const *list, const char *s)
{
    for (int i = 0; list[i]; i++)
        if (!strcmp(list[i], s))
            return 1;
    return 0;
}

/* 0 / 1 as lb_field_kind; *B the size (0 for the whole), *part what of it. */
static int parse(const char *name, int *B, const char **part)
{
    if (strncmp(name, "batch.", 6))
        return -1;
    const char *p = name + 6;
    *B = 0;
    if (!strcmp(p, "shape")) {
        *part = p;
        return 1;
    }
    if (in(whole_parts, p)) {
        *part = p;
        return 0;
    }
    char *end;
    long b = strtol(p, &end, 10);
    if (end == p || *end != '.' || b < 1 || b > 256 || *p == '0' || *p == '+' || *p == '-')
        return -1;
    *B = (int)b;
    *part = end + 1;
    return in(size_parts, *part) ? 0 : -1;
}

int lb_field_kind(const char *name)
{
    int B;
    const char *part;
    return parse(name, &B, &part);
}

const char *lb_check(const cJSON *v)
{
    if (!cJSON_IsObject(v))
        return "needs {\"as\", \"sizes\"}";
    for (const cJSON *e = v->child; e; e = e->next)
        if (strcmp(e->string, "as") && strcmp(e->string, "sizes") && strcmp(e->string, "steps") &&
            strcmp(e->string, "shape") && strcmp(e->string, "same_within"))
            return "takes as, sizes, steps, shape, same_within";
    const cJSON *as = cJSON_GetObjectItemCaseSensitive(v, "as");
    if (!cJSON_IsString(as) || !*as->valuestring || strlen(as->valuestring) > 20 || strpbrk(as->valuestring, ".|0123456789"))
        return "as: a name of 1-20 characters without digits, . or |";
    const cJSON *sizes = cJSON_GetObjectItemCaseSensitive(v, "sizes");
    int n = cJSON_IsArray(sizes) ? cJSON_GetArraySize(sizes) : 0;
    if (n < 2 || n > LB_MAX_SIZES)
        return "sizes: an array of 2 to 6 batch sizes";
    for (const cJSON *e = sizes->child; e; e = e->next)
        if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < 1 || e->valuedouble > 64)
            return "sizes: integers from 1 to 64";
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(v, "steps");
    if (steps && !(cJSON_IsNumber(steps) && steps->valuedouble == floor(steps->valuedouble) && steps->valuedouble >= 3 &&
                   steps->valuedouble <= LB_MAX_STEPS))
        return "steps: an integer from 3 to 64";
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(v, "shape");
    tl_config cfg;
    tl_error e;
    if (shape && !(cJSON_IsString(shape) &&
                   (!strcmp(shape->valuestring, "session") || !tl_synthetic_config(&cfg, shape->valuestring, &e))))
        return "shape: \"session\" or a published shape (llama-3.2-1b, llama-3.1-8b, tiny, small)";
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(v, "same_within");
    if (w && !(cJSON_IsNumber(w) && w->valuedouble >= 0 && w->valuedouble <= 1))
        return "same_within: a fraction from 0 to 1";
    return NULL;
}

int lb_run(lb_state **bp, tl_session *s, const cJSON *v, tl_error *err)
{
    const cJSON *sizes = cJSON_GetObjectItemCaseSensitive(v, "sizes");
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(v, "steps");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(v, "shape");
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(v, "same_within");
    const char *sh = shape ? shape->valuestring : "session";
    lb_state *b = calloc(1, sizeof *b);
    if (!b)
        return tl_error_set(err, "batch: out of memory");
    snprintf(b->as, sizeof b->as, "%s", cJSON_GetObjectItemCaseSensitive(v, "as")->valuestring);
    snprintf(b->shape, sizeof b->shape, "%s", sh);
    b->within = w ? w->valuedouble : 0.1;
    tl_batch_opts o = {.prompt_tokens = 4, .steps = steps ? (int)steps->valuedouble : 8, .seed = 1,
                       .precision = tl_engine_precision(tl_session_engine(s))};
    for (const cJSON *e = sizes->child; e; e = e->next)
        o.sizes[o.n_sizes++] = (int)e->valuedouble;
    tl_model *own = NULL;
    const tl_model *m = tl_session_model(s);
    if (strcmp(sh, "session")) {   /* random weights of the published shape, in memory */
        tl_config cfg;
        if (tl_synthetic_config(&cfg, sh, err) || tl_model_synthetic(&own, &cfg, TL_BF16, 1, err)) {
            free(b);
            return -1;
        }
        tl_model_copy_to_hugepages(own, TL_HUGEPAGE_MIN);
        m = own;
    }
    int rc = tl_batch_measure(m, &o, &b->r, err);
    tl_model_free(own);
    if (!rc)
        rc = tl_session_set_batch(s, &b->r, sh, err);   /* the Timing pane's batch table */
    if (rc) {
        free(b);
        return -1;
    }
    lb_free(*bp);
    *bp = b;
    return 0;
}

void lb_free(lb_state *b) { free(b); }

static const tl_batch_row *row_of(const lb_state *b, int B)
{
    for (int i = 0; b && i < b->r.n; i++)
        if (b->r.rows[i].B == B)
            return &b->r.rows[i];
    return NULL;
}

double lb_num(const lb_state *b, const char *name)
{
    int B;
    const char *part;
    if (!b || parse(name, &B, &part) != 0)
        return NAN;
    const tl_batch_report *r = &b->r;
    if (!B) {
        if (!strcmp(part, "crossover")) return r->crossover;
        if (!strcmp(part, "peak_gflops")) return r->peak_flops / 1e9;
        if (!strcmp(part, "weight_mb")) return r->weight_bytes / 1e6;
        return r->steps;
    }
    const tl_batch_row *x = row_of(b, B), *first = &r->rows[0];
    if (!x)
        return NAN;
    if (!strcmp(part, "tpot_ms")) return x->tpot_ms;
    if (!strcmp(part, "tokens_per_s")) return x->B / x->tpot_ms * 1e3;
    if (!strcmp(part, "tokens_ratio")) return (double)x->B / first->B / x->vs_first;
    if (!strcmp(part, "tpot_ratio")) return x->vs_first;
    if (!strcmp(part, "bytes_per_token_mb")) return x->bytes_per_token / 1e6;
    if (!strcmp(part, "floor_ms")) return x->floor_med_ms;
    if (!strcmp(part, "roof_ms")) return x->roof_ms;
    return x->over_floor;
}

const char *lb_str(const lb_state *b, const char *name)
{
    (void)name;
    return b ? b->shape : "";
}

int lb_compare(const lb_state *b, int i, char name[32], tl_cmp *c, double *same_within)
{
    if (!b || i < 0 || i + 1 >= b->r.n)
        return -1;
    const tl_batch_row *first = &b->r.rows[0], *x = &b->r.rows[i + 1];
    snprintf(name, 32, "%s%d", b->as, x->B);
    *c = tl_compare(first->step_ms, b->r.steps, x->step_ms, b->r.steps, b->within);
    *same_within = b->within;
    return 0;
}
