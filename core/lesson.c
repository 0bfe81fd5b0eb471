/* The lesson player: validates a lesson file once at load time, then applies a step's actions
 * to a session, checks its expectations and fills its narration from live values. Every number
 * a lesson shows comes from the session (a field below) or is the class reference, which the
 * lesson text labels as such. */
#include "tokenloop/lesson.h"

#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "tokenloop/engine.h"
#include "tokenloop/file.h"
#include "tokenloop/metrics.h"
#include "tokenloop/paths.h"
#include "tokenloop/tokenizer.h"

#include "lesson_batch.h"
#include "lesson_pace.h"
#include "lesson_text.h"

#define MAX_SAVED 16
#define MAX_CMP 8
#define MAX_CMP_RUNS 50

/* A compare action's outcome: one quantity measured on two sides, runs each, interleaved. */
typedef struct cmp_slot {
    char name[32];
    tl_cmp c;
    double within;              /* the "same" tolerance, a fraction of the smaller median */
} cmp_slot;

typedef struct saved_value {
    char name[32];
    int is_num;
    char field[48];     /* the field it was kept from: narrated as that field is */
    double num;
    char *str;
} saved_value;

struct tl_lesson {
    char *path;
    cJSON *root;
    cJSON *steps;
    int n_steps;
    /* the conversation the actions build up */
    saved_value saved[MAX_SAVED];
    int n_saved;
    /* what the last run_iter read from the iterator streamer's queue */
    char *iter_text;
    int iter_chunks;
    char *iter_list;            /* its chunks with text, as `a` `b`, to set beside the client's */
    /* a front end's chat server (serve_request) and what its client last received */
    tl_lesson_server_fn serve;
    void *serve_ctx;
    int served;                 /* 1 once a serve_request ran */
    tl_lesson_served got;
    /* the last tokenize action's string as the tokenizer splits it */
    int tokenized_count;
    char *tokenized_pieces;
    /* compare actions' outcomes, by name (cmp.NAME.* fields, [[NAME|...]] narration) */
    cmp_slot cmps[MAX_CMP];
    int n_cmps;
    int undecided;              /* the check being made met an undecided comparison */
    lb_state *batch;            /* the last batch action's measurement (batch.* fields) */
    lp_state *pace;             /* the last pace action's measurement (pace.* fields) */
    void (*busy)(void *ctx, const char *en, const char *vi);   /* tl_lesson_set_busy */
    void *busy_ctx;
    char undecided_what[64];
};

typedef struct buf_t {
    char *p;
    size_t len, cap;
} buf_t;

static void buf_put(buf_t *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->cap ? b->cap : 256);
        while (cap < b->len + n + 1)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np)
            return;
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

/* ---------- live fields ---------- */

typedef enum { F_NUM, F_STR } field_kind;

typedef struct field_value {
    field_kind kind;
    double num;         /* NAN when not available yet */
    char *str;          /* malloc'd */
} field_value;

static const char *const num_fields[] = {
    "prompt_tokens", "generated", "steps", "position", "ttft_ms", "tpot_ms", "floor_ms",
    "bandwidth_gbs", "tpot_over_floor", "decode_tokens_per_s", "prompt_as_output_tokens_per_s",
    "ref_floor_ms", "unsynced_applicable", "step_mb", "weight_mb", "params_m", "max_new_tokens",
    "vocab", "first_prob", "last_prob", "temperature", "top_p", "top_k", "prefill_ms",
    "first_decode_ms", "median_decode_ms", "kept", "n_eos", "template_ms", "tokenize_ms",
    "ref_tokens_per_s", "floor_tokens_per_s", "iter_chunks", "first_prob_temp", "first_prob_final",
    "last_prob_temp", "last_prob_final", "user_tokens", "user_words", "tokens_per_word",
    "stop_string_tokens", "tokenized_count", "unsynced_tpot_ms", "pass_mean_ms", "unsynced_percent",
    "prompt_special", "served_chunks", "client_ttft_ms", "client_last_ms", "server_ttft_ms",
    "served_prompt_tokens", "served_completion_tokens", "served_port", "dtypes_used",
    "floor_lo_ms", "floor_hi_ms", "floor_reads", "in_cache", "llc_mb", NULL,
};
static const char *const str_fields[] = {
    "stop_reason", "stop_detail", "budget_source", "text", "streamed", "held_back", "printed",
    "hold_reason", "prompt_text", "first_piece", "last_piece", "eos_ids", "eos_names",
    "last_kind", "generated_ids", "device", "raw_text", "iter_text", "stop_string_pieces",
    "tokenized_pieces", "iter_chunk_list", "served_text", "served_chunk_list", "served_finish_reason", "dtype", "file_dtype", NULL,
};

static int in_list(const char *const *list, const char *name)
{
    for (int i = 0; list[i]; i++)
        if (!strcmp(list[i], name))
            return 1;
    return 0;
}

/* dtype.<D>.<what>: one row of the session's dtype table (tl_session_dtype_rows), D a dtype
 * name or "file" (the weights as loaded). The ratios divide by the file dtype's row, so a lesson
 * can say "q4_0 reads 0.28x the bytes" of the figures it measured, not of a constant. */
static const char *const dtype_num_parts[] = {
    "weight_mb", "step_mb", "floor_ms", "pace_ms", "pace_over_floor", "generated",
    "weight_ratio", "step_ratio", "floor_ratio", "pace_ratio", "ids_agree", NULL,
};
static const char *const dtype_str_parts[] = { "text", "first_ids", NULL };

/* 0: a number, 1: text, -1: not a dtype field. *file: D was "file". */
static int dtype_field(const char *name, tl_dtype *dt, int *file, const char **part)
{
    if (strncmp(name, "dtype.", 6))
        return -1;
    const char *d = name + 6, *dot = strchr(d, '.');
    char dn[8];
    if (!dot || dot - d >= (long)sizeof dn)
        return -1;
    memcpy(dn, d, (size_t)(dot - d));
    dn[dot - d] = '\0';
    *file = !strcmp(dn, "file");
    if (!*file && tl_dtype_parse(dn, dt))
        return -1;
    *part = dot + 1;
    return in_list(dtype_num_parts, *part) ? 0 : in_list(dtype_str_parts, *part) ? 1 : -1;
}

/* cmp.<NAME>.<what>: a compare action's outcome ("lower", "same", "higher", "undecided": a
 * against b), the medians a and b, each side's extremes, the ratio b / a, the runs a side and
 * the tolerance of "same" in percent. */
static const char *const cmp_num_parts[] = {
    "a", "b", "a_lo", "a_hi", "b_lo", "b_hi", "ratio", "runs", "within_pct", NULL,
};

/* 0: a number, 1: text, -1: not a cmp field. name_out gets NAME. */
static int cmp_field(const char *name, char name_out[32], const char **part)
{
    if (strncmp(name, "cmp.", 4))
        return -1;
    const char *d = name + 4, *dot = strchr(d, '.');
    if (!dot || dot == d || dot - d >= 32)
        return -1;
    memcpy(name_out, d, (size_t)(dot - d));
    name_out[dot - d] = '\0';
    *part = dot + 1;
    return in_list(cmp_num_parts, *part) ? 0 : !strcmp(*part, "outcome") ? 1 : -1;
}

static int is_num_field(const char *name)
{
    tl_dtype dt;
    int file;
    const char *part;
    char cn[32];
    return in_list(num_fields, name) || dtype_field(name, &dt, &file, &part) == 0 || cmp_field(name, cn, &part) == 0 ||
           lb_field_kind(name) == 0 || lp_field_kind(name) == 0;
}

static int is_str_field(const char *name)
{
    tl_dtype dt;
    int file;
    const char *part;
    char cn[32];
    return in_list(str_fields, name) || dtype_field(name, &dt, &file, &part) == 1 || cmp_field(name, cn, &part) == 1 ||
           lb_field_kind(name) == 1 || lp_field_kind(name) == 1;
}

static char *dupstr(const char *s)
{
    return strdup(s ? s : "");
}

typedef enum { P_MODEL, P_TEMP, P_FINAL } prob_kind;

/* The chosen token's probability at one stage. P_MODEL, the softmax of the raw logits, is what
 * the model said; P_FINAL is after the cuts and is 1 under greedy whatever the model thought,
 * so narration about "how sure the model was" must not use it. */
static double chosen_prob(const tl_step *st, prob_kind k)
{
    for (int i = 0; i < st->sample.n; i++)
        if (st->sample.cand[i].id == st->chosen) {
            const tl_candidate *c = &st->sample.cand[i];
            return k == P_MODEL ? c->prob : k == P_TEMP ? c->prob_temp : c->prob_final;
        }
    return NAN;
}

/* How the tokenizer splits text (no BOS, special-token literals parsed as the template's are):
 * the count, and the pieces in the Tokens pane's visible form, `,` `␣` `5`. */
static int split_tokens(const tl_tokenizer *tok, const char *text, char **pieces)
{
    int *ids = NULL, n = 0;
    if (pieces)
        *pieces = NULL;
    if (!tok || !text || tl_tokenizer_encode(tok, text, strlen(text), 0, &ids, &n, NULL))
        return -1;
    if (pieces) {
        buf_t b = { 0 };
        buf_put(&b, "", 0);
        for (int i = 0; i < n; i++) {
            char vis[256];
            size_t w = tl_tokenizer_display(tok, ids[i], vis, sizeof vis);
            buf_put(&b, i ? " `" : "`", i ? 2 : 1);
            buf_put(&b, vis, w < sizeof vis ? w : sizeof vis - 1);
            buf_put(&b, "`", 1);
        }
        *pieces = b.p;
    }
    free(ids);
    return n;
}

/* A chunk in a list of chunks, in backticks as the Tokens pane writes pieces: `Once` ` upon` */
static void chunk_list_add(buf_t *b, const char *chunk, size_t len)
{
    if (b->len)
        buf_put(b, " ", 1);
    buf_put(b, "`", 1);
    buf_put(b, chunk, len);
    buf_put(b, "`", 1);
}

/* Words as a reader counts them: runs of non-space characters. */
static int count_words(const char *s)
{
    int n = 0, in = 0;
    for (; s && *s; s++) {
        int sp = *s == ' ' || *s == '\n' || *s == '\t' || *s == '\r';
        n += !sp && !in;
        in = !sp;
    }
    return n;
}

