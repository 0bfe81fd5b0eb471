/* The generation session: see session.h. Everything that depends on the generated tokens (the
 * streamer, the stop check, the text) is a function of the id sequence, so stepping back replays
 * the ids instead of keeping snapshots. */
#define _GNU_SOURCE
#include "tokenloop/session.h"
#include "tokenloop/batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "tokenloop/backend.h"
#include "tokenloop/bandwidth.h"
#include "tokenloop/engine.h"
#include "tokenloop/paths.h"
#include "tokenloop/synthetic.h"
#include "tokenloop/tokenizer.h"
#include "gguf.h"
#include "model_priv.h"


struct tl_session {
    tl_model *m;                 /* what runs: m_file, or m_conv */
    int own_model;               /* m_file belongs to the session */
    tl_model *m_file;            /* as loaded */
    tl_model *m_conv;            /* m_file converted (tl_session_set_dtype); NULL */
    tl_model *m_home;            /* the model opened, while random weights stand in (use_synthetic) */
    int home_own;
    const char *home_synthetic;
    char synthetic[32];          /* the shape of the random weights standing in */
    tl_dtype_row rows[TL_DTYPE_COUNT];
    int n_rows;
    const tl_backend_ops *be;
    tl_engine *e;
    tl_tokenizer *tok;
    tl_template *tpl;
    tl_chat_config chat;
    int have_chat;
    tl_error chat_err;           /* why there is no chat template: shown when one is needed */
    char chat_path[4200];        /* tokenizer_config.json, named in template errors */
    tl_sampler *sampler;
    tl_metrics *metrics;
    double bandwidth;            /* bytes/s; 0 unknown, < 0 probe failed */
    tl_session_opts opts;
    /* the floor on the CPU: plain reads of the current weights beside the steps */
    tl_mem_region *regions;
    int n_regions;
    const tl_model *regions_of;  /* the model they describe; NULL: rebuild */
    double region_bytes, llc;

    /* the request */
    char *messages;
    char *msg_system, *msg_user;  /* the last system / user content of messages */
    int add_gen_prompt;
    int plain_content;           /* special-token strings in message content are plain text */
    tl_template_var *vars;
    size_t n_vars;
    int *raw_ids;
    int n_raw, have_raw;
    int request_max_new;
    char *stop_str[TL_MAX_STOP];
    int n_stop;
    tl_streamer_opts sopts;
    int top_n;
    unsigned report;             /* TL_REPORT_* a step's report computes */

    /* prepared */
    int prepared;
    int clock_fresh;             /* the request clock started at prepare and no run used it yet */
    tl_chat_result render;
    int have_render;
    long genprompt_at;
    int *prompt;
    int n_prompt;
    tl_stop_config stop;
    tl_streamer *streamer;

    /* generated */
    int *gen;
    size_t *gen_start;           /* byte offset of each token in gen_bytes */
    int n_gen, cap_gen;
    char *gen_bytes;
    size_t n_bytes, cap_bytes;
    tl_step *steps;
    int done;
    tl_stop_result result;
    int logits_valid;
    char *text;                  /* tl_session_text cache */
    int in_run, run_steps;       /* tl_generate is stepping; steps it made so far */
    /* a prefill in chunks, each shared with other requests' decodes (tl_session_step_batch) */
    int prefilled;               /* prompt positions in the cache so far; 0: none started */
    struct tl_batch_report *batch;   /* tl_session_set_batch's copy */
    char batch_shape[32];
    double step_t0, prefill_ms;  /* when the step in flight began; a chunked prefill's passes so far */
};

static int budget_update(tl_session *s);
static int recheck_stop(tl_session *s);
static int restream(tl_session *s);

/* --- small helpers --- */

static const char *piece_bytes(void *ctx, int id, size_t *len, int *special)
{
    tl_session *s = ctx;
    *special = 0;
    *len = 0;
    if (!s->tok) return "";
    const char *p = tl_tokenizer_piece(s->tok, id, len);
    if (!p) {
        *len = 0;
        return "";
    }
    *special = tl_tokenizer_is_special(s->tok, id);
    return p;
}

static tl_piece_source source(tl_session *s) { return (tl_piece_source){s, piece_bytes}; }

/* The last system and user contents, for front ends that show and edit them. */
static void cache_messages(tl_session *s)
{
    free(s->msg_system);
    free(s->msg_user);
    s->msg_system = s->msg_user = NULL;
    cJSON *arr = s->messages ? cJSON_Parse(s->messages) : NULL;
    for (cJSON *m = arr ? arr->child : NULL; m; m = m->next) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(m, "role");
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
        if (!cJSON_IsString(r) || !cJSON_IsString(c)) continue;
        char **slot = !strcmp(r->valuestring, "system") ? &s->msg_system
                      : !strcmp(r->valuestring, "user") ? &s->msg_user : NULL;
        if (slot) {
            free(*slot);
            *slot = strdup(c->valuestring);
        }
    }
    cJSON_Delete(arr);
}