static const char *first_stop_string(const tl_session *s)
{
    int n = 0;
    const char *const *v = tl_session_stop_strings(s, &n);
    return n > 0 ? v[0] : NULL;
}

static double median_decode_ms(tl_session *s)
{
    int n = tl_session_n_steps(s), k = 0;
    if (n < 2)
        return NAN;
    double *v = malloc(sizeof(double) * (size_t)n);
    if (!v)
        return NAN;
    for (int i = 1; i < n; i++)
        v[k++] = tl_session_step_at(s, i)->ms;
    double m = tl_median(v, k);
    free(v);
    return m;
}

static char *join_ids(const int *ids, int n, const tl_tokenizer *tok, int names)
{
    size_t cap = 64 + (size_t)n * 32, len = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        const char *name = names && tok ? tl_tokenizer_token(tok, ids[i]) : NULL;
        int w = names ? snprintf(out + len, cap - len, "%s%s", i ? ", " : "", name ? name : "?")
                      : snprintf(out + len, cap - len, "%s%d", i ? ", " : "", ids[i]);
        if (w < 0 || (size_t)w >= cap - len)
            break;
        len += (size_t)w;
    }
    return out;
}

static const char *hold_name(int r)
{
    if (r & TL_HOLD_STOP_PREFIX) return "stop_prefix";
    if (r & TL_HOLD_INCOMPLETE_UTF8) return "incomplete_utf8";
    if (r & TL_HOLD_PARTIAL_WORD) return "partial_word";
    return "none";
}

/* The generated tokens' text with special tokens written out: what the model "said". */
static char *raw_text(tl_session *s)
{
    int n = 0, tail = 0;
    const int *ids = tl_session_generated_ids(s, &n);
    const tl_tokenizer *tok = tl_session_tokenizer(s);
    char *text = NULL;
    size_t len = 0;
    if (!tok || n == 0 || tl_tokenizer_decode(tok, ids, n, &text, &len, &tail, NULL))
        return dupstr("");
    return text;
}

/* Trap 2's two clocks on the same decode passes: the median step's unsynchronized reading as a
 * percentage of its synchronized one, so one launch the OS preempted on a busy machine does not
 * decide it. NAN unless every decode pass has both. */
static double unsynced_percent(tl_session *s)
{
    const tl_metrics *m = tl_session_metrics_obj(s);
    int n = tl_metrics_count(m), k = 0;
    double *r = n > 1 ? malloc(sizeof(double) * (size_t)n) : NULL;
    for (int i = 1; r && i < n; i++) {
        double u = tl_metrics_token_unsynced_ms(m, i), p = tl_metrics_token_pass_ms(m, i);
        if (u < 0 || p <= 0) {
            free(r);
            return NAN;
        }
        r[k++] = 100 * u / p;
    }
    double med = k ? tl_median(r, k) : NAN;
    free(r);
    return med;
}

/* A negative metric means "not measured"; lessons see NAN so that checks fail loudly. */
static double known(double v)
{
    return v < 0 ? NAN : v;
}

/* The row of dt in the session's dtype table; NULL when that dtype has not run. */
static const tl_dtype_row *dtype_row(tl_dtype_row *rows, int n, tl_dtype dt)
{
    for (int i = 0; i < n; i++)
        if (rows[i].dtype == dt)
            return &rows[i];
    return NULL;
}

/* A dtype.D.X field (dtype_field said which). Unknown values are NAN / "": a dtype that has not
 * run fails every check on it. */
static int dtype_get(tl_session *s, const char *name, field_value *out)
{
    tl_dtype dt = TL_F32;
    int file;
    const char *part;
    int kind = dtype_field(name, &dt, &file, &part);
    if (kind < 0)
        return -1;
    if (file)
        dt = tl_session_file_dtype(s);
    tl_dtype_row rows[TL_DTYPE_COUNT];
    int n = tl_session_dtype_rows(s, rows, TL_DTYPE_COUNT);
    const tl_dtype_row *r = dtype_row(rows, n, dt), *f = dtype_row(rows, n, tl_session_file_dtype(s));
    if (kind == 1) {
        out->kind = F_STR;
        if (!r || r->n_first == 0) {
            out->str = dupstr("");
        } else if (!strcmp(part, "first_ids")) {
            out->str = join_ids(r->first_ids, r->n_first, NULL, 0);
        } else {   /* text: what those ids say, special tokens left out as the streamer does */
            const tl_tokenizer *tok = tl_session_tokenizer(s);
            int ids[TL_DTYPE_ROW_IDS], k = 0;
            for (int i = 0; tok && i < r->n_first; i++)
                if (!tl_tokenizer_is_special(tok, r->first_ids[i]))
                    ids[k++] = r->first_ids[i];
            char *text = NULL;
            size_t len = 0;
            int tail = 0;
            if (!tok || tl_tokenizer_decode(tok, ids, k, &text, &len, &tail, NULL))
                text = dupstr("");
            out->str = text;
        }
        return out->str ? 0 : -1;
    }
    out->kind = F_NUM;
    out->num = NAN;
    if (!r)
        return 0;
    int gen = r->generated > 0;
    /* no ratio for a pace under its floor's spread: that is a measurement problem */
    int below = r->floor_lo_ms > 0 && r->pace_ms > 0 && r->pace_ms < r->floor_lo_ms;
    double pof = gen && r->pace_ms > 0 && r->floor_ms > 0 && !below ? r->pace_ms / r->floor_ms : NAN;
    if (!strcmp(part, "weight_mb")) out->num = r->weight_bytes / 1e6;
    else if (!strcmp(part, "step_mb")) out->num = known(r->step_bytes) / 1e6;
    else if (!strcmp(part, "floor_ms")) out->num = known(r->floor_ms);
    else if (!strcmp(part, "pace_ms")) out->num = known(r->pace_ms);
    else if (!strcmp(part, "pace_over_floor")) out->num = pof;
    else if (!strcmp(part, "generated")) out->num = r->generated;
    else if (f && !strcmp(part, "ids_agree")) {
        /* how many of the first ids agree with the loaded weights', from the start */
        int k = 0, m = r->n_first < f->n_first ? r->n_first : f->n_first;
        while (k < m && r->first_ids[k] == f->first_ids[k])
            k++;
        out->num = m ? k : NAN;
    } else if (f) {
        double a = NAN, b = NAN;
        if (!strcmp(part, "weight_ratio")) a = r->weight_bytes, b = f->weight_bytes;
        else if (!strcmp(part, "step_ratio")) a = r->step_bytes, b = f->step_bytes;
        else if (!strcmp(part, "floor_ratio")) a = r->floor_ms, b = f->floor_ms;
        else if (!strcmp(part, "pace_ratio")) a = r->pace_ms, b = f->pace_ms;
        out->num = a > 0 && b > 0 ? a / b : NAN;
    }
    return 0;
}

static const cmp_slot *find_cmp(const tl_lesson *l, const char *name)
{
    for (int i = 0; i < l->n_cmps; i++)
        if (!strcmp(l->cmps[i].name, name))
            return &l->cmps[i];
    return NULL;
}

/* A cmp.NAME.X field. Before its compare ran: NAN, and the outcome "undecided". */
static int cmp_get(const tl_lesson *l, const char *name, field_value *out)
{
    char cn[32];
    const char *part;
    int kind = cmp_field(name, cn, &part);
    if (kind < 0)
        return -1;
    const cmp_slot *c = find_cmp(l, cn);
    if (kind == 1) {
        out->kind = F_STR;
        out->str = dupstr(tl_cmp_outcome_name(c ? c->c.outcome : TL_CMP_UNDECIDED));
        return out->str ? 0 : -1;
    }
    out->kind = F_NUM;
    out->num = NAN;
    if (!c)
        return 0;
    const tl_cmp *r = &c->c;
    if (!strcmp(part, "a")) out->num = r->med_a;
    else if (!strcmp(part, "b")) out->num = r->med_b;
    else if (!strcmp(part, "a_lo")) out->num = r->lo_a;
    else if (!strcmp(part, "a_hi")) out->num = r->hi_a;
    else if (!strcmp(part, "b_lo")) out->num = r->lo_b;
    else if (!strcmp(part, "b_hi")) out->num = r->hi_b;
    else if (!strcmp(part, "ratio")) out->num = r->med_a > 0 ? r->med_b / r->med_a : NAN;
    else if (!strcmp(part, "runs")) out->num = r->n_a;
    else if (!strcmp(part, "within_pct")) out->num = c->within * 100;
    return 0;
}

/* What the number and text fields read, gathered once a lookup. */
typedef struct field_ctx {
    const tl_lesson *l;
    tl_session *s;
    const tl_model *m;
    tl_metrics_report r;
    const tl_stop_config *sc;
    const tl_stop_result *sr;
    tl_sampling sp;
    int n_steps, n_prompt, n_gen;
    const int *prompt_ids, *gen_ids;
    const tl_step *first, *last;
} field_ctx;

#define FIELD_LOCALS(c)                                                                                   \
    const tl_lesson *l = (c)->l;                                                                          \
    tl_session *s = (c)->s;                                                                               \
    const tl_model *m = (c)->m;                                                                           \
    const tl_metrics_report r = (c)->r;                                                                   \
    const tl_stop_config *sc = (c)->sc;                                                                   \
    const tl_stop_result *sr = (c)->sr;                                                                   \
    const tl_sampling sp = (c)->sp;                                                                       \
    const int n_steps = (c)->n_steps, n_prompt = (c)->n_prompt, n_gen = (c)->n_gen;                       \
    const int *prompt_ids = (c)->prompt_ids, *gen_ids = (c)->gen_ids;                                     \
    const tl_step *first = (c)->first, *last = (c)->last

/* A number field of the session, the request or what the lesson ran (num_fields). */
static double num_field(const field_ctx *c, const char *name)
{
    FIELD_LOCALS(c);
    (void)sr; (void)gen_ids; (void)n_steps;
    double v = NAN;
    if (!strcmp(name, "prompt_tokens")) v = n_prompt;
    else if (!strcmp(name, "prompt_special")) {
        const tl_tokenizer *tok = tl_session_tokenizer(s);
        v = tok ? 0 : NAN;
        for (int i = 0; tok && i < n_prompt; i++) v += tl_tokenizer_is_special(tok, prompt_ids[i]);
    }
    else if (!strcmp(name, "generated")) v = n_gen;
    else if (!strcmp(name, "steps")) v = n_steps;
    else if (!strcmp(name, "position")) v = tl_engine_pos(tl_session_engine(s));
    else if (!strcmp(name, "ttft_ms")) v = known(r.ttft_ms);
    else if (!strcmp(name, "tpot_ms")) v = known(r.tpot_ms);
    else if (!strcmp(name, "floor_ms")) v = known(r.floor_ms);
    else if (!strcmp(name, "bandwidth_gbs")) v = known(r.bandwidth_gbs);
    else if (!strcmp(name, "tpot_over_floor")) v = known(r.tpot_over_floor);
    else if (!strcmp(name, "floor_lo_ms")) v = known(r.floor_lo_ms);
    else if (!strcmp(name, "floor_hi_ms")) v = known(r.floor_hi_ms);
    else if (!strcmp(name, "floor_reads")) v = r.floor_reads;
    else if (!strcmp(name, "in_cache")) v = r.in_cache;
    else if (!strcmp(name, "llc_mb")) v = r.llc_bytes > 0 ? r.llc_bytes / 1e6 : NAN;
    else if (!strcmp(name, "decode_tokens_per_s")) v = known(r.decode_tokens_per_s);
    else if (!strcmp(name, "prompt_as_output_tokens_per_s")) v = known(r.prompt_as_output_tokens_per_s);
    else if (!strcmp(name, "ref_floor_ms")) v = r.ref_floor_ms;
    else if (!strcmp(name, "ref_tokens_per_s")) v = 1000.0 / r.ref_floor_ms;
    else if (!strcmp(name, "floor_tokens_per_s")) v = r.floor_ms > 0 ? 1000.0 / r.floor_ms : NAN;
    else if (!strcmp(name, "unsynced_applicable")) v = r.unsynced_applicable;
    else if (!strcmp(name, "unsynced_tpot_ms")) v = r.unsynced_applicable ? known(r.unsynced_tpot_ms) : NAN;
    else if (!strcmp(name, "pass_mean_ms")) v = known(r.pass_mean_ms);
    else if (!strcmp(name, "unsynced_percent")) v = unsynced_percent(s);
    else if (!strcmp(name, "step_mb")) v = known(r.step_bytes) / 1e6;
    else if (!strcmp(name, "weight_mb")) v = (double)m->weight_bytes / 1e6;
    else if (!strcmp(name, "params_m")) v = (double)m->n_params / 1e6;
    else if (!strcmp(name, "max_new_tokens")) v = sc->max_new_tokens;
    else if (!strcmp(name, "vocab")) v = m->cfg.vocab_size;
    else if (!strcmp(name, "first_prob")) v = first ? chosen_prob(first, P_MODEL) : NAN;
    else if (!strcmp(name, "last_prob")) v = last ? chosen_prob(last, P_MODEL) : NAN;
    else if (!strcmp(name, "first_prob_temp")) v = first ? chosen_prob(first, P_TEMP) : NAN;
    else if (!strcmp(name, "last_prob_temp")) v = last ? chosen_prob(last, P_TEMP) : NAN;
    else if (!strcmp(name, "first_prob_final")) v = first ? chosen_prob(first, P_FINAL) : NAN;
    else if (!strcmp(name, "last_prob_final")) v = last ? chosen_prob(last, P_FINAL) : NAN;
    else if (!strcmp(name, "temperature")) v = sp.temperature;
    else if (!strcmp(name, "top_p")) v = sp.top_p;
    else if (!strcmp(name, "top_k")) v = sp.top_k;
    else if (!strcmp(name, "prefill_ms")) v = first ? first->ms : NAN;
    else if (!strcmp(name, "first_decode_ms")) v = n_steps > 1 ? tl_session_step_at(s, 1)->ms : NAN;
    else if (!strcmp(name, "median_decode_ms")) v = median_decode_ms(s);
    else if (!strcmp(name, "kept")) v = last ? last->sample.kept : NAN;
    else if (!strcmp(name, "n_eos")) v = sc->n_eos;
    else if (!strcmp(name, "template_ms")) v = known(r.template_ms);
    else if (!strcmp(name, "tokenize_ms")) v = known(r.tokenize_ms);
    else if (!strcmp(name, "iter_chunks")) v = l->iter_chunks;
    else if (!strcmp(name, "served_chunks")) v = l->served ? l->got.n_chunks : NAN;
    else if (!strcmp(name, "client_ttft_ms")) v = l->served && l->got.n_chunks ? l->got.client_ttft_ms : NAN;
    else if (!strcmp(name, "client_last_ms")) v = l->served && l->got.n_chunks ? l->got.client_last_ms : NAN;
    else if (!strcmp(name, "server_ttft_ms")) v = l->served ? known(l->got.server_ttft_ms) : NAN;
    else if (!strcmp(name, "served_port")) v = l->served ? l->got.port : NAN;
    else if (!strcmp(name, "served_prompt_tokens")) v = l->served ? l->got.prompt_tokens : NAN;
    else if (!strcmp(name, "served_completion_tokens")) v = l->served ? l->got.completion_tokens : NAN;
    else if (!strcmp(name, "tokenized_count")) v = l->tokenized_pieces ? l->tokenized_count : NAN;
    else if (!strcmp(name, "dtypes_used")) {
        tl_dtype_row rows[TL_DTYPE_COUNT];
        v = tl_session_dtype_rows(s, rows, TL_DTYPE_COUNT);
    }
    else if (!strcmp(name, "stop_string_tokens")) {
        int n = split_tokens(tl_session_tokenizer(s), first_stop_string(s), NULL);
        v = n < 0 ? NAN : n;
    } else if (!strcmp(name, "user_tokens") || !strcmp(name, "user_words")
               || !strcmp(name, "tokens_per_word")) {
        /* the last user message by itself, without the template around it */
        const char *u = tl_session_message(s, "user");
        int nt = split_tokens(tl_session_tokenizer(s), u, NULL), nw = count_words(u);
        v = !u || nt < 0 ? NAN : !strcmp(name, "user_tokens") ? nt : !strcmp(name, "user_words") ? nw
            : nw ? (double)nt / nw : NAN;
    }
    return v;
}

/* A text field (str_fields), malloc'd; NULL when out of memory. */
static char *str_field(const field_ctx *c, const char *name)
{
    FIELD_LOCALS(c);
    (void)m; (void)r; (void)sp; (void)prompt_ids; (void)n_prompt; (void)n_steps;
    char *str = NULL;
    size_t len = 0;
    if (!strcmp(name, "stop_reason")) str = dupstr(tl_stop_reason_name(sr->reason));
    else if (!strcmp(name, "stop_detail")) str = dupstr(sr->detail);
    else if (!strcmp(name, "budget_source")) str = dupstr(tl_budget_source_name(sc->budget_source));
    else if (!strcmp(name, "text")) str = dupstr(tl_session_text(s, &len));
    else if (!strcmp(name, "streamed")) str = dupstr(tl_session_streamed(s, &len));
    else if (!strcmp(name, "held_back")) str = dupstr(last ? last->held : "");
    else if (!strcmp(name, "printed")) str = dupstr(last ? last->printed : "");
    else if (!strcmp(name, "hold_reason")) str = dupstr(hold_name(last ? last->hold_reason : 0));
    else if (!strcmp(name, "prompt_text")) str = dupstr(tl_session_prompt_text(s, &len));
    else if (!strcmp(name, "first_piece")) str = dupstr(first ? first->piece : "");
    else if (!strcmp(name, "last_piece")) str = dupstr(last ? last->piece : "");
    else if (!strcmp(name, "eos_ids")) str = join_ids(sc->eos_ids, sc->n_eos, NULL, 0);
    else if (!strcmp(name, "eos_names")) str = join_ids(sc->eos_ids, sc->n_eos, tl_session_tokenizer(s), 1);
    else if (!strcmp(name, "last_kind")) str = dupstr(!last ? "none" : last->kind == TL_STEP_PREFILL ? "prefill" : "decode");
    else if (!strcmp(name, "generated_ids")) str = join_ids(gen_ids, n_gen, NULL, 0);
    else if (!strcmp(name, "device")) str = dupstr(tl_engine_device(tl_session_engine(s)));
    else if (!strcmp(name, "dtype")) str = dupstr(tl_dtype_name(tl_session_dtype(s)));
    else if (!strcmp(name, "file_dtype")) str = dupstr(tl_dtype_name(tl_session_file_dtype(s)));
    else if (!strcmp(name, "iter_text")) str = dupstr(l->iter_text);
    else if (!strcmp(name, "iter_chunk_list")) str = dupstr(l->iter_list);
    else if (!strcmp(name, "served_text") || !strcmp(name, "served_chunk_list")) {
        buf_t b = { 0 };
        buf_put(&b, "", 0);
        for (int i = 0; i < l->got.n_chunks; i++) {
            size_t n = strlen(l->got.chunks[i]);
            if (!strcmp(name, "served_text"))
                buf_put(&b, l->got.chunks[i], n);
            else
                chunk_list_add(&b, l->got.chunks[i], n);
        }
        str = b.p;
    }
    else if (!strcmp(name, "served_finish_reason")) str = dupstr(l->served ? l->got.finish_reason : "");
    else if (!strcmp(name, "raw_text")) str = raw_text(s);
    else if (!strcmp(name, "tokenized_pieces")) str = dupstr(l->tokenized_pieces);
    else if (!strcmp(name, "stop_string_pieces")) {
        char *p = NULL;
        split_tokens(tl_session_tokenizer(s), first_stop_string(s), &p);
        str = p ? p : dupstr("");
    }
    return str;
}