static int file_exists(const char *dir, const char *name)
{
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

static int config_clean_up(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *src = n > 0 ? malloc((size_t)n + 1) : NULL;
    int v = 0;
    if (src && fread(src, 1, (size_t)n, f) == (size_t)n) {
        src[n] = 0;
        cJSON *j = cJSON_Parse(src);
        v = cJSON_IsTrue(cJSON_GetObjectItem(j, "clean_up_tokenization_spaces"));
        cJSON_Delete(j);
    }
    free(src);
    fclose(f);
    return v;
}

static void free_steps(tl_session *s, int from)
{
    for (int i = from; i < s->n_gen; i++) {
        free(s->steps[i].printed);
        free(s->steps[i].held);
        s->steps[i].printed = s->steps[i].held = NULL;
    }
}

static void clear_generation(tl_session *s)
{
    free_steps(s, 0);
    s->n_gen = 0;
    s->n_bytes = 0;
    s->done = 0;
    memset(&s->result, 0, sizeof s->result);
    s->logits_valid = 0;
    s->prefilled = 0;
    free(s->text);
    s->text = NULL;
    if (s->e && tl_engine_pos(s->e) > 0) tl_engine_rewind(s->e, tl_engine_pos(s->e));
    if (s->streamer) tl_streamer_reset(s->streamer);
    if (s->metrics) tl_metrics_drop(s->metrics, tl_metrics_count(s->metrics));
}

static void unprepare(tl_session *s)
{
    clear_generation(s);
    if (s->have_render) tl_chat_result_free(&s->render);
    s->have_render = 0;
    s->genprompt_at = -1;
    free(s->prompt);
    s->prompt = NULL;
    s->n_prompt = 0;
    tl_streamer_free(s->streamer);
    s->streamer = NULL;
    s->prepared = 0;
}

/* --- opening --- */

/* An engine on m with the session's device, threads, capacity and modes. */
static int make_engine(tl_session *s, const tl_model *m, tl_engine **out, tl_error *err)
{
    *out = NULL;
    tl_engine *e;
    if (tl_engine_create(&e, m, s->be, s->opts.threads, s->opts.capacity, err)) return -1;
    if ((s->opts.async && tl_engine_set_async(e, 1, err)) ||
        tl_engine_set_precision(e, s->opts.precision, err) ||
        (s->opts.kv_bf16 && tl_engine_set_kv_dtype(e, TL_BF16, err))) {
        tl_engine_free(e);
        return -1;
    }
    *out = e;
    return 0;
}

/* m_file's weights converted, or m_file itself for its own dtype. */
static int model_for(tl_session *s, tl_dtype dt, tl_model **out, tl_error *err)
{
    *out = s->m_file;
    if (dt == tl_session_file_dtype(s)) return 0;
    return tl_model_convert(out, s->m_file, dt, err);
}

static int setup(tl_session *s, const tl_session_opts *o, tl_error *err)
{
    if (o) s->opts = *o;
    const char *dev = s->opts.device ? s->opts.device : "cpu";
    const tl_backend_ops *be = tl_backend_find(dev);
    if (!be) return tl_error_set(err, "--device: %s: backend not available in this build", dev);
    if (!strcmp(dev, "cuda") && !tl_backend_cuda_available())
        return tl_error_set(err, "--device: cuda: no usable CUDA device");
    s->be = be;
    if (s->opts.dtype) {
        tl_dtype dt;
        if (tl_dtype_parse(s->opts.dtype, &dt))
            return tl_error_set(err, "--dtype: '%s': expected bf16, f16, f32, q8_0 or q4_0", s->opts.dtype);
        if (model_for(s, dt, &s->m, err)) return -1;
        if (s->m != s->m_file) s->m_conv = s->m;
    }
    if (!strcmp(dev, "cpu") && s->m == s->m_file)
        tl_model_copy_to_hugepages(s->m, TL_HUGEPAGE_MIN);   /* once per model: slots share it */
    if (make_engine(s, s->m, &s->e, err)) return -1;

    /* the tokenizer: given, else beside the weights, else the bundled Llama 3 one */
    const char *tdir = s->opts.tokenizer_dir;
    if (!tdir && s->m->dir[0] && tl_gguf_has_tokenizer(s->m->dir)) tdir = s->m->dir;   /* a GGUF file's own */
    if (!tdir && s->m->dir[0] && file_exists(s->m->dir, "tokenizer.json")) tdir = s->m->dir;
    if (!tdir && s->opts.model_dir && file_exists(s->opts.model_dir, "tokenizer.json")) tdir = s->opts.model_dir;
    char bundled[4096];
    if (!tdir && tl_paths_default_tokenizer(bundled, sizeof bundled, NULL) == 0) tdir = bundled;
    int tgguf = tdir && tl_model_is_gguf(tdir);
    if (tdir && (tgguf || file_exists(tdir, "tokenizer.json"))) {
        if (tl_tokenizer_load(&s->tok, tdir, err)) return -1;
        snprintf(s->chat_path, sizeof s->chat_path, tgguf ? "%s" : "%s/tokenizer_config.json", tdir);
        if (tl_chat_config_load(tdir, &s->chat, &s->chat_err) == 0) {
            s->have_chat = 1;
            tl_error terr;
            if (s->chat.template_src && tl_template_compile(s->chat.template_src, &s->tpl, &terr)) {
                s->tpl = NULL;   /* reported when a render is asked for */
            }
        }
        s->sopts.clean_up_spaces = config_clean_up(tdir);
    } else if (s->opts.tokenizer_dir) {
        return tl_error_set(err, "%s: no tokenizer.json", s->opts.tokenizer_dir);
    }
    s->sampler = tl_sampler_create(s->m->cfg.vocab_size, tl_sampling_defaults(&s->m->gen));
    s->metrics = tl_metrics_create(s->opts.clock, s->opts.clock_ctx);
    s->steps = NULL;
    if (!s->sampler || !s->metrics) return tl_error_set(err, "session: out of memory");
    if (s->opts.bandwidth_gbs > 0) s->bandwidth = s->opts.bandwidth_gbs * 1e9;
    s->llc = tl_bandwidth_llc_bytes();
    s->add_gen_prompt = 1;
    s->top_n = 10;
    s->report = TL_REPORT_ALL;
    s->sopts.mode = TL_STREAM_HF;
    s->sopts.skip_prompt = 1;
    s->sopts.skip_special_tokens = 1;
    tl_stop_eos_from_model(&s->stop, s->m);
    return 0;
}

int tl_session_open_model(tl_session **out, tl_model *m, int own, const tl_session_opts *opts,
                          tl_error *err)
{
    *out = NULL;
    tl_session *s = calloc(1, sizeof *s);
    if (!s) {
        if (own) tl_model_free(m);
        return tl_error_set(err, "session: out of memory");
    }
    s->m = s->m_file = m;
    s->own_model = own;
    if (setup(s, opts, err)) {
        tl_session_free(s);
        return -1;
    }
    *out = s;
    return 0;
}

int tl_session_open(tl_session **out, const tl_session_opts *opts, tl_error *err)
{
    *out = NULL;
    if (!opts || !opts->model_dir) return tl_error_set(err, "--model: no model directory given");
    tl_model *m;
    if (tl_model_load(&m, opts->model_dir, err)) return -1;
    return tl_session_open_model(out, m, 1, opts, err);
}

void tl_session_free(tl_session *s)
{
    if (!s) return;
    unprepare(s);
    free(s->batch);
    free(s->steps);
    free(s->gen);
    free(s->gen_start);
    free(s->gen_bytes);
    free(s->messages);
    free(s->msg_system);
    free(s->msg_user);
    for (size_t i = 0; i < s->n_vars; i++) {
        free((char *)s->vars[i].name);
        free((char *)s->vars[i].json);
    }
    free(s->vars);
    free(s->raw_ids);
    for (int i = 0; i < s->n_stop; i++) free(s->stop_str[i]);
    tl_sampler_free(s->sampler);
    tl_metrics_free(s->metrics);
    free(s->regions);
    if (s->tpl) tl_template_free(s->tpl);
    if (s->have_chat) tl_chat_config_free(&s->chat);
    if (s->tok) tl_tokenizer_free(s->tok);
    if (s->e) tl_engine_free(s->e);
    tl_model_free(s->m_conv);
    if (s->own_model) tl_model_free(s->m_file);
    if (s->home_own) tl_model_free(s->m_home);
    free(s);
}

/* --- the request --- */

/* The conversation becomes owned (already checked). */
static void store_messages(tl_session *s, char *owned)
{
    unprepare(s);
    free(s->messages);
    s->messages = owned;
    s->have_raw = 0;
    cache_messages(s);
}

int tl_session_set_messages(tl_session *s, const char *messages_json, tl_error *err)
{
    if (tl_chat_messages_check(messages_json, messages_json ? strlen(messages_json) : 0, err)) return -1;
    char *copy = strdup(messages_json);
    if (!copy) return tl_error_set(err, "messages: out of memory");
    store_messages(s, copy);
    return 0;
}

int tl_session_set_message(tl_session *s, const char *role, const char *content, tl_error *err)
{
    if (!role || !*role) return tl_error_set(err, "messages: no role given");
    cJSON *arr = s->messages ? cJSON_Parse(s->messages) : cJSON_CreateArray();
    if (!cJSON_IsArray(arr)) {
        cJSON_Delete(arr);
        arr = cJSON_CreateArray();
    }
    cJSON *last = NULL;
    int last_i = -1, i = 0;
    for (cJSON *m = arr ? arr->child : NULL; m; m = m->next, i++) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(m, "role");
        if (cJSON_IsString(r) && !strcmp(r->valuestring, role)) {
            last = m;
            last_i = i;
        }
    }
    if (!content) {
        if (last) cJSON_DeleteItemFromArray(arr, last_i);
    } else if (last) {
        cJSON_ReplaceItemInObjectCaseSensitive(last, "content", cJSON_CreateString(content));
    } else {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", role);
        cJSON_AddStringToObject(m, "content", content);
        if (!strcmp(role, "system")) cJSON_InsertItemInArray(arr, 0, m);
        else cJSON_AddItemToArray(arr, m);
    }
    int empty = arr && !arr->child;
    char *js = arr ? cJSON_PrintUnformatted(arr) : NULL;
    cJSON_Delete(arr);
    if (!js) return tl_error_set(err, "messages: out of memory");
    /* removing the only message leaves an empty conversation ("[]"), a state while editing that
     * tl_chat_messages_check refuses in a file; tl_session_prepare refuses to render it */
    if (!empty && tl_chat_messages_check(js, strlen(js), err)) {
        free(js);
        return -1;
    }
    store_messages(s, js);
    return 0;
}

int tl_session_set_user(tl_session *s, const char *system, const char *text, tl_error *err)
{
    cJSON *a = cJSON_CreateArray();
    if (system) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", "system");
        cJSON_AddStringToObject(m, "content", system);
        cJSON_AddItemToArray(a, m);
    }
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", "user");
    cJSON_AddStringToObject(m, "content", text ? text : "");
    cJSON_AddItemToArray(a, m);
    char *js = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    int rc = tl_session_set_messages(s, js, err);
    free(js);
    return rc;
}

void tl_session_set_add_generation_prompt(tl_session *s, int on)
{
    unprepare(s);
    s->add_gen_prompt = on != 0;
}

void tl_session_set_parse_special_in_content(tl_session *s, int on)
{
    unprepare(s);
    s->plain_content = !on;
}

int tl_session_set_template_vars(tl_session *s, const tl_template_var *vars, size_t n, tl_error *err)
{
    tl_template_var *v = n ? calloc(n, sizeof *v) : NULL;
    if (n && !v) return tl_error_set(err, "template vars: out of memory");
    for (size_t i = 0; i < n; i++) {
        v[i].name = strdup(vars[i].name);
        v[i].json = strdup(vars[i].json);
    }
    unprepare(s);
    for (size_t i = 0; i < s->n_vars; i++) {
        free((char *)s->vars[i].name);
        free((char *)s->vars[i].json);
    }
    free(s->vars);
    s->vars = v;
    s->n_vars = n;
    return 0;
}

int tl_session_set_prompt_ids(tl_session *s, const int *ids, int n, tl_error *err)
{
    if (n <= 0) return tl_error_set(err, "--ids: the prompt is empty");
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= s->m->cfg.vocab_size)
            return tl_error_set(err, "--ids: id %d is outside the vocabulary (0..%d)", ids[i],
                                s->m->cfg.vocab_size - 1);
    int *c = malloc(sizeof(int) * (size_t)n);
    if (!c) return tl_error_set(err, "--ids: out of memory");
    memcpy(c, ids, sizeof(int) * (size_t)n);
    unprepare(s);
    free(s->raw_ids);
    s->raw_ids = c;
    s->n_raw = n;
    s->have_raw = 1;
    return 0;
}

void tl_session_set_sampling(tl_session *s, tl_sampling p)
{
    if (s->n_gen == 0) tl_sampler_set(s->sampler, p);
    else tl_sampler_tune(s->sampler, p);   /* from the next token on */
}

tl_sampling tl_session_sampling(const tl_session *s) { return tl_sampler_get(s->sampler); }

void tl_session_set_max_new_tokens(tl_session *s, int n)
{
    s->request_max_new = n > 0 ? n : 0;
    if (s->prepared && (budget_update(s) || recheck_stop(s))) unprepare(s);
}

int tl_session_set_stop_strings(tl_session *s, const char *const *stop, int n, tl_error *err)
{
    if (n < 0 || n > TL_MAX_STOP) return tl_error_set(err, "--stop: at most %d stop strings", TL_MAX_STOP);
    for (int i = 0; i < n; i++)
        if (!stop[i] || !stop[i][0]) return tl_error_set(err, "--stop: empty stop string");
    for (int i = 0; i < s->n_stop; i++) free(s->stop_str[i]);
    for (int i = 0; i < n; i++) s->stop_str[i] = strdup(stop[i]);
    s->n_stop = n;
    for (int i = 0; i < n; i++)
        if (!s->stop_str[i]) {
            unprepare(s);
            return tl_error_set(err, "--stop: out of memory");
        }
    if (s->prepared) {
        s->stop.n_stop = s->n_stop;
        for (int i = 0; i < s->n_stop; i++) s->stop.stop[i] = s->stop_str[i];
        /* the streamer holds back what could become a stop string: it needs the new list */
        if (recheck_stop(s) || restream(s)) unprepare(s);
    }
    return 0;
}

void tl_session_set_stream_mode(tl_session *s, tl_stream_mode mode)
{
    s->sopts.mode = mode;
    if (s->prepared && restream(s)) unprepare(s);
}

void tl_session_set_streamer_opts(tl_session *s, int skip_prompt, int skip_special, int clean_up)
{
    s->sopts.skip_prompt = skip_prompt != 0;
    s->sopts.skip_special_tokens = skip_special != 0;
    s->sopts.clean_up_spaces = clean_up != 0;
    free(s->text);
    s->text = NULL;
    if (s->prepared && restream(s)) unprepare(s);
}

void tl_session_set_top_n(tl_session *s, int n)
{
    if (n < 1) n = 1;
    if (n > TL_MAX_TOP) n = TL_MAX_TOP;
    s->top_n = n;
}

void tl_session_set_report(tl_session *s, unsigned fields) { s->report = fields & TL_REPORT_ALL; }

static tl_streamer *make_streamer(tl_session *s)
{
    tl_streamer_opts so = s->sopts;
    so.stop = (const char *const *)s->stop_str;
    so.n_stop = s->n_stop;
    return tl_streamer_create(source(s), &so);
}

/* The render without the generation prompt, before the request clock starts: where the
 * generation prompt begins when that render is a prefix of the real one. */
static size_t render_without_genprompt(tl_session *s, char **text)
{
    *text = NULL;
    if (!s->add_gen_prompt || s->have_raw || !s->messages || !s->tpl) return 0;
    tl_chat_result off;
    if (tl_chat_render(s->tpl, s->messages, s->vars, s->n_vars, 0, s->chat.bos_token,
                       s->chat.eos_token, &off, NULL))
        return 0;
    size_t n = off.len;
    *text = malloc(n + 1);
    if (*text) memcpy(*text, off.text, n);
    tl_chat_result_free(&off);
    return *text ? n : 0;
}