static int field_get(const tl_lesson *l, tl_session *s, const char *name, field_value *out)
{
    out->kind = F_NUM;
    out->num = NAN;
    out->str = NULL;
    if (!strncmp(name, "dtype.", 6))
        return dtype_get(s, name, out);
    if (!strncmp(name, "cmp.", 4))
        return cmp_get(l, name, out);
    if (lb_field_kind(name) == 1 || lp_field_kind(name) == 1) {
        out->kind = F_STR;
        out->str = dupstr(lb_field_kind(name) == 1 ? lb_str(l->batch, name) : lp_str(l->pace, name));
        return out->str ? 0 : -1;
    }
    if (lb_field_kind(name) == 0 || lp_field_kind(name) == 0) {
        out->num = lb_field_kind(name) == 0 ? lb_num(l->batch, name) : lp_num(l->pace, name);
        return 0;
    }
    int n_steps = tl_session_n_steps(s);
    field_ctx c = {.l = l, .s = s, .m = tl_session_model(s), .r = tl_session_metrics(s),
                   .sc = tl_session_stop_config(s), .sr = tl_session_stop(s), .sp = tl_session_sampling(s),
                   .n_steps = n_steps, .first = n_steps ? tl_session_step_at(s, 0) : NULL,
                   .last = n_steps ? tl_session_step_at(s, n_steps - 1) : NULL};
    c.prompt_ids = tl_session_prompt_ids(s, &c.n_prompt);
    c.gen_ids = tl_session_generated_ids(s, &c.n_gen);
    if (in_list(num_fields, name)) {
        out->num = num_field(&c, name);
        return 0;
    }
    if (!in_list(str_fields, name))
        return -1;
    out->kind = F_STR;
    out->str = str_field(&c, name);
    return out->str ? 0 : -1;
}

/* ---------- loading and validation ---------- */

static const char *const panes[] = { "prompt", "tokens", "logits", "stream", "stop", "timing", "", NULL };

static int fail(tl_error *err, const tl_lesson *l, int step, const char *what, const char *field,
                const char *msg)
{
    if (step < 0)
        return tl_error_set(err, "%s: %s%s%s", l->path, field ? field : "", field ? ": " : "", msg);
    return tl_error_set(err, "%s: step %d: %s \"%s\": %s", l->path, step + 1, what, field, msg);
}

/* An integer in [0, max]: checked before any cast (a cast of 1e300 to int is undefined) */
static int is_count(const cJSON *v, double max)
{
    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= max && v->valuedouble == floor(v->valuedouble);
}

/* The lesson actions: one row each in `actions` (below, after their handlers) says the name, what
 * its value must be when the lesson loads, and what it does to the session. Adding an action is
 * one row and its handler. */
typedef enum { V_BOOL, V_STRING, V_STRING_OR_NULL, V_COUNT, V_ARRAY, V_STRINGS, V_TEST, V_CHECK } value_kind;
typedef struct action_row {
    const char *name;
    value_kind kind;
    int (*test)(const cJSON *v);   /* V_TEST: 1 when the value is right */
    int (*check)(const tl_lesson *l, int si, const cJSON *v, tl_error *err);   /* V_CHECK: says why not */
    int (*apply)(tl_lesson *l, tl_session *s, const cJSON *v, tl_lesson_ui *ui, tl_error *err);
} action_row;
static const action_row *find_action(const char *name);
static int check_action(const tl_lesson *l, int si, const cJSON *a, tl_error *err);

/* compare: {"as", "a": {"field", "actions"?}, "b": {...}, "runs"? (3-50), "same_within"? (0-1)};
 * a side's actions are any but another compare. */
static int check_compare(const tl_lesson *l, int si, const cJSON *v, tl_error *err)
{
    const char *k = "compare";
    if (!cJSON_IsObject(v))
        return fail(err, l, si, "action", k, "needs {\"as\", \"a\", \"b\"}");
    for (const cJSON *e = v->child; e; e = e->next)
        if (strcmp(e->string, "as") && strcmp(e->string, "a") && strcmp(e->string, "b") && strcmp(e->string, "runs")
            && strcmp(e->string, "same_within"))
            return fail(err, l, si, "action", k, "takes as, a, b, runs, same_within");
    const cJSON *as = cJSON_GetObjectItemCaseSensitive(v, "as");
    if (!cJSON_IsString(as) || !*as->valuestring || strlen(as->valuestring) >= 32 || strchr(as->valuestring, '.')
        || strchr(as->valuestring, '|'))
        return fail(err, l, si, "action", k, "as: a name of 1-31 characters without . or |");
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(v, "runs");
    if (runs && !(is_count(runs, MAX_CMP_RUNS) && runs->valuedouble >= 3))
        return fail(err, l, si, "action", k, "runs: an integer from 3 to 50");
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(v, "same_within");
    if (w && !(cJSON_IsNumber(w) && w->valuedouble >= 0 && w->valuedouble <= 1))
        return fail(err, l, si, "action", k, "same_within: a fraction from 0 to 1");
    const char *sides[] = { "a", "b" };
    for (int i = 0; i < 2; i++) {
        const cJSON *sd = cJSON_GetObjectItemCaseSensitive(v, sides[i]);
        const cJSON *f = cJSON_IsObject(sd) ? cJSON_GetObjectItemCaseSensitive(sd, "field") : NULL;
        const cJSON *acts = cJSON_IsObject(sd) ? cJSON_GetObjectItemCaseSensitive(sd, "actions") : NULL;
        if (!cJSON_IsString(f) || !is_num_field(f->valuestring))
            return fail(err, l, si, "action", k, "a and b: each {\"field\": a number field, \"actions\": [...]}");
        for (const cJSON *e = sd->child; e; e = e->next)
            if (strcmp(e->string, "field") && strcmp(e->string, "actions"))
                return fail(err, l, si, "action", k, "a side takes field and actions");
        if (acts && !cJSON_IsArray(acts))
            return fail(err, l, si, "action", k, "a side's actions are an array");
        for (const cJSON *e = acts ? acts->child : NULL; e; e = e->next) {
            if (cJSON_IsObject(e) && e->child && !strcmp(e->child->string, "compare"))
                return fail(err, l, si, "action", k, "a side cannot hold another compare");
            if (check_action(l, si, e, err))
                return -1;
        }
    }
    return 0;
}

/* The custom checks of the lesson actions table (the rest are checked by their value kind). */
static int check_sampling(const tl_lesson *l, int si, const cJSON *v, tl_error *err)
{
    const char *k = "sampling";
    if (!cJSON_IsObject(v))
        return fail(err, l, si, "action", k, "wrong type or value (see lessons/README.md)");
    for (const cJSON *e = v->child; e; e = e->next) {
        if (!(cJSON_IsNumber(e) && (!strcmp(e->string, "temperature") || !strcmp(e->string, "top_k")
                                    || !strcmp(e->string, "top_p") || !strcmp(e->string, "seed")))
            && !(cJSON_IsBool(e) && !strcmp(e->string, "greedy")))
            return fail(err, l, si, "action", k, "takes greedy, temperature, top_k, top_p, seed");
        /* the ranges of generate's options */
        double x = e->valuedouble;
        if (!strcmp(e->string, "temperature") && !(x > 0 && isfinite(x)))
            return fail(err, l, si, "action", k, "temperature must be a finite number > 0");
        if (!strcmp(e->string, "top_p") && !(x > 0 && x <= 1))
            return fail(err, l, si, "action", k, "top_p must be a number in (0, 1]");
        if (!strcmp(e->string, "top_k") && !is_count(e, 2147483647.0))
            return fail(err, l, si, "action", k, "top_k must be an integer >= 0");
        if (!strcmp(e->string, "seed") && !is_count(e, 9007199254740992.0))
            return fail(err, l, si, "action", k, "seed must be an integer in [0, 2^53]");
    }
    return 0;
}

static int check_dtype(const tl_lesson *l, int si, const cJSON *v, tl_error *err)
{
    tl_dtype dt;
    if (!cJSON_IsString(v) || (strcmp(v->valuestring, "file") && tl_dtype_parse(v->valuestring, &dt)))
        return fail(err, l, si, "action", "dtype", "expected bf16, f16, f32, q8_0, q4_0 or file");
    return 0;
}

static int check_stream_mode(const cJSON *v)
{
    return cJSON_IsString(v) && (!strcmp(v->valuestring, "hf") || !strcmp(v->valuestring, "server"));
}

static int check_force(const cJSON *v) { return cJSON_IsString(v) || is_count(v, 2147483647.0); }

static int check_highlight(const cJSON *v) { return cJSON_IsString(v) && in_list(panes, v->valuestring); }

static int check_remember(const cJSON *v)
{
    const cJSON *as = cJSON_GetObjectItemCaseSensitive(v, "as");
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(v, "field");
    return cJSON_IsString(as) && cJSON_IsString(f) && strlen(as->valuestring) < 32
           && (is_num_field(f->valuestring) || is_str_field(f->valuestring));
}

static int check_action(const tl_lesson *l, int si, const cJSON *a, tl_error *err)
{
    if (!cJSON_IsObject(a) || !a->child || a->child->next)
        return fail(err, l, si, "action", "?", "each action is an object with exactly one key");
    const cJSON *v = a->child;
    const action_row *row = find_action(v->string);
    if (!row)
        return fail(err, l, si, "action", v->string, "unknown action");
    int ok = 1;
    switch (row->kind) {
    case V_BOOL: ok = cJSON_IsBool(v); break;
    case V_STRING: ok = cJSON_IsString(v); break;
    case V_STRING_OR_NULL: ok = cJSON_IsString(v) || cJSON_IsNull(v); break;
    case V_COUNT: ok = is_count(v, 16777216); break;
    case V_ARRAY: ok = cJSON_IsArray(v); break;
    case V_STRINGS:
        ok = cJSON_IsArray(v);
        for (const cJSON *e = ok ? v->child : NULL; e; e = e->next)
            ok = ok && cJSON_IsString(e);
        break;
    case V_TEST: ok = row->test(v); break;
    case V_CHECK: return row->check(l, si, v, err);
    }
    return ok ? 0 : fail(err, l, si, "action", v->string, "wrong type or value (see lessons/README.md)");
}

static const char *const str_ops[] = { "equals", "contains", "not_contains", "starts_with",
                                       "not_ends_with", "nonempty", "empty", "equals_saved",
                                       "differs_from_saved", "decided", NULL };