int tl_session_prepare(tl_session *s, tl_error *err)
{
    if (s->prepared) return 0;
    unprepare(s);
    char *off = NULL;
    size_t off_len = render_without_genprompt(s, &off);
    tl_metrics_start(s->metrics);
    if (s->have_raw) {
        s->prompt = malloc(sizeof(int) * (size_t)s->n_raw);
        if (!s->prompt) return tl_error_set(err, "prompt: out of memory");
        memcpy(s->prompt, s->raw_ids, sizeof(int) * (size_t)s->n_raw);
        s->n_prompt = s->n_raw;
        tl_metrics_tokenized(s->metrics, s->n_prompt);
    } else {
        if (!s->messages) {
            free(off);
            return tl_error_set(err, "prompt: no messages and no prompt ids");
        }
        if (!strcmp(s->messages, "[]")) {
            free(off);
            return tl_error_set(err, "prompt: an empty conversation (apply_chat_template refuses one too: give a message)");
        }
        if (!s->tok) {
            free(off);
            return tl_error_set(err, "prompt: no tokenizer (tokenizer.json) for this model");
        }
        /* the template is the model's file: its errors name tokenizer_config.json */
        tl_error terr;
        if (!s->tpl) {
            if (!s->have_chat || !s->chat.template_src) {
                free(off);
                return tl_error_set(err, "%s", s->chat_err.msg[0] ? s->chat_err.msg
                                                                    : "prompt: the tokenizer has no chat template");
            }
            if (tl_template_compile(s->chat.template_src, &s->tpl, &terr))
                return tl_error_set(err, "%s: chat_template: %s", s->chat_path, terr.msg);
        }
        if (tl_chat_render(s->tpl, s->messages, s->vars, s->n_vars, s->add_gen_prompt,
                           s->chat.bos_token, s->chat.eos_token, &s->render, &terr)) {
            free(off);
            return tl_error_set(err, "%s: chat_template: %s", s->chat_path, terr.msg);
        }
        s->have_render = 1;
        tl_metrics_templated(s->metrics);
        if (off && off_len < s->render.len && !memcmp(off, s->render.text, off_len))
            s->genprompt_at = (long)off_len;
        free(off);
        off = NULL;
        /* apply_chat_template(tokenize=True): specials parsed, no BOS added (the template has it);
         * with plain content, only the template's own markers are */
        if (tl_tokenizer_encode_plain(s->tok, s->render.text, s->render.len, 0, s->render.spans,
                                      s->plain_content ? s->render.n_spans : 0, &s->prompt, &s->n_prompt, err))
            return -1;
        tl_metrics_tokenized(s->metrics, s->n_prompt);
        if (s->n_prompt <= 0) return tl_error_set(err, "prompt: the rendered prompt is empty");
        for (int i = 0; i < s->n_prompt; i++)
            if (s->prompt[i] >= s->m->cfg.vocab_size)
                return tl_error_set(err, "prompt: token id %d is outside the model's vocabulary (%d)",
                                    s->prompt[i], s->m->cfg.vocab_size);
    }
    free(off);
    int cap = tl_engine_capacity(s->e);
    if (s->n_prompt >= cap)
        return tl_error_set(err, "prompt: %d tokens do not fit the context (%d positions)", s->n_prompt, cap);
    s->stop.n_stop = s->n_stop;
    for (int i = 0; i < s->n_stop; i++) s->stop.stop[i] = s->stop_str[i];
    s->streamer = make_streamer(s);
    if (!s->streamer) return tl_error_set(err, "streamer: out of memory");
    if (budget_update(s)) return tl_error_set(err, "session: out of memory");
    s->prepared = 1;
    s->clock_fresh = 1;
    return 0;
}

/* --- stepping --- */

static char *dupn(const char *p, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, p, n);
        d[n] = 0;
    }
    return d;
}

/* Appends id as generated token k (== n_gen): bytes, streamer, stop check, the step's texts. */
static tl_stop_result check_newest(tl_session *s);
static int record_stream(tl_session *s, tl_step *st, int end);

static int append_token(tl_session *s, int id, tl_step *st, tl_error *err)
{
    size_t len = 0;
    int special;
    const char *p = piece_bytes(s, id, &len, &special);
    if (s->n_bytes + len + 1 > s->cap_bytes) {
        size_t cap = s->cap_bytes ? s->cap_bytes : 256;
        while (cap < s->n_bytes + len + 1) cap *= 2;
        char *b = realloc(s->gen_bytes, cap);
        if (!b) return tl_error_set(err, "session: out of memory");
        s->gen_bytes = b;
        s->cap_bytes = cap;
    }
    s->gen_start[s->n_gen] = s->n_bytes;
    memcpy(s->gen_bytes + s->n_bytes, p, len);
    s->n_bytes += len;
    s->gen_bytes[s->n_bytes] = 0;
    s->gen[s->n_gen++] = id;
    free(s->text);
    s->text = NULL;

    if (tl_streamer_put(s->streamer, &id, 1)) return tl_error_set(err, "streamer: failed");
    st->stop = check_newest(s);
    if (st->stop.reason != TL_STOP_NONE) {
        s->done = 1;
        s->result = st->stop;
    }
    st->chosen = id;
    if (s->tok) tl_tokenizer_display(s->tok, id, st->piece, sizeof st->piece);
    else snprintf(st->piece, sizeof st->piece, "<%d>", id);
    if (record_stream(s, st, s->done)) return tl_error_set(err, "session: out of memory");
    return 0;
}

/* The stop criteria on the newest generated token. */
static tl_stop_result check_newest(tl_session *s)
{
    int id = s->gen[s->n_gen - 1];
    tl_stop_result r = tl_stop_check(&s->stop, id, s->n_gen, s->gen_bytes, s->n_bytes, s->gen_start[s->n_gen - 1]);
    if (r.reason == TL_STOP_EOS && s->tok && tl_tokenizer_token(s->tok, id))
        snprintf(r.detail, sizeof r.detail, "eos id %d %s (from %s)", id, tl_tokenizer_token(s->tok, id),
                 s->stop.eos_source ? s->stop.eos_source : "?");
    else if (r.reason == TL_STOP_MAX_NEW_TOKENS && s->n_gen > s->stop.max_new_tokens)
        snprintf(r.detail, sizeof r.detail, "budget lowered to %d after %d new tokens (from %s)",
                 s->stop.max_new_tokens, s->n_gen, tl_budget_source_name(s->stop.budget_source));
    return r;
}

/* What the streamer printed for the token just put (and, when generation ends there, what its
 * end flushed), and what it holds back now, into the step. */
static int record_stream(tl_session *s, tl_step *st, int end)
{
    size_t pl;
    const char *printed = tl_streamer_printed(s->streamer, &pl);
    char *pr = dupn(printed, pl);
    st->end_at = pl;
    if (end) {
        tl_streamer_end(s->streamer);
        size_t el;
        const char *e = tl_streamer_printed(s->streamer, &el);
        char *both = pr ? malloc(pl + el + 1) : NULL;
        if (both) {
            memcpy(both, pr, pl);
            memcpy(both + pl, e, el);
            both[pl + el] = 0;
        }
        free(pr);
        pr = both;
    }
    size_t hl;
    const char *held = tl_streamer_held(s->streamer, &hl);
    free(st->printed);
    free(st->held);
    st->printed = pr;
    st->held = dupn(held, hl);
    st->hold_reason = tl_streamer_hold_reason(s->streamer);
    return st->printed && st->held ? 0 : -1;
}

/* The streamer from the start: the prompt, then generated tokens 0..n_gen-1 (as generate()
 * puts them). record: each step's printed and held text become what this streamer shows. */
static int feed_streamer(tl_session *s, int record)
{
    tl_streamer_reset(s->streamer);
    free(s->text);
    s->text = NULL;
    if (tl_streamer_put(s->streamer, s->prompt, s->n_prompt)) return -1;
    for (int i = 0; i < s->n_gen; i++) {
        if (tl_streamer_put(s->streamer, &s->gen[i], 1)) return -1;
        if (record && record_stream(s, &s->steps[i], s->done && i == s->n_gen - 1)) return -1;
    }
    return 0;
}

/* A new streamer with the current options, fed the prompt and every generated token again:
 * each step's printed and held text become what this streamer would have shown. */
static int restream(tl_session *s)
{
    tl_streamer *n = make_streamer(s);
    if (!n) return -1;
    tl_streamer_free(s->streamer);
    s->streamer = n;
    return feed_streamer(s, 1);
}

/* The budget for this prompt, and room for that many steps. */
static int budget_update(tl_session *s)
{
    s->stop.max_new_tokens = tl_stop_budget(&s->m->gen, s->request_max_new, s->n_prompt,
                                            tl_engine_capacity(s->e), &s->stop.budget_source);
    int cap_gen = s->stop.max_new_tokens + 1;
    if (cap_gen <= s->cap_gen) return 0;
    int *g = realloc(s->gen, sizeof(int) * (size_t)cap_gen);
    if (g) s->gen = g;
    size_t *st = realloc(s->gen_start, sizeof(size_t) * (size_t)cap_gen);
    if (st) s->gen_start = st;
    tl_step *sp = realloc(s->steps, sizeof(tl_step) * (size_t)cap_gen);
    if (sp) s->steps = sp;
    if (!g || !st || !sp) return -1;
    s->cap_gen = cap_gen;
    return 0;
}

/* The stop settings changed: judge the newest token again. An EOS is the model's choice and
 * stays; a budget or stop-string stop follows the new settings. */
static int recheck_stop(tl_session *s)
{
    if (s->n_gen == 0 || (s->done && s->result.reason == TL_STOP_EOS)) return 0;
    tl_step *st = &s->steps[s->n_gen - 1];
    tl_stop_result r = check_newest(s);
    int was = s->done;
    st->stop = r;
    s->done = r.reason != TL_STOP_NONE;
    if (s->done) s->result = r;
    else memset(&s->result, 0, sizeof s->result);
    return was != s->done ? restream(s) : 0;
}

/* On the CPU every TL_FLOOR_EVERY-th decode step is followed by a plain read of the same
 * weights, as `tokenloop bench` follows each of its steps: the floor then follows this machine's
 * memory rate, which moves by 2x within seconds, for a third more reading than the steps do.
 * The read's own time leaves the request's clock. A fixed bandwidth (opts) reads nothing. */
#define TL_FLOOR_EVERY 3

static void floor_read(tl_session *s)
{
    if (s->opts.bandwidth_gbs > 0 || s->opts.no_floor_reads || strcmp(tl_engine_device(s->e), "cpu")) return;
    if (s->regions_of != s->m) {
        free(s->regions);
        s->regions = malloc(sizeof *s->regions * (size_t)tl_bandwidth_model_max(s->m));
        s->n_regions = 0;
        s->region_bytes = 0;
        if (!s->regions) return;
        s->n_regions = tl_bandwidth_model_regions(s->m, s->regions);
        for (int i = 0; i < s->n_regions; i++) s->region_bytes += (double)s->regions[i].n;
        s->regions_of = s->m;
    }
    double t0 = tl_metrics_now(s->metrics);
    double sec = tl_bandwidth_read(s->regions, s->n_regions, s->opts.threads);
    tl_metrics_floor_read(s->metrics, s->region_bytes, sec);
    tl_metrics_exclude(s->metrics, tl_metrics_now(s->metrics) - t0);
}

/* The part of a step before its pass: the record, and what the pass should gather. */
static tl_step *step_begin(tl_session *s, double *t_begin, tl_error *err)
{
    if (s->n_gen >= s->cap_gen) {
        tl_error_set(err, "session: no room for step %d", s->n_gen);
        return NULL;
    }
    *t_begin = tl_metrics_now(s->metrics);
    int k = s->n_gen;
    tl_step *st = &s->steps[k];
    memset(st, 0, sizeof *st);
    st->index = k;
    st->joined = s->in_run && s->run_steps > 0 && k > 0;
    if (s->in_run) s->run_steps++;
    st->sampling = tl_sampler_get(s->sampler);
    unsigned what;
    float scale;
    tl_sampler_stats_want(s->sampler, s->report, &what, &scale);
    tl_engine_set_stats(s->e, 1, what, scale);   /* where it cannot, the sampler reads the scores */
    return st;
}

/* The part after the pass: choose, time, stream, check the stop. */
static int step_end(tl_session *s, tl_step *st, double t_begin, const tl_step **out, tl_error *err)
{
    int k = st->index;
    const float *logits = tl_engine_logits(s->e);
    const tl_logit_stats *stats = tl_engine_stats(s->e);
    int id = tl_sampler_choose_with(s->sampler, logits, stats, s->top_n, s->report, &st->sample);
    st->work_ms = tl_metrics_token_gap(s->metrics, tl_engine_last_ms(s->e), tl_engine_last_unsynced_ms(s->e),
                                       t_begin, st->joined);
    st->ms = tl_engine_last_ms(s->e);
    st->stats_in_pass = stats != NULL;
    st->t_ms = tl_metrics_token_time(s->metrics, k);
    st->pos = tl_engine_pos(s->e);
    s->logits_valid = 1;
    if (append_token(s, id, st, err)) return -1;
    if (k >= 1 && (k - 1) % TL_FLOOR_EVERY == 0) floor_read(s);
    if (out) *out = st;
    return TL_SESSION_STEPPED;
}

/* What a prefill step does before its pass: the request's clock, the sampler from its seed,
 * an empty cache, and the prompt put to the streamer first, as generate() does. */
static int prefill_begin(tl_session *s, double t_begin, tl_error *err)
{
    if (!s->clock_fresh) {   /* a rerun after reset/rewind: the request starts now */
        tl_metrics_start(s->metrics);
        tl_metrics_tokenized(s->metrics, s->n_prompt);
    } else {   /* rendered earlier and shown: the wait on screen is no part of TTFT */
        tl_metrics_resume(s->metrics, t_begin);
    }
    s->clock_fresh = 0;
    s->prefilled = 0;
    tl_sampler_set(s->sampler, tl_sampler_get(s->sampler));   /* each run from its seed */
    if (tl_engine_pos(s->e) > 0) tl_engine_rewind(s->e, tl_engine_pos(s->e));
    tl_streamer_reset(s->streamer);
    if (tl_streamer_put(s->streamer, s->prompt, s->n_prompt))   /* generate() puts the prompt first */
        return tl_error_set(err, "streamer: failed");
    return 0;
}