static const char *const num_ops[] = { "eq", "min", "max", "gt", "lt", "gt_saved", "lt_saved",
                                       "eq_saved", "gt_field", "lt_field", "eq_field", NULL };

static int check_expect(const tl_lesson *l, int si, const cJSON *e, tl_error *err)
{
    if (!cJSON_IsObject(e) || !e->child || e->child->next)
        return fail(err, l, si, "expectation", "?", "each expectation is an object with exactly one key");
    const cJSON *v = e->child;
    const char *k = v->string;
    int is_num = is_num_field(k);
    if (!is_num && !is_str_field(k))
        return fail(err, l, si, "expectation", k, !strncmp(k, "dtype.", 6)
                    ? "unknown field (dtype.D.X: D bf16, f16, f32, q8_0, q4_0 or file; see lessons/README.md)"
                    : "unknown field");
    if (is_num ? cJSON_IsNumber(v) : cJSON_IsString(v))
        return 0;
    if (!cJSON_IsObject(v) || !v->child)
        return fail(err, l, si, "expectation", k, is_num ? "needs a number or {op: value}" : "needs a string or {op: value}");
    for (const cJSON *op = v->child; op; op = op->next) {
        if (!in_list(is_num ? num_ops : str_ops, op->string))
            return fail(err, l, si, "expectation", k, "unknown comparison");
        int want_str = strstr(op->string, "saved") || strstr(op->string, "field") || !is_num;
        if (!strcmp(op->string, "nonempty") || !strcmp(op->string, "empty") || !strcmp(op->string, "decided"))
            want_str = 0;
        if (!strcmp(op->string, "decided") && (!cJSON_IsTrue(op) || strncmp(k, "cmp.", 4)))
            return fail(err, l, si, "expectation", k, "decided: true, on a cmp.NAME.outcome");
        if (want_str ? !cJSON_IsString(op) : !(cJSON_IsNumber(op) || cJSON_IsBool(op)))
            return fail(err, l, si, "expectation", k, "wrong type of comparison value");
        if (strstr(op->string, "field") && !is_num_field(op->valuestring))
            return fail(err, l, si, "expectation", k, "compares with an unknown field");
    }
    return 0;
}

static int check_text(const tl_lesson *l, int si, const cJSON *obj, const char *key, tl_error *err)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsObject(t))
        return fail(err, l, si, "field", key, "needs {\"en\": ..., \"vi\": ...}");
    const char *langs[] = { "en", "vi" };
    for (int i = 0; i < 2; i++) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(t, langs[i]);
        if (!cJSON_IsString(s) || !*s->valuestring)
            return fail(err, l, si, "field", key, i ? "missing the Vietnamese text (\"vi\")" : "missing the English text (\"en\")");
    }
    return 0;
}


static int choices_ok(const char *t);

int tl_lesson_load(tl_lesson **out, const char *path, tl_error *err)
{
    *out = NULL;
    char *text;
    tl_file_read_text(path, 16u << 20, &text, NULL, err);
    if (!text)
        return -1;
    tl_lesson *l = calloc(1, sizeof *l);
    if (!l) {
        free(text);
        return tl_error_set(err, "%s: out of memory", path);
    }
    l->path = strdup(path);
    l->root = cJSON_Parse(text);
    if (!l->root) {
        const char *at = cJSON_GetErrorPtr();
        int line = 1;
        for (const char *p = text; at && p < at && *p; p++)
            line += *p == '\n';
        tl_error_set(err, "%s: line %d: not valid JSON", path, line);
        free(text);
        tl_lesson_free(l);
        return -1;
    }
    free(text);
    int rc = 0;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(l->root, "id");
    l->steps = cJSON_GetObjectItemCaseSensitive(l->root, "steps");
    if (!cJSON_IsObject(l->root))
        rc = fail(err, l, -1, NULL, NULL, "a lesson is a JSON object");
    else if (!cJSON_IsString(id) || !*id->valuestring)
        rc = fail(err, l, -1, NULL, "id", "missing or not a string");
    else if (check_text(l, -1, l->root, "title", err))
        rc = -1;
    else if (!cJSON_IsArray(l->steps) || cJSON_GetArraySize(l->steps) == 0)
        rc = fail(err, l, -1, NULL, "steps", "missing or empty");
    if (!rc) {
        int si = 0;
        for (const cJSON *st = l->steps->child; st && !rc; st = st->next, si++) {
            if (!cJSON_IsObject(st)) {
                rc = tl_error_set(err, "%s: step %d: is not an object", l->path, si + 1);
                break;
            }
            for (const cJSON *f = st->child; f && !rc; f = f->next)
                if (strcmp(f->string, "say") && strcmp(f->string, "actions") && strcmp(f->string, "expect"))
                    rc = fail(err, l, si, "field", f->string, "unknown (say, actions, expect)");
            if (!rc && check_text(l, si, st, "say", err))
                rc = -1;
            const cJSON *say = cJSON_GetObjectItemCaseSensitive(st, "say");
            if (!rc && (!choices_ok(cJSON_GetObjectItemCaseSensitive(say, "en")->valuestring)
                        || !choices_ok(cJSON_GetObjectItemCaseSensitive(say, "vi")->valuestring)))
                rc = fail(err, l, si, "field", "say", "a [[NAME|lower|same|higher|undecided]] choice needs a name and four sentences");
            const cJSON *acts = cJSON_GetObjectItemCaseSensitive(st, "actions");
            const cJSON *exps = cJSON_GetObjectItemCaseSensitive(st, "expect");
            if (!rc && acts && !cJSON_IsArray(acts))
                rc = fail(err, l, si, "field", "actions", "is not an array");
            if (!rc && exps && !cJSON_IsArray(exps))
                rc = fail(err, l, si, "field", "expect", "is not an array");
            for (const cJSON *a = acts ? acts->child : NULL; a && !rc; a = a->next)
                rc = check_action(l, si, a, err);
            for (const cJSON *e = exps ? exps->child : NULL; e && !rc; e = e->next)
                rc = check_expect(l, si, e, err);
        }
        l->n_steps = si;
    }
    if (rc) {
        tl_lesson_free(l);
        return -1;
    }
    *out = l;
    return 0;
}

static void served_clear(tl_lesson *l)
{
    for (int i = 0; i < l->got.n_chunks; i++)
        free(l->got.chunks[i]);
    free(l->got.chunks);
    memset(&l->got, 0, sizeof l->got);
    l->served = 0;
}

void tl_lesson_set_server(tl_lesson *l, tl_lesson_server_fn fn, void *ctx)
{
    l->serve = fn;
    l->serve_ctx = ctx;
}

void tl_lesson_free(tl_lesson *l)
{
    if (!l)
        return;
    for (int i = 0; i < l->n_saved; i++)
        free(l->saved[i].str);
    free(l->iter_text);
    free(l->iter_list);
    served_clear(l);
    free(l->tokenized_pieces);
    lb_free(l->batch);
    lp_free(l->pace);
    cJSON_Delete(l->root);
    free(l->path);
    free(l);
}

const char *tl_lesson_id(const tl_lesson *l)
{
    return cJSON_GetObjectItemCaseSensitive(l->root, "id")->valuestring;
}

static const char *text_in(const cJSON *t, const char *lang)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(t, lang && !strcmp(lang, "vi") ? "vi" : "en");
    return s->valuestring;
}

const char *tl_lesson_title(const tl_lesson *l, const char *lang)
{
    return text_in(cJSON_GetObjectItemCaseSensitive(l->root, "title"), lang);
}

int tl_lesson_n_steps(const tl_lesson *l) { return l->n_steps; }

/* ---------- finding lessons ---------- */