int tl_session_step(tl_session *s, const tl_step **out, tl_error *err)
{
    if (out) *out = NULL;
    if (!s->prepared && tl_session_prepare(s, err)) return -1;
    if (s->done) return TL_SESSION_DONE;
    double t_begin;
    tl_step *st = step_begin(s, &t_begin, err);
    if (!st) return -1;
    int k = st->index;
    if (k == 0) {
        if (prefill_begin(s, t_begin, err)) return -1;
        if (tl_engine_prefill(s->e, s->prompt, s->n_prompt, err)) return -1;
        st->kind = TL_STEP_PREFILL;
        st->n_input = s->n_prompt;
    } else {
        if (tl_engine_decode(s->e, s->gen[k - 1], err)) return -1;
        st->kind = TL_STEP_DECODE;
        st->n_input = 1;
    }
    return step_end(s, st, t_begin, out, err);
}

/* Prompt tokens one request brings to a batched pass: a long prompt's prefill goes in chunks,
 * each pass shared with the other requests' decodes, so their pace holds while it arrives. */
#define PREFILL_CHUNK 32

int tl_session_step_batch(tl_session *const *ss, int n, const tl_step **outs, tl_error *err)
{
    if (n < 0 || n > TL_SESSION_BATCH_MAX)
        return tl_error_set(err, "batch: %d sessions (0..%d)", n, TL_SESSION_BATCH_MAX);
    tl_engine *es[TL_SESSION_BATCH_MAX];
    tl_session *in[TL_SESSION_BATCH_MAX];
    const int *ids[TL_SESSION_BATCH_MAX];
    int take[TL_SESSION_BATCH_MAX], slot[TL_SESSION_BATCH_MAX], B = 0, stepped = 0, rows = 0, room = 0;
    for (int i = 0; i < n; i++) {
        outs[i] = NULL;
        if (!ss[i]->prepared && tl_session_prepare(ss[i], err)) return -1;
        if (!ss[i]->done && ss[i]->n_gen > 0) rows++;   /* the decodes come first: one row each */
    }
    for (int i = 0; i < n; i++) {
        tl_session *s = ss[i];
        if (s->done) continue;
        if (!room) room = tl_engine_batch_max(s->e) - rows;   /* the first in the pass leads it */
        int t;
        if (s->n_gen > 0) {   /* a decode of the last token */
            double t_begin;
            if (!step_begin(s, &t_begin, err)) return -1;
            s->step_t0 = t_begin;
            ids[B] = &s->gen[s->n_gen - 1];
            t = 1;
        } else {   /* the next chunk of a prompt, as many as the pass has room for */
            t = s->n_prompt - s->prefilled < PREFILL_CHUNK ? s->n_prompt - s->prefilled : PREFILL_CHUNK;
            if (t > room) t = room;
            if (t <= 0) continue;   /* no room left in this pass: the next one */
            room -= t;
            if (s->prefilled == 0) {   /* its first chunk: the prefill step begins */
                double t_begin;
                if (!step_begin(s, &t_begin, err) || prefill_begin(s, t_begin, err)) return -1;
                s->step_t0 = t_begin;
                s->prefill_ms = 0;
            }
            ids[B] = s->prompt + s->prefilled;
        }
        es[B] = s->e;
        take[B] = t;
        in[B] = s;
        slot[B++] = i;
    }
    if (B && tl_engine_step_batch(es, ids, take, B, err)) {
        for (int b = 0; b < B; b++) {   /* no pass ran: a step begun is not taken */
            if (in[b]->in_run && in[b]->run_steps > 0 && (in[b]->n_gen > 0 || in[b]->prefilled == 0))
                in[b]->run_steps--;
            if (in[b]->n_gen == 0) in[b]->prefilled = 0;   /* the prompt starts again */
        }
        return -1;
    }
    for (int b = 0; b < B; b++) {
        tl_session *s = in[b];
        tl_step *st = &s->steps[s->n_gen];
        st->batch = B;
        if (s->n_gen > 0) {
            st->kind = TL_STEP_DECODE;
            st->n_input = 1;
        } else {
            s->prefilled += take[b];
            s->prefill_ms += tl_engine_last_ms(s->e);
            if (s->prefilled < s->n_prompt) continue;   /* more of the prompt next pass: no token yet */
            st->kind = TL_STEP_PREFILL;
            st->n_input = s->n_prompt;
            s->prefilled = 0;
        }
        double pass_ms = st->kind == TL_STEP_PREFILL ? s->prefill_ms : tl_engine_last_ms(s->e);
        if (step_end(s, st, s->step_t0, &outs[slot[b]], err) < 0) return -1;
        st->ms = pass_ms;   /* a chunked prefill: all its passes */
        stepped++;
    }
    return stepped;
}

/* Streamer state for generated tokens 0..n_gen-1, by replaying them. */
static int replay(tl_session *s, int n_keep)
{
    s->n_gen = n_keep;
    if (feed_streamer(s, 0)) return -1;
    s->n_bytes = n_keep ? s->gen_start[n_keep - 1] : 0;
    if (n_keep) {
        size_t len;
        int sp;
        piece_bytes(s, s->gen[n_keep - 1], &len, &sp);
        s->n_bytes += len;
    }
    if (s->gen_bytes) s->gen_bytes[s->n_bytes] = 0;
    return 0;
}

int tl_session_force(tl_session *s, int id, tl_error *err)
{
    if (s->n_gen == 0) return tl_error_set(err, "force: no step to change yet");
    if (id < 0 || id >= s->m->cfg.vocab_size)
        return tl_error_set(err, "force: id %d is outside the vocabulary (0..%d)", id, s->m->cfg.vocab_size - 1);
    int k = s->n_gen - 1;
    if (!s->logits_valid) {   /* recompute the newest step's logits: one pass */
        if (k == 0) {
            tl_engine_rewind(s->e, tl_engine_pos(s->e));
            if (tl_engine_prefill(s->e, s->prompt, s->n_prompt, err)) return -1;
        } else {
            tl_engine_rewind(s->e, 1);
            if (tl_engine_decode(s->e, s->gen[k - 1], err)) return -1;
        }
        s->logits_valid = 1;
    }
    tl_step *st = &s->steps[k];
    tl_step keep = *st;
    free(st->printed);
    free(st->held);
    if (replay(s, k)) return tl_error_set(err, "streamer: failed");
    s->done = 0;
    memset(&s->result, 0, sizeof s->result);
    memset(st, 0, sizeof *st);
    st->index = k;
    st->kind = keep.kind;
    st->n_input = keep.n_input;
    st->pos = keep.pos;
    st->ms = keep.ms;
    st->t_ms = keep.t_ms;
    st->work_ms = keep.work_ms;
    st->stats_in_pass = keep.stats_in_pass;
    st->joined = keep.joined;
    st->sampling = keep.sampling;
    st->forced = 1;
    tl_sampler_explain(s->sampler, tl_engine_logits(s->e), s->top_n, id, s->report, &st->sample);
    return append_token(s, id, st, err);
}

int tl_session_rewind(tl_session *s, int n, tl_error *err)
{
    if (n < 0 || n > s->n_gen)
        return tl_error_set(err, "rewind: %d steps asked, %d taken", n, s->n_gen);
    if (n == 0) return 0;
    int keep = s->n_gen - n;
    if (keep == 0) {
        clear_generation(s);
        return 0;
    }
    /* after step keep-1 the cache holds the prompt and generated tokens 0..keep-2 */
    tl_engine_rewind(s->e, tl_engine_pos(s->e) - (s->n_prompt + keep - 1));
    free_steps(s, keep);
    tl_metrics_drop(s->metrics, n);
    if (replay(s, keep)) return tl_error_set(err, "streamer: failed");
    s->done = 0;
    memset(&s->result, 0, sizeof s->result);
    s->logits_valid = 0;
    return 0;
}

void tl_session_reset(tl_session *s) { clear_generation(s); }

static int generate_loop(tl_session *s, tl_step_hook hook, void *ctx, tl_error *err)
{
    for (;;) {
        const tl_step *st;
        int rc = tl_session_step(s, &st, err);
        if (rc < 0) return -1;
        if (rc == TL_SESSION_DONE) return TL_SESSION_DONE;
        if (hook && hook(ctx, s, st)) return s->done ? TL_SESSION_DONE : TL_GENERATE_CANCELLED;
        if (s->done) return TL_SESSION_DONE;
    }
}

int tl_session_set_batch(tl_session *s, const tl_batch_report *r, const char *shape, tl_error *err)
{
    if (!r) {
        free(s->batch);
        s->batch = NULL;
        s->batch_shape[0] = 0;
        return 0;
    }
    if (!s->batch && !(s->batch = malloc(sizeof *s->batch))) return tl_error_set(err, "session: out of memory");
    *s->batch = *r;
    snprintf(s->batch_shape, sizeof s->batch_shape, "%s", shape ? shape : "");
    return 0;
}

const tl_batch_report *tl_session_batch(const tl_session *s, const char **shape)
{
    if (shape) *shape = s->batch_shape;
    return s->batch;
}

void tl_session_run_mark(tl_session *s, int on)
{
    s->in_run = on != 0;
    s->run_steps = 0;
}

int tl_generate(tl_session *s, tl_step_hook hook, void *ctx, tl_error *err)
{
    s->in_run = 1;   /* the steps of one run follow each other with no pause: their gaps count */
    s->run_steps = 0;
    int rc = generate_loop(s, hook, ctx, err);
    s->in_run = 0;
    return rc;
}

/* --- the settings --- */

const char *tl_session_messages(const tl_session *s) { return s->have_raw ? NULL : s->messages; }

const char *tl_session_message(const tl_session *s, const char *role)
{
    if (s->have_raw || !role) return NULL;
    if (!strcmp(role, "system")) return s->msg_system;
    if (!strcmp(role, "user")) return s->msg_user;
    return NULL;
}

int tl_session_add_generation_prompt(const tl_session *s) { return s->add_gen_prompt; }
int tl_session_parse_special_in_content(const tl_session *s) { return !s->plain_content; }

int tl_session_max_new_tokens(const tl_session *s) { return s->request_max_new; }

const char *const *tl_session_stop_strings(const tl_session *s, int *n)
{
    if (n) *n = s->n_stop;
    return (const char *const *)s->stop_str;
}

tl_stream_mode tl_session_stream_mode(const tl_session *s) { return s->sopts.mode; }

void tl_session_streamer_flags(const tl_session *s, int *skip_prompt, int *skip_special, int *clean_up)
{
    if (skip_prompt) *skip_prompt = s->sopts.skip_prompt;
    if (skip_special) *skip_special = s->sopts.skip_special_tokens;
    if (clean_up) *clean_up = s->sopts.clean_up_spaces;
}

int tl_session_raw_prompt(const tl_session *s) { return s->have_raw; }
long tl_session_genprompt_at(const tl_session *s) { return s->have_render ? s->genprompt_at : -1; }

/* --- accessors --- */

int tl_session_done(const tl_session *s) { return s->done; }
const tl_stop_result *tl_session_stop(const tl_session *s) { return &s->result; }
int tl_session_n_steps(const tl_session *s) { return s->n_gen; }

const tl_step *tl_session_step_at(const tl_session *s, int i)
{
    return i >= 0 && i < s->n_gen ? &s->steps[i] : NULL;
}

const char *tl_session_prompt_text(const tl_session *s, size_t *len)
{
    if (len) *len = s->have_render ? s->render.len : 0;
    return s->have_render ? s->render.text : NULL;
}

const tl_span *tl_session_prompt_spans(const tl_session *s, size_t *n)
{
    if (n) *n = s->have_render ? s->render.n_spans : 0;
    return s->have_render ? s->render.spans : NULL;
}

const int *tl_session_prompt_ids(const tl_session *s, int *n)
{
    if (n) *n = s->n_prompt;
    return s->prompt;
}

const int *tl_session_generated_ids(const tl_session *s, int *n)
{
    if (n) *n = s->n_gen;
    return s->gen;
}

const char *tl_session_text(const tl_session *s, size_t *len)
{
    tl_session *w = (tl_session *)s;
    if (!w->text)
        w->text = tl_streamer_decode(source(w), s->gen, s->n_gen, s->sopts.skip_special_tokens,
                                     s->sopts.clean_up_spaces, NULL);
    if (len) *len = w->text ? strlen(w->text) : 0;
    return w->text ? w->text : "";
}

const char *tl_session_streamed(const tl_session *s, size_t *len)
{
    if (!s->streamer) {
        if (len) *len = 0;
        return "";
    }
    return tl_streamer_output(s->streamer, len);
}

const tl_stop_config *tl_session_stop_config(const tl_session *s) { return &s->stop; }

tl_metrics_report tl_session_metrics(const tl_session *s)
{
    tl_session *w = (tl_session *)s;
    int cpu = !strcmp(tl_engine_device(w->e), "cpu");
    if (w->bandwidth == 0 && !cpu) {
        double d = tl_engine_device_bandwidth(w->e, 0.2);   /* the GPU's own memory */
        w->bandwidth = d > 0 ? d : -1;
    }
    if (cpu && w->bandwidth == 0 && tl_metrics_floor_reads(w->metrics) == 0)
        floor_read(w);   /* no decode step yet: one read of the same weights now */
    tl_metrics_set_floor(w->metrics, tl_engine_step_bytes(w->e), w->bandwidth);
    tl_metrics_set_cache(w->metrics, cpu ? w->llc : 0, (double)w->m->weight_bytes);
    return tl_metrics_report_get(w->metrics);
}

const tl_metrics *tl_session_metrics_obj(const tl_session *s) { return s->metrics; }