/* The lookup (env, next to the binary, source tree, data dir) is shared with the model's. */
int tl_lesson_dir(char *buf, size_t size)
{
    return tl_paths_default_lessons(buf, size, NULL);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int tl_lesson_list(const char *dir, char ***paths, int *n, tl_error *err)
{
    *paths = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return tl_error_set(err, "%s: cannot open the lessons folder", dir);
    char **v = NULL;
    int cnt = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json") || e->d_name[0] == '.')
            continue;
        char **nv = realloc(v, sizeof *v * (size_t)(cnt + 1));
        if (!nv)
            break;
        v = nv;
        size_t plen = strlen(dir) + len + 2;
        v[cnt] = malloc(plen);
        if (!v[cnt])
            break;
        snprintf(v[cnt++], plen, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (cnt)   /* qsort's array must not be NULL, even for no elements (UBSan says so) */
        qsort(v, (size_t)cnt, sizeof *v, cmp_str);
    *paths = v;
    *n = cnt;
    return 0;
}

void tl_lesson_list_free(char **paths, int n)
{
    for (int i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}

const char *tl_lesson_default_lang(void)
{
    const char *vars[] = { "LC_ALL", "LC_MESSAGES", "LANG" };
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return !strncmp(v, "vi", 2) ? "vi" : "en";
    }
    return "en";
}

/* ---------- actions ---------- */


static int force_token(tl_session *s, const cJSON *v, tl_error *err)
{
    int id = -1;
    if (cJSON_IsNumber(v)) {
        id = (int)v->valuedouble;
    } else {
        const tl_tokenizer *tok = tl_session_tokenizer(s);
        if (!tok)
            return tl_error_set(err, "force: no tokenizer loaded");
        int *ids = NULL, n = 0;
        if (tl_tokenizer_encode(tok, v->valuestring, strlen(v->valuestring), 0, &ids, &n, err))
            return -1;
        id = n == 1 ? ids[0] : -1;
        free(ids);
        if (id < 0)
            return tl_error_set(err, "force: \"%s\" is not a single token", v->valuestring);
    }
    return tl_session_force(s, id, err);
}

/* The newest step's choice replaced by its rank-th candidate (1 = the most likely). */
static int force_rank(tl_session *s, int rank, tl_error *err)
{
    int n = tl_session_n_steps(s);
    const tl_step *st = n ? tl_session_step_at(s, n - 1) : NULL;
    if (!st)
        return tl_error_set(err, "force_rank: no step yet");
    if (rank < 1 || rank > st->sample.n)
        return tl_error_set(err, "force_rank: %d: only %d candidates", rank, st->sample.n);
    return tl_session_force(s, st->sample.cand[rank - 1].id, err);
}

/* Generation on the iterator streamer's background thread; the chunks read from its queue are
 * kept so a lesson can compare them with what the streamer printed. */
static int run_iter(tl_lesson *l, tl_session *s, tl_error *err)
{
    tl_iter *it = NULL;
    if (tl_iter_start(&it, s, err))
        return -1;
    buf_t text = { 0 }, list = { 0 };
    buf_put(&list, "", 0);
    l->iter_chunks = 0;
    char *chunk;
    size_t len;
    while (tl_iter_next(it, &chunk, &len, 60000) == 1) {
        buf_put(&text, chunk, len);
        if (len)
            chunk_list_add(&list, chunk, len);
        l->iter_chunks++;
        free(chunk);
    }
    free(l->iter_text);
    l->iter_text = text.p ? text.p : strdup("");
    free(l->iter_list);
    l->iter_list = list.p;
    return tl_iter_finish(it, err) < 0 ? -1 : 0;
}

/* The session's request sent to the front end's chat server by an HTTP client; what the client
 * received is kept for the fields served_*. */
static int serve_request(tl_lesson *l, tl_session *s, tl_error *err)
{
    if (!l->serve)
        return tl_error_set(err, "serve_request: this tokenloop has no chat server (built without libmicrohttpd)");
    served_clear(l);
    if (l->serve(l->serve_ctx, s, &l->got, err)) {
        served_clear(l);
        return -1;
    }
    l->served = 1;
    return 0;
}

static int remember(tl_lesson *l, tl_session *s, const cJSON *v, tl_error *err)
{
    const char *as = cJSON_GetObjectItemCaseSensitive(v, "as")->valuestring;
    const char *f = cJSON_GetObjectItemCaseSensitive(v, "field")->valuestring;
    saved_value *slot = NULL;
    for (int i = 0; i < l->n_saved; i++)
        if (!strcmp(l->saved[i].name, as))
            slot = &l->saved[i];
    if (!slot) {
        if (l->n_saved == MAX_SAVED)
            return tl_error_set(err, "%s: remember: more than %d names", l->path, MAX_SAVED);
        slot = &l->saved[l->n_saved++];
        snprintf(slot->name, sizeof slot->name, "%s", as);
    }
    field_value fv;
    if (tl_session_prepare(s, err))   /* prompt fields exist once the request is rendered */
        return -1;
    if (field_get(l, s, f, &fv))
        return tl_error_set(err, "%s: remember: cannot read %s", l->path, f);
    free(slot->str);
    slot->is_num = fv.kind == F_NUM;
    snprintf(slot->field, sizeof slot->field, "%s", f);
    slot->num = fv.num;
    slot->str = fv.str;
    return 0;
}

static int apply_one(tl_lesson *l, tl_session *s, const cJSON *v, tl_lesson_ui *ui, tl_error *err);

/* One side of a compare: its actions, then its field's value. */
static int compare_side(tl_lesson *l, tl_session *s, const cJSON *side, tl_lesson_ui *ui, double *out,
                        tl_error *err)
{
    const cJSON *acts = cJSON_GetObjectItemCaseSensitive(side, "actions");
    const char *f = cJSON_GetObjectItemCaseSensitive(side, "field")->valuestring;
    for (const cJSON *a = acts ? acts->child : NULL; a; a = a->next)
        if (apply_one(l, s, a->child, ui, err))
            return -1;
    field_value fv;
    if (tl_session_prepare(s, err))
        return -1;
    if (field_get(l, s, f, &fv))
        return tl_error_set(err, "%s: compare: cannot read %s", l->path, f);
    free(fv.str);
    if (!isfinite(fv.num))
        return tl_error_set(err, "%s: compare: %s is n/a after the side's actions", l->path, f);
    *out = fv.num;
    return 0;
}

/* The compare action: both sides `runs` times, alternating which goes first (a b, b a, ...),
 * so a drift of this machine's speed falls on both; the outcome by tl_compare. */
static int compare(tl_lesson *l, tl_session *s, const cJSON *v, tl_lesson_ui *ui, tl_error *err)
{
    const char *as = cJSON_GetObjectItemCaseSensitive(v, "as")->valuestring;
    const cJSON *runs_j = cJSON_GetObjectItemCaseSensitive(v, "runs");
    const cJSON *within_j = cJSON_GetObjectItemCaseSensitive(v, "same_within");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(v, "a"), *b = cJSON_GetObjectItemCaseSensitive(v, "b");
    int runs = runs_j ? (int)runs_j->valuedouble : 5;
    double within = within_j ? within_j->valuedouble : 0.1;
    double va[MAX_CMP_RUNS], vb[MAX_CMP_RUNS];
    for (int i = 0; i < runs; i++) {
        const cJSON *first = i % 2 ? b : a, *second = i % 2 ? a : b;
        double *out1 = i % 2 ? &vb[i] : &va[i], *out2 = i % 2 ? &va[i] : &vb[i];
        if (compare_side(l, s, first, ui, out1, err) || compare_side(l, s, second, ui, out2, err))
            return -1;
    }
    cmp_slot *slot = (cmp_slot *)find_cmp(l, as);
    if (!slot) {
        if (l->n_cmps == MAX_CMP)
            return tl_error_set(err, "%s: compare: more than %d names", l->path, MAX_CMP);
        slot = &l->cmps[l->n_cmps++];
        snprintf(slot->name, sizeof slot->name, "%s", as);
    }
    slot->c = tl_compare(va, runs, vb, runs, within);
    slot->within = within;
    return 0;
}

/* ---------- the actions' handlers, and their table ---------- */

#define ACT(name) static int act_##name(tl_lesson *l, tl_session *s, const cJSON *v, tl_lesson_ui *ui, tl_error *err)
#define UNUSED (void)l, (void)s, (void)v, (void)ui, (void)err

ACT(reset) { UNUSED; tl_session_reset(s); return 0; }

/* The session holds the conversation. "system" changes that one message; "user" asks a new
 * question: the system message stays, earlier turns (a "messages" step) go. */
ACT(system) { UNUSED; return tl_session_set_message(s, "system", cJSON_IsString(v) ? v->valuestring : NULL, err); }
ACT(user) { UNUSED; return tl_session_set_user(s, tl_session_message(s, "system"), v->valuestring, err); }

ACT(messages)
{
    UNUSED;
    char *json = cJSON_PrintUnformatted(v);
    int rc = json ? tl_session_set_messages(s, json, err) : tl_error_set(err, "out of memory");
    free(json);
    return rc;
}

ACT(raw_prompt)
{
    UNUSED;
    const tl_tokenizer *tok = tl_session_tokenizer(s);
    int *ids = NULL, n = 0;
    if (!tok)
        return tl_error_set(err, "raw_prompt: no tokenizer loaded");
    if (tl_tokenizer_encode(tok, v->valuestring, strlen(v->valuestring), TL_TOK_ADD_BOS, &ids, &n, err))
        return -1;
    int rc = tl_session_set_prompt_ids(s, ids, n, err);
    free(ids);
    return rc;
}

ACT(generation_prompt) { UNUSED; tl_session_set_add_generation_prompt(s, cJSON_IsTrue(v)); return 0; }
ACT(parse_special_in_content) { UNUSED; tl_session_set_parse_special_in_content(s, cJSON_IsTrue(v)); return 0; }

ACT(greedy)
{
    UNUSED;
    tl_sampling p = tl_session_sampling(s);
    p.greedy = cJSON_IsTrue(v);
    tl_session_set_sampling(s, p);
    return 0;
}

/* a lesson starts from the same place whatever the one before it left on screen */
ACT(defaults)
{
    UNUSED;
    tl_session_reset(s);
    tl_session_set_sampling(s, tl_sampling_defaults(&tl_session_model(s)->gen));
    tl_session_set_max_new_tokens(s, 0);
    tl_session_set_stop_strings(s, NULL, 0, err);
    tl_session_set_stream_mode(s, TL_STREAM_HF);
    tl_session_set_add_generation_prompt(s, 1);
    tl_session_set_parse_special_in_content(s, 1);
    /* the weights as loaded: a lesson's figures (weight_mb, the floor) assume them */
    return tl_session_set_dtype(s, tl_session_file_dtype(s), err);
}

ACT(dtype)
{
    UNUSED;
    tl_dtype dt = tl_session_file_dtype(s);
    if (strcmp(v->valuestring, "file"))
        tl_dtype_parse(v->valuestring, &dt);   /* checked when the lesson loaded */
    return tl_session_set_dtype(s, dt, err);
}

ACT(sampling)
{
    UNUSED;
    tl_sampling p = tl_session_sampling(s);
    for (const cJSON *e = v->child; e; e = e->next) {
        if (!strcmp(e->string, "greedy")) p.greedy = cJSON_IsTrue(e);
        else if (!strcmp(e->string, "temperature")) p.temperature = (float)e->valuedouble;
        else if (!strcmp(e->string, "top_k")) p.top_k = (int)e->valuedouble;
        else if (!strcmp(e->string, "top_p")) p.top_p = (float)e->valuedouble;
        else if (!strcmp(e->string, "seed")) p.seed = (uint64_t)e->valuedouble;
    }
    tl_session_set_sampling(s, p);
    return 0;
}

ACT(max_new_tokens) { UNUSED; tl_session_set_max_new_tokens(s, (int)v->valuedouble); return 0; }

ACT(stop_strings)
{
    UNUSED;
    const char *list[TL_MAX_STOP];
    int n = 0;
    for (const cJSON *e = v->child; e && n < TL_MAX_STOP; e = e->next)
        list[n++] = e->valuestring;
    return tl_session_set_stop_strings(s, list, n, err);
}

ACT(stream_mode)
{
    UNUSED;
    tl_session_set_stream_mode(s, !strcmp(v->valuestring, "server") ? TL_STREAM_SERVER : TL_STREAM_HF);
    return 0;
}

ACT(step)
{
    UNUSED;
    for (int i = 0; i < (int)v->valuedouble; i++) {
        int rc = tl_session_step(s, NULL, err);
        if (rc < 0)
            return -1;
        if (rc == TL_SESSION_DONE || tl_session_done(s))
            break;
    }
    return 0;
}

ACT(run) { UNUSED; return cJSON_IsTrue(v) && tl_generate(s, NULL, NULL, err) < 0 ? -1 : 0; }
ACT(rewind) { UNUSED; return tl_session_rewind(s, (int)v->valuedouble, err); }
ACT(force) { UNUSED; return force_token(s, v, err); }
ACT(force_rank) { UNUSED; return force_rank(s, (int)v->valuedouble, err); }
ACT(run_iter) { UNUSED; return cJSON_IsTrue(v) ? run_iter(l, s, err) : 0; }
ACT(serve_request) { UNUSED; return cJSON_IsTrue(v) ? serve_request(l, s, err) : 0; }

ACT(async)
{
    UNUSED;
    tl_error e2;   /* false asks for the backend's own mode, which on CUDA stays asynchronous */
    if (tl_engine_set_async(tl_session_engine(s), cJSON_IsTrue(v), &e2) && cJSON_IsTrue(v))
        return tl_error_set(err, "async: %s", e2.msg);
    return 0;
}

ACT(highlight)
{
    UNUSED;
    if (ui)
        snprintf(ui->highlight, sizeof ui->highlight, "%s", v->valuestring);
    return 0;
}

ACT(wrong_readings)
{
    UNUSED;
    if (ui)
        ui->show_wrong_readings = cJSON_IsTrue(v);
    return 0;
}

ACT(remember) { UNUSED; return remember(l, s, v, err); }
ACT(top_n) { UNUSED; tl_session_set_top_n(s, (int)v->valuedouble); return 0; }

ACT(tokenize)
{
    UNUSED;
    char *pieces = NULL;
    int n = split_tokens(tl_session_tokenizer(s), v->valuestring, &pieces);
    if (n < 0)
        return tl_error_set(err, "tokenize: no tokenizer loaded, or the text does not encode");
    free(l->tokenized_pieces);
    l->tokenized_pieces = pieces;
    l->tokenized_count = n;
    return 0;
}

ACT(compare) { return compare(l, s, v, ui, err); }

/* A measurement action's comparisons into the lesson's named slots (cmp.NAME.*, [[NAME|...]]). */
static int keep_cmp(tl_lesson *l, const char *what, const char *name, tl_cmp c, double within, tl_error *err)
{
    cmp_slot *slot = (cmp_slot *)find_cmp(l, name);
    if (!slot) {
        if (l->n_cmps == MAX_CMP)
            return tl_error_set(err, "%s: %s: more than %d comparisons", l->path, what, MAX_CMP);
        slot = &l->cmps[l->n_cmps++];
        snprintf(slot->name, sizeof slot->name, "%s", name);
    }
    slot->c = c;
    slot->within = within;
    return 0;
}

/* A measuring action's comparisons, i = 0, 1, ... until next says -1, into the lesson's slots. */
typedef int (*cmp_source)(const void *state, int i, char name[32], tl_cmp *c, double *within);

static int keep_cmps(tl_lesson *l, const char *what, cmp_source next, const void *state, tl_error *err)
{
    char name[32];
    tl_cmp c;
    double within;
    for (int i = 0; next(state, i, name, &c, &within) == 0; i++)
        if (keep_cmp(l, what, name, c, within, err))
            return -1;
    return 0;
}

static int batch_cmp(const void *st, int i, char name[32], tl_cmp *c, double *w) { return lb_compare(st, i, name, c, w); }
static int pace_cmp(const void *st, int i, char name[32], tl_cmp *c, double *w) { return lp_compare(st, i, name, c, w); }

/* batch: B sequences decoding together (core/lesson_batch.c); each size after the first is
 * compared with the first as a compare action would be. */
void tl_lesson_set_busy(tl_lesson *l, void (*fn)(void *ctx, const char *en, const char *vi), void *ctx)
{
    l->busy = fn;
    l->busy_ctx = ctx;
}

/* Says what a measuring action is about to do, where a screen listens (tl_lesson_set_busy). */
static void say_busy(const tl_lesson *l, const char *en, const char *vi)
{
    if (l->busy)
        l->busy(l->busy_ctx, en, vi);
}

ACT(batch)
{
    (void)ui;
    say_busy(l, "measuring: sequences decoding together on random weights…",
             "đang đo: các chuỗi giải mã cùng nhau trên trọng số ngẫu nhiên…");
    return lb_run(&l->batch, s, v, err) ? -1 : keep_cmps(l, "batch", batch_cmp, l->batch, err);
}

/* pace: decode steps against plain reads of the same weights, on random weights of a published
 * shape in each dtype listed (core/lesson_pace.c); its comparisons as a compare action's. */
ACT(pace)
{
    (void)ui;
    say_busy(l, "measuring the pace on random weights that reach memory…",
             "đang đo nhịp độ trên trọng số ngẫu nhiên đi tới bộ nhớ…");
    return lp_run(&l->pace, s, v, err) ? -1 : keep_cmps(l, "pace", pace_cmp, l->pace, err);
}

static int check_batch(const tl_lesson *l, int si, const cJSON *v, tl_error *err)
{
    const char *why = lb_check(v);
    return why ? fail(err, l, si, "action", "batch", why) : 0;
}

static int check_pace(const tl_lesson *l, int si, const cJSON *v, tl_error *err)
{
    const char *why = lp_check(v);
    return why ? fail(err, l, si, "action", "pace", why) : 0;
}

#define ROW(name, kind) {#name, kind, NULL, NULL, act_##name}
#define ROW_TEST(name, fn) {#name, V_TEST, fn, NULL, act_##name}
#define ROW_CHECK(name, fn) {#name, V_CHECK, NULL, fn, act_##name}
static const action_row actions[] = {
    ROW(reset, V_BOOL),
    ROW(system, V_STRING_OR_NULL),
    ROW(user, V_STRING),
    ROW(messages, V_ARRAY),
    ROW(raw_prompt, V_STRING),
    ROW(generation_prompt, V_BOOL),
    ROW(greedy, V_BOOL),
    ROW_CHECK(sampling, check_sampling),
    ROW(defaults, V_BOOL),
    ROW(max_new_tokens, V_COUNT),
    ROW(stop_strings, V_STRINGS),
    ROW_TEST(stream_mode, check_stream_mode),
    ROW(step, V_COUNT),
    ROW(run, V_BOOL),
    ROW(rewind, V_COUNT),
    ROW_TEST(force, check_force),
    ROW(force_rank, V_COUNT),
    ROW_TEST(highlight, check_highlight),
    ROW(wrong_readings, V_BOOL),
    ROW_TEST(remember, check_remember),
    ROW(top_n, V_COUNT),
    ROW(run_iter, V_BOOL),
    ROW(tokenize, V_STRING),
    ROW(async, V_BOOL),
    ROW(parse_special_in_content, V_BOOL),
    ROW(serve_request, V_BOOL),
    ROW_CHECK(dtype, check_dtype),
    ROW_CHECK(compare, check_compare),
    ROW_CHECK(batch, check_batch),
    ROW_CHECK(pace, check_pace),
};

static const action_row *find_action(const char *name)
{
    for (size_t i = 0; i < sizeof actions / sizeof actions[0]; i++)
        if (!strcmp(actions[i].name, name))
            return &actions[i];
    return NULL;
}

static int apply_one(tl_lesson *l, tl_session *s, const cJSON *v, tl_lesson_ui *ui, tl_error *err)
{
    const action_row *row = find_action(v->string);   /* checked when the lesson loaded */
    return row ? row->apply(l, s, v, ui, err) : tl_error_set(err, "%s: unknown action", v->string);
}

static const cJSON *step_at(const tl_lesson *l, int i)
{
    return i >= 0 && i < l->n_steps ? cJSON_GetArrayItem(l->steps, i) : NULL;
}

int tl_lesson_apply(tl_lesson *l, int i, tl_session *s, tl_lesson_ui *ui, tl_error *err)
{
    const cJSON *st = step_at(l, i);
    if (!st)
        return tl_error_set(err, "%s: no step %d", l->path, i + 1);
    if (ui) {
        ui->highlight[0] = '\0';
        ui->show_wrong_readings = -1;
    }
    const cJSON *acts = cJSON_GetObjectItemCaseSensitive(st, "actions");
    for (const cJSON *a = acts ? acts->child : NULL; a; a = a->next) {
        tl_error e2;
        if (apply_one(l, s, a->child, ui, &e2))
            return tl_error_set(err, "%s: step %d: action \"%s\": %s", l->path, i + 1, a->child->string, e2.msg);
    }
    return 0;
}

/* ---------- expectations ---------- */

static const saved_value *find_saved(const tl_lesson *l, const char *name)
{
    for (int i = 0; i < l->n_saved; i++)
        if (!strcmp(l->saved[i].name, name))
            return &l->saved[i];
    return NULL;
}

static int check_num(tl_lesson *l, tl_session *s, const char *k, double have, const cJSON *spec,
                     const char *lang, char *why, size_t n)
{
    char hv[64], wv[64];
    lt_exact(hv, sizeof hv, have, lang);
    if (cJSON_IsNumber(spec)) {
        if (have == spec->valuedouble)
            return 0;
        lt_exact(wv, sizeof wv, spec->valuedouble, lang);
        lt_why_value(why, n, lang, k, hv, NULL, wv, NULL);
        return 1;
    }
    for (const cJSON *op = spec->child; op; op = op->next) {
        const char *o = op->string;
        double want = op->valuedouble;
        if (cJSON_IsBool(op))
            want = cJSON_IsTrue(op);
        if (strstr(o, "_saved")) {
            const saved_value *sv = find_saved(l, op->valuestring);
            if (!sv || !sv->is_num) {
                lt_why_unsaved(why, n, lang, k, op->valuestring, 0);
                return 1;
            }
            want = sv->num;
        } else if (strstr(o, "_field")) {
            field_value fv;
            if (field_get(l, s, op->valuestring, &fv)) {
                lt_why_unread(why, n, lang, k, op->valuestring);
                return 1;
            }
            want = fv.num;
        }
        int ok = !isnan(have) && !isnan(want);
        if (ok) {
            if (!strncmp(o, "eq", 2)) ok = have == want;
            else if (!strcmp(o, "min")) ok = have >= want;
            else if (!strcmp(o, "max")) ok = have <= want;
            else if (!strncmp(o, "gt", 2)) ok = have > want;
            else if (!strncmp(o, "lt", 2)) ok = have < want;
        }
        if (!ok) {
            lt_exact(wv, sizeof wv, want, lang);
            lt_why_value(why, n, lang, k, hv, o, wv, cJSON_IsString(op) ? op->valuestring : NULL);
            return 1;
        }
    }
    return 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

static int check_str(tl_lesson *l, const char *k, const char *have, const cJSON *spec, const char *lang,
                     char *why, size_t n)
{
    char hv[128], wv[128];
    snprintf(hv, sizeof hv, "\"%.120s\"", have);
    if (cJSON_IsString(spec)) {
        if (!strcmp(have, spec->valuestring))
            return 0;
        snprintf(wv, sizeof wv, "\"%.120s\"", spec->valuestring);
        lt_why_value(why, n, lang, k, hv, NULL, wv, NULL);
        return 1;
    }
    for (const cJSON *op = spec->child; op; op = op->next) {
        const char *o = op->string, *want = cJSON_IsString(op) ? op->valuestring : "";
        int ok = 1;
        if (!strcmp(o, "equals")) ok = !strcmp(have, want);
        else if (!strcmp(o, "contains")) ok = strstr(have, want) != NULL;
        else if (!strcmp(o, "not_contains")) ok = strstr(have, want) == NULL;
        else if (!strcmp(o, "starts_with")) ok = !strncmp(have, want, strlen(want));
        else if (!strcmp(o, "not_ends_with")) ok = !ends_with(have, want);
        else if (!strcmp(o, "nonempty")) ok = (*have != '\0') == cJSON_IsTrue(op);
        else if (!strcmp(o, "empty")) ok = (*have == '\0') == cJSON_IsTrue(op);
        else if (!strcmp(o, "decided") && !strcmp(have, "undecided") && !l->undecided) {
            l->undecided = 1;   /* not a failure: the step says it could not decide, and shows no ✓ */
            snprintf(l->undecided_what, sizeof l->undecided_what, "%.60s", k);
        }
        else if (!strcmp(o, "equals_saved") || !strcmp(o, "differs_from_saved")) {
            const saved_value *sv = find_saved(l, want);
            if (!sv || sv->is_num) {
                lt_why_unsaved(why, n, lang, k, want, 1);
                return 1;
            }
            ok = !strcmp(have, sv->str) == !strcmp(o, "equals_saved");
            want = sv->str;
        }
        if (!ok) {
            snprintf(wv, sizeof wv, "\"%.120s\"", want);
            lt_why_value(why, n, lang, k, hv, o, wv, NULL);
            return 1;
        }
    }
    return 0;
}

int tl_lesson_check_lang(tl_lesson *l, int i, tl_session *s, const char *lang, char *why, size_t why_size)
{
    const cJSON *st = step_at(l, i);
    if (!st) {
        lt_why_no_step(why, why_size, lang, i + 1);
        return -1;
    }
    /* Checks read the prompt, which exists once the request is rendered and tokenized. */
    tl_error perr;
    if (tl_session_prepare(s, &perr)) {
        snprintf(why, why_size, "%s", perr.msg);
        return -1;
    }
    const cJSON *exps = cJSON_GetObjectItemCaseSensitive(st, "expect");
    l->undecided = 0;
    for (const cJSON *e = exps ? exps->child : NULL; e; e = e->next) {
        const cJSON *spec = e->child;
        field_value fv;
        if (field_get(l, s, spec->string, &fv)) {
            lt_why_unread(why, why_size, lang, NULL, spec->string);
            return -1;
        }
        int bad = fv.kind == F_NUM ? check_num(l, s, spec->string, fv.num, spec, lang, why, why_size)
                                   : check_str(l, spec->string, fv.str, spec, lang, why, why_size);
        free(fv.str);
        if (bad)
            return 1;
    }
    if (l->undecided) {
        snprintf(why, why_size, "%s", l->undecided_what);   /* the front end words it */
        return 2;
    }
    return 0;
}

int tl_lesson_check(tl_lesson *l, int i, tl_session *s, char *why, size_t why_size)
{
    return tl_lesson_check_lang(l, i, s, "en", why, why_size);
}

/* ---------- narration ---------- */

/* A number field as the narration writes it in lang, with the panes' marks: a *_prob as the
 * Logits pane prints it, an identifier (the server's port) as it is, any other figure grouped. */
static void narrate_num(char *out, size_t n, const char *field, double v, const char *lang)
{
    const char *dot = strrchr(field, '.');
    const char *last = dot ? dot + 1 : field;
    if (strstr(field, "_prob"))
        lt_prob(out, n, v, lang);
    else if (!strcmp(last, "served_port") || !strcmp(last, "port"))
        lt_plain(out, n, v);
    else
        lt_num(out, n, v, lang);
}

char *tl_lesson_field(const tl_lesson *l, tl_session *s, const char *name, const char *lang)
{
    field_value fv = { 0 };
    if (field_get(l, s, name, &fv))
        return NULL;
    if (fv.kind == F_STR)
        return fv.str;
    free(fv.str);
    if (isnan(fv.num))
        return NULL;
    char num[64];
    narrate_num(num, sizeof num, name, fv.num, lang);
    return dupstr(num);
}

/* Text in a sentence: a newline would break the narration's paragraph, so it is shown as the
 * Prompt pane shows it, ↵. */
static void put_inline(buf_t *b, const char *s)
{
    for (const char *p = s; *p; p++) {
        if (*p == '\n') buf_put(b, "\xE2\x86\xB5", 3);
        else if (*p != '\r') buf_put(b, p, 1);
    }
}

int tl_lesson_n_compares(const tl_lesson *l) { return l->n_cmps; }

const char *tl_lesson_compare_at(const tl_lesson *l, int k, tl_cmp *out, double *same_within)
{
    if (k < 0 || k >= l->n_cmps)
        return NULL;
    if (out)
        *out = l->cmps[k].c;
    if (same_within)
        *same_within = l->cmps[k].within;
    return l->cmps[k].name;
}

/* [[NAME|lower|same|higher|undecided]]: the sentence for compare NAME's outcome, so a comparison
 * is worded from what the runs showed, never before them. Returns the text with every choice
 * made (malloc'd). */
static char *choose_sentences(const tl_lesson *l, const char *src)
{
    buf_t b = { 0 };
    buf_put(&b, "", 0);
    for (const char *p = src; *p;) {
        const char *end = !strncmp(p, "[[", 2) ? strstr(p, "]]") : NULL;
        if (!end) {
            buf_put(&b, p, 1);
            p++;
            continue;
        }
        const char *seg[6];
        int n = 0;
        seg[n++] = p + 2;
        for (const char *q = p + 2; q < end && n < 6; q++)
            if (*q == '|')
                seg[n++] = q + 1;
        if (n != 5) {   /* not a choice (the loader refuses these): left as written */
            buf_put(&b, p, 1);
            p++;
            continue;
        }
        char name[32];
        size_t nl = (size_t)(seg[1] - 1 - seg[0]);
        snprintf(name, sizeof name, "%.*s", (int)(nl < sizeof name ? nl : sizeof name - 1), seg[0]);
        const cmp_slot *c = find_cmp(l, name);
        tl_cmp_outcome o = c ? c->c.outcome : TL_CMP_UNDECIDED;
        int k = o == TL_CMP_LOWER ? 1 : o == TL_CMP_SAME ? 2 : o == TL_CMP_HIGHER ? 3 : 4;
        const char *to = k < 4 ? seg[k + 1] - 1 : end;
        buf_put(&b, seg[k], (size_t)(to - seg[k]));
        p = end + 2;
    }
    return b.p;
}

/* The loader's check of a text's choices: each [[ closes, with a name and four sentences. */
static int choices_ok(const char *t)
{
    for (const char *p = strstr(t, "[["); p; p = strstr(p + 2, "[[")) {
        const char *end = strstr(p, "]]");
        int bars = 0;
        for (const char *q = p + 2; end && q < end; q++)
            bars += *q == '|';
        if (!end || bars != 4 || p[2] == '|')
            return 0;
    }
    return 1;
}

char *tl_lesson_narrate(const tl_lesson *l, int i, const char *lang, tl_session *s)
{
    const cJSON *st = step_at(l, i);
    if (!st)
        return NULL;
    tl_session_prepare(s, NULL);   /* a failure shows as empty fields */
    char *chosen = choose_sentences(l, text_in(cJSON_GetObjectItemCaseSensitive(st, "say"), lang));
    if (!chosen)
        return NULL;
    const char *src = chosen;
    buf_t b = { 0 };
    buf_put(&b, "", 0);
    for (const char *p = src; *p;) {
        const char *close = *p == '{' ? strchr(p, '}') : NULL;
        if (close && close - p < 48) {
            char name[48];
            memcpy(name, p + 1, (size_t)(close - p - 1));
            name[close - p - 1] = '\0';
            const saved_value *sv = !strncmp(name, "saved.", 6) ? find_saved(l, name + 6) : NULL;
            field_value fv = { 0 };
            char num[64];
            if (sv) {
                if (sv->is_num) {
                    narrate_num(num, sizeof num, sv->field, sv->num, lang);
                    buf_put(&b, num, strlen(num));
                } else {
                    put_inline(&b, lt_field_words(sv->field, sv->str, lang));
                }
                p = close + 1;
                continue;
            }
            if (field_get(l, s, name, &fv) == 0) {
                if (fv.kind == F_NUM) {
                    narrate_num(num, sizeof num, name, fv.num, lang);
                    buf_put(&b, num, strlen(num));
                } else if (!strcmp(name, "stop_detail") && fv.str) {   /* prose: in the narration's language */
                    char d[512];
                    tl_lesson_stop_detail(fv.str, lang, d, sizeof d);
                    put_inline(&b, d);
                } else {   /* a value core names in English (where the budget came from) in lang */
                    put_inline(&b, lt_field_words(name, fv.str, lang));
                }
                free(fv.str);
                p = close + 1;
                continue;
            }
        }
        buf_put(&b, p, 1);
        p++;
    }
    free(chosen);
    return b.p;
}