int tl_session_pass_stats(const tl_session *s)
{
    int with = s->n_gen > 1;
    for (int i = 1; i < s->n_gen; i++)
        with &= s->steps[i].stats_in_pass;
    return with;
}
const tl_model *tl_session_model(const tl_session *s) { return s->m; }

/* --- dtype --- */

const char *tl_session_synthetic(const tl_session *s) { return s->opts.synthetic; }

tl_dtype tl_session_dtype(const tl_session *s) { return s->m->layers[0].wq.dtype; }
tl_dtype tl_session_file_dtype(const tl_session *s) { return s->m_file->layers[0].wq.dtype; }

/* The current dtype's generation as a row (generated 0 when there is none). */
static tl_dtype_row live_row(const tl_session *s)
{
    tl_dtype_row r = {.dtype = tl_session_dtype(s), .weight_bytes = (double)s->m->weight_bytes,
                      .step_bytes = -1, .floor_ms = -1, .pace_ms = -1, .floor_lo_ms = -1, .floor_hi_ms = -1};
    if (s->n_gen > 0) {
        tl_metrics_report rep = tl_session_metrics(s);
        r.step_bytes = rep.step_bytes;
        r.floor_ms = rep.floor_ms;
        r.floor_lo_ms = rep.floor_lo_ms;
        r.floor_hi_ms = rep.floor_hi_ms;
        r.floor_reads = rep.floor_reads;
        r.in_cache = rep.in_cache;
        r.pace_ms = rep.generated >= 2 ? rep.pace_ms : -1;
        r.generated = s->n_gen;
        r.n_first = s->n_gen < TL_DTYPE_ROW_IDS ? s->n_gen : TL_DTYPE_ROW_IDS;
        memcpy(r.first_ids, s->gen, sizeof(int) * (size_t)r.n_first);
    }
    return r;
}

/* The row of dt in the table, added when new. */
static tl_dtype_row *row_of(tl_session *s, tl_dtype dt)
{
    for (int i = 0; i < s->n_rows; i++)
        if (s->rows[i].dtype == dt) return &s->rows[i];
    tl_dtype_row *r = &s->rows[s->n_rows++];
    *r = (tl_dtype_row){.dtype = dt, .step_bytes = -1, .floor_ms = -1, .pace_ms = -1, .floor_lo_ms = -1,
                        .floor_hi_ms = -1};
    return r;
}

/* Keeps the current dtype's generation in the table (a dtype with none keeps its last one). */
static void note_row(tl_session *s)
{
    tl_dtype_row live = live_row(s), *r = row_of(s, live.dtype);
    if (live.generated > 0 || r->generated == 0) *r = live;
}

int tl_session_set_dtype(tl_session *s, tl_dtype dt, tl_error *err)
{
    if ((unsigned)dt >= TL_DTYPE_COUNT) return tl_error_set(err, "dtype: unknown dtype %d", (int)dt);
    if (dt == tl_session_dtype(s)) return 0;
    if (s->in_run) return tl_error_set(err, "dtype: cannot change while generating");
    tl_model *m;
    tl_engine *e;
    if (model_for(s, dt, &m, err)) return -1;
    if (make_engine(s, m, &e, err)) {   /* the session stays as it was */
        if (m != s->m_file) tl_model_free(m);
        return -1;
    }
    note_row(s);
    clear_generation(s);
    tl_engine_free(s->e);
    tl_model_free(s->m_conv);
    s->e = e;
    s->m = m;
    s->m_conv = m != s->m_file ? m : NULL;
    s->regions_of = NULL;   /* the floor reads the new weights */
    row_of(s, dt);
    return 0;
}

/* Makes NAME's random weights for the session: bf16 filled, converted when memory is short
 * (tl_synthetic_pick_dtype); *note says so. */
static int synthetic_model(const tl_session *s, const char *name, tl_model **out, char *note, size_t note_size,
                           tl_error *err)
{
    tl_config cfg;
    tl_dtype got;
    tl_model *m = NULL;
    *out = NULL;
    if (tl_synthetic_config(&cfg, name, err)) return -1;
    int vocab = s->m_file->cfg.vocab_size;   /* the sampler's and the tokenizer's ids */
    if (cfg.vocab_size != vocab)
        return tl_error_set(err, "%s: %d token ids, this model's tokenizer and sampler %d", name, cfg.vocab_size, vocab);
    if (tl_synthetic_pick_dtype(name, TL_BF16, tl_synthetic_mem_available(), &got, note, note_size, err) ||
        tl_model_synthetic(&m, &cfg, TL_BF16, 0, err))
        return -1;
    if (got != TL_BF16) {
        tl_model *c;
        int rc = tl_model_convert(&c, m, got, err);
        tl_model_free(m);
        if (rc) return -1;
        m = c;
    }
    if (!strcmp(s->be->name, "cpu")) tl_model_copy_to_hugepages(m, TL_HUGEPAGE_MIN);
    *out = m;
    return 0;
}

int tl_session_use_synthetic(tl_session *s, const char *name, char *note, size_t note_size, tl_error *err)
{
    if (note_size) note[0] = '\0';
    if (s->in_run) return tl_error_set(err, "weights: cannot change while generating");
    if (!name && !s->m_home) return 0;   /* the model opened is already running */
    tl_model *m = NULL;
    tl_engine *e;
    if (name && synthetic_model(s, name, &m, note, note_size, err)) return -1;
    tl_model *next = name ? m : s->m_home;
    if (make_engine(s, next, &e, err)) {   /* the session stays as it was */
        tl_model_free(m);
        return -1;
    }
    clear_generation(s);
    tl_engine_free(s->e);
    tl_model_free(s->m_conv);
    s->m_conv = NULL;
    if (!s->m_home) {   /* the model opened waits aside */
        s->m_home = s->m_file;
        s->home_own = s->own_model;
        s->home_synthetic = s->opts.synthetic;
    } else {
        tl_model_free(s->m_file);   /* random weights made here */
    }
    s->e = e;
    s->m = s->m_file = next;
    if (name) {
        s->own_model = 1;
        snprintf(s->synthetic, sizeof s->synthetic, "%s", name);
        s->opts.synthetic = s->synthetic;
    } else {
        s->own_model = s->home_own;
        s->opts.synthetic = s->home_synthetic;
        s->m_home = NULL;
        s->home_own = 0;
    }
    s->n_rows = 0;          /* the dtype table was the other weights' */
    row_of(s, tl_session_dtype(s));
    s->regions_of = NULL;   /* the floor reads the new weights */
    return 0;
}

int tl_session_dtype_rows(const tl_session *s, tl_dtype_row *rows, int max)
{
    tl_session *w = (tl_session *)s;
    note_row(w);
    int n = s->n_rows < max ? s->n_rows : max;
    memcpy(rows, s->rows, sizeof *rows * (size_t)(n > 0 ? n : 0));
    return n;
}
tl_engine *tl_session_engine(tl_session *s) { return s->e; }
const tl_tokenizer *tl_session_tokenizer(const tl_session *s) { return s->tok; }

const float *tl_session_logits(const tl_session *s)
{
    return s->logits_valid && s->n_gen ? tl_engine_logits(s->e) : NULL;
}
