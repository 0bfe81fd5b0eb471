/* tokenloop serve: the iterator streamer's queue forwarded to an HTTP client, in the OpenAI
 * chat-completions protocol that llama.cpp's server, vLLM, SGLang and Ollama also speak. This is
 * the seam of lesson 4 made real: generation runs on tl_iter's thread, and the response's reader
 * (libmicrohttpd calls it on the connection's thread) takes each chunk from the queue and sends
 * it as a server-sent event. Each slot's session serves one request at a time; requests beyond the
 * slots wait in a bounded queue, and past it get 429. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>

#include "class_page.h"
#include "serve.h"
#include "tokenloop/paths.h"
#include "tokenloop/streamer.h"
#include "tokenloop/session.h"
#include "tokenloop/tokenizer.h"

enum { MAX_BODY = 8 << 20, MAX_SLOTS = SERVE_MAX_SLOTS };

/* A slot: one session (its own KV cache, sampler, streamer) serving one request at a time. */
typedef struct slot {
    tl_session *s;
    int busy;
} slot;

typedef struct server {
    slot slots[MAX_SLOTS];
    int n_slots, max_queue, waiting;
    struct MHD_Daemon *daemon;
    unsigned port;
    pthread_mutex_t mu;         /* slots[].busy, waiting, next_id */
    pthread_cond_t freed;
    tl_sampling defaults;       /* generation_config.json's, the start of every request */
    char model_id[256];
    char *api_key;
    long long next_id;
} server;

/* A free slot, waiting for one if need be; NULL when the queue is full (the caller says 429). */
static slot *slot_acquire(server *srv)
{
    pthread_mutex_lock(&srv->mu);
    slot *got = NULL;
    for (;;) {
        for (int i = 0; i < srv->n_slots && !got; i++)
            if (!srv->slots[i].busy) got = &srv->slots[i];
        if (got || srv->waiting >= srv->max_queue) break;
        srv->waiting++;
        pthread_cond_wait(&srv->freed, &srv->mu);
        srv->waiting--;
    }
    if (got) got->busy = 1;
    pthread_mutex_unlock(&srv->mu);
    return got;
}

static void slot_release(server *srv, slot *sl)
{
    pthread_mutex_lock(&srv->mu);
    sl->busy = 0;
    pthread_cond_signal(&srv->freed);
    pthread_mutex_unlock(&srv->mu);
}

/* One request: its body as it arrives, and the slot while it runs. */
typedef struct request {
    char *body;
    size_t len;
    int too_big;
    server *srv;
    slot *sl;                   /* held from the request's start to its answer */
} request;

/* A streamed answer: owned by its response, which libmicrohttpd may destroy after the request
 * itself is gone, so it holds the slot from then on and frees itself in stream_done. */
typedef struct stream {
    server *srv;
    slot *sl;
    tl_iter *it;                /* running until finish */
    char id[48];
    long long created;
    int include_usage;
    int raw;                    /* /v1/completions: text chunks, no role */
    int logprobs;               /* -1: none asked for; else the alternatives per token (top_logprobs) */
    const tl_tokenizer *tok;    /* read-only while generation runs */
    int phase;                  /* 0 role chunk, 1 content, 2 final, 3 [DONE], 4 end */
    char *out;                  /* bytes not yet handed to libmicrohttpd */
    size_t out_len, out_pos;
} stream;

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, const char *json)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(json), (void *)json, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ok = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ok;
}

/* OpenAI's error body: {"error": {"message", "type", "param", "code"}} */
static enum MHD_Result fail(struct MHD_Connection *c, unsigned code, const char *param, const char *fmt, ...)
{
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cJSON *e = cJSON_CreateObject(), *o = cJSON_AddObjectToObject(e, "error");
    cJSON_AddStringToObject(o, "message", msg);
    cJSON_AddStringToObject(o, "type", code == 401 ? "authentication_error" : "invalid_request_error");
    if (param) cJSON_AddStringToObject(o, "param", param);
    else cJSON_AddNullToObject(o, "param");
    cJSON_AddNullToObject(o, "code");
    char *j = cJSON_PrintUnformatted(e);
    enum MHD_Result ok = reply(c, code, j ? j : "{}");
    free(j);
    cJSON_Delete(e);
    return ok;
}

static const char *finish_reason(tl_stop_reason r)
{
    return r == TL_STOP_MAX_NEW_TOKENS ? "length" : "stop";   /* EOS and stop strings are both "stop" */
}

/* tokenloop's own account of the stop, beside OpenAI's two-valued finish_reason */
static void add_stop_ext(cJSON *o, tl_session *s)
{
    const tl_stop_result *st = tl_session_stop(s);
    const tl_stop_config *sc = tl_session_stop_config(s);
    cJSON *x = cJSON_AddObjectToObject(o, "tokenloop");
    cJSON_AddStringToObject(x, "stop_reason", tl_stop_reason_name(st->reason));
    cJSON_AddStringToObject(x, "stop_detail", st->detail);
    cJSON_AddStringToObject(x, "budget_source", tl_budget_source_name(sc->budget_source));
    tl_metrics_report m = tl_session_metrics(s);
    cJSON_AddNumberToObject(x, "ttft_ms", m.ttft_ms);
    if (m.tpot_ms >= 0) cJSON_AddNumberToObject(x, "tpot_ms", m.tpot_ms);
}

static void add_usage(cJSON *o, tl_session *s)
{
    int np = 0, ng = 0;
    tl_session_prompt_ids(s, &np);
    tl_session_generated_ids(s, &ng);
    cJSON *u = cJSON_AddObjectToObject(o, "usage");
    /* trap 1: the prompt is not output; generate() returns both, usage keeps them apart */
    cJSON_AddNumberToObject(u, "prompt_tokens", np);
    cJSON_AddNumberToObject(u, "completion_tokens", ng);
    cJSON_AddNumberToObject(u, "total_tokens", np + ng);
}

/* A log probability as JSON can carry it: a token the model rules out entirely (a -inf logit)
 * gets OpenAI's floor, -9999, instead of a non-number */
static double json_logprob(double lp) { return isfinite(lp) ? lp : -9999.0; }

/* token, bytes, logprob: the token's text with bytes that are not UTF-8 on their own as U+FFFD
 * (Python's errors="replace"), and its exact bytes, so a client can join the pieces of a
 * character split across tokens */
static void add_token_fields(cJSON *o, const tl_tokenizer *tok, int id, double lp)
{
    size_t n = 0;
    const char *b = tl_tokenizer_piece(tok, id, &n);
    if (!b) n = 0;
    char *text = tl_utf8_decode_replace(b ? b : "", n, NULL, NULL);
    cJSON_AddStringToObject(o, "token", text ? text : "");
    free(text);
    cJSON_AddNumberToObject(o, "logprob", json_logprob(lp));
    cJSON *by = cJSON_AddArrayToObject(o, "bytes");
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(by, cJSON_CreateNumber((unsigned char)b[i]));
}

/* One entry of logprobs.content. The log probabilities are the model's own (log softmax of the
 * logits, before temperature, top-k and top-p), as vLLM reports by default: what the model
 * thought of each token, whichever sampling then chose it. */
static void add_logprob_entry(cJSON *content, const tl_tokenizer *tok, int id, const tl_sample_report *r, int top)
{
    cJSON *e = cJSON_CreateObject();
    add_token_fields(e, tok, id, (double)r->chosen_logit - r->log_z);
    cJSON *alts = cJSON_AddArrayToObject(e, "top_logprobs");
    for (int j = 0; j < top && j < r->n; j++) {
        cJSON *a = cJSON_CreateObject();
        add_token_fields(a, tok, r->cand[j].id, (double)r->cand[j].logit - r->log_z);
        cJSON_AddItemToArray(alts, a);
    }
    cJSON_AddItemToArray(content, e);
}

static cJSON *chunk_base(stream *q)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", q->id);
    cJSON_AddStringToObject(o, "object", q->raw ? "text_completion" : "chat.completion.chunk");
    cJSON_AddNumberToObject(o, "created", (double)q->created);
    cJSON_AddStringToObject(o, "model", q->srv->model_id);
    return o;
}

/* one server-sent event: "data: {json}\n\n" */
static void set_event(stream *q, cJSON *o)
{
    char *j = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    free(q->out);
    q->out = NULL;
    q->out_len = q->out_pos = 0;
    if (j && asprintf(&q->out, "data: %s\n\n", j) >= 0) q->out_len = strlen(q->out);
    free(j);
}

/* logprobs of a chunk: the tokens that came with it from the queue (none for the role chunk) */
static void add_chunk_logprobs(stream *q, cJSON *c0, const tl_iter_token *t, int n)
{
    if (q->logprobs < 0) {
        cJSON_AddNullToObject(c0, "logprobs");
        return;
    }
    cJSON *lp = cJSON_AddObjectToObject(c0, "logprobs"), *content = cJSON_AddArrayToObject(lp, "content");
    for (int i = 0; i < n; i++) add_logprob_entry(content, q->tok, t[i].id, &t[i].sample, q->logprobs);
    cJSON_AddNullToObject(lp, "refusal");
}

static cJSON *delta_chunk(stream *q, const char *role, const char *content, const char *finish,
                          const tl_iter_token *t, int n_tok)
{
    cJSON *o = chunk_base(q), *ch = cJSON_AddArrayToObject(o, "choices"), *c0 = cJSON_CreateObject();
    cJSON_AddItemToArray(ch, c0);
    cJSON_AddNumberToObject(c0, "index", 0);
    if (q->raw) {
        cJSON_AddStringToObject(c0, "text", content ? content : "");
    } else {
        cJSON *d = cJSON_AddObjectToObject(c0, "delta");
        if (role) cJSON_AddStringToObject(d, "role", role);
        if (content) cJSON_AddStringToObject(d, "content", content);
    }
    if (role) cJSON_AddNullToObject(c0, "logprobs");
    else add_chunk_logprobs(q, c0, t, n_tok);
    if (finish) cJSON_AddStringToObject(c0, "finish_reason", finish);
    else cJSON_AddNullToObject(c0, "finish_reason");
    return o;
}

/* The next event of the stream: the role, each chunk from the queue, the finish, the usage. */
static int next_event(stream *q)
{
    for (;;) {
        if (q->phase == 0) {
            q->phase = 1;
            if (q->raw) continue;   /* a text completion has no role */
            set_event(q, delta_chunk(q, "assistant", "", NULL, NULL, 0));
            return 1;
        }
        if (q->phase == 1) {
            char *text;
            size_t len;
            int rc = tl_iter_next(q->it, &text, &len, -1);
            const tl_iter_token *toks;
            int n_tok = tl_iter_last_tokens(q->it, &toks);
            if (rc == 1) {
                cJSON *o = delta_chunk(q, NULL, text, NULL, toks, n_tok);
                /* the server's clock for this text: a client compares its own receive time */
                cJSON_AddNumberToObject(cJSON_AddObjectToObject(o, "tokenloop"), "token_ms", tl_iter_last_ms(q->it));
                set_event(q, o);
                free(text);
                return 1;
            }
            /* the final chunk carries the tokens no text came with (an EOS, a stop string's cut) */
            cJSON *o = delta_chunk(q, NULL, NULL, NULL, toks, n_tok);
            tl_error err = {{0}};
            int fin = tl_iter_finish(q->it, &err);
            q->it = NULL;
            if (fin < 0) {   /* the error instead of the final chunk */
                cJSON_Delete(o);
                o = cJSON_CreateObject();
                cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "error"), "message", err.msg);
                set_event(q, o);
                q->phase = 3;
                return 1;
            }
            cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "choices"), 0);
            cJSON_ReplaceItemInObjectCaseSensitive(c0, "finish_reason",
                                                   cJSON_CreateString(finish_reason(tl_session_stop(q->sl->s)->reason)));
            add_stop_ext(o, q->sl->s);
            set_event(q, o);
            q->phase = 2;
            return 1;
        }
        if (q->phase == 2) {
            q->phase = 3;
            if (!q->include_usage) continue;
            cJSON *o = chunk_base(q);
            cJSON_AddArrayToObject(o, "choices");
            add_usage(o, q->sl->s);
            set_event(q, o);
            return 1;
        }
        if (q->phase == 3) {
            free(q->out);
            q->out = strdup("data: [DONE]\n\n");
            q->out_len = q->out ? strlen(q->out) : 0;
            q->out_pos = 0;
            q->phase = 4;
            return 1;
        }
        return 0;
    }
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    stream *q = cls;
    while (q->out_pos >= q->out_len)
        if (!next_event(q)) return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = q->out_len - q->out_pos < max ? q->out_len - q->out_pos : max;
    memcpy(buf, q->out + q->out_pos, n);
    q->out_pos += n;
    return (ssize_t)n;
}

/* The response is done or the client went away: a generation still running is cancelled (it
 * stops at the next token) and the session is free for the next request. */
static void stream_done(void *cls)
{
    stream *q = cls;
    if (q->it) {
        tl_iter_cancel(q->it);
        char *t;
        size_t n;
        while (tl_iter_next(q->it, &t, &n, -1) == 1) free(t);
        tl_error err;
        tl_iter_finish(q->it, &err);
    }
    if (q->sl) slot_release(q->srv, q->sl);
    free(q->out);
    free(q);
}

static int get_number(const cJSON *b, const char *name, double lo, double hi, double *out, char *why, size_t cap)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(b, name);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi)) {
        snprintf(why, cap, "%s: expected a number from %.15g to %.15g", name, lo, hi);
        return -1;
    }
    *out = v->valuedouble;
    return 1;
}

/* /v1/completions' prompt: the text as it is, no chat template, BOS as the tokenizer's
 * post-processor adds it (what vLLM does); the model continues it */
static int set_raw_prompt(tl_session *s, const cJSON *b, tl_error *err)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(b, "prompt");
    if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1) p = cJSON_GetArrayItem(p, 0);
    if (!cJSON_IsString(p) || !p->valuestring[0]) return tl_error_set(err, "prompt: expected a non-empty string");
    const tl_tokenizer *tok = tl_session_tokenizer(s);
    if (!tok) return tl_error_set(err, "prompt: this model has no tokenizer");
    int *ids = NULL, n = 0;
    int rc = tl_tokenizer_encode(tok, p->valuestring, strlen(p->valuestring), TL_TOK_ADD_BOS, &ids, &n, err);
    if (!rc) rc = tl_session_set_prompt_ids(s, ids, n, err);
    free(ids);
    return rc;
}

/* The fields a request may carry. OpenAI refuses a field it does not know; so does this server,
 * rather than let a student believe an option (n, logit_bias, tools...) took effect. */
static const char *const known_fields[] = {
    "model", "messages", "prompt", "stream", "stream_options", "max_tokens", "max_completion_tokens",
    "temperature", "top_p", "top_k", "seed", "stop", "logprobs", "top_logprobs", "n", "user",
    "frequency_penalty", "presence_penalty", NULL};

static int check_fields(const cJSON *b, int raw, char *why, size_t cap, const char **param)
{
    const cJSON *f;
    cJSON_ArrayForEach(f, b) {
        int known = 0;
        for (int i = 0; known_fields[i] && !known; i++) known = !strcmp(f->string, known_fields[i]);
        if (!known || (raw && !strcmp(f->string, "messages")) || (!raw && !strcmp(f->string, "prompt"))) {
            *param = f->string;
            return snprintf(why, cap, "%s: not a field of %s that tokenloop serve supports", f->string,
                            raw ? "/v1/completions" : "/v1/chat/completions"), -1;
        }
        *param = f->string;
        if (cJSON_IsNull(f)) continue;
        if (!strcmp(f->string, "n") && !(cJSON_IsNumber(f) && f->valuedouble == 1))
            return snprintf(why, cap, "n: only 1 choice per request (one session per slot)"), -1;
        if ((!strcmp(f->string, "frequency_penalty") || !strcmp(f->string, "presence_penalty")) &&
            !(cJSON_IsNumber(f) && f->valuedouble == 0))
            return snprintf(why, cap, "%s: only 0 (tokenloop samples as transformers' generate() does, "
                            "without penalties)", f->string), -1;
        if ((!strcmp(f->string, "model") || !strcmp(f->string, "user")) && !cJSON_IsString(f))
            return snprintf(why, cap, "%s: expected a string", f->string), -1;
        if ((!strcmp(f->string, "stream") || !strcmp(f->string, "logprobs")) && !cJSON_IsBool(f))
            return snprintf(why, cap, "%s: expected true or false", f->string), -1;
        if (!strcmp(f->string, "stream_options")) {
            const cJSON *u = cJSON_GetObjectItemCaseSensitive(f, "include_usage");
            if (!cJSON_IsObject(f) || (u && !cJSON_IsBool(u) && !cJSON_IsNull(u)))
                return snprintf(why, cap, "stream_options: expected {\"include_usage\": true or false}"), -1;
        }
    }
    *param = NULL;
    return 0;
}

/* The roles the Llama 3.x templates know. A template renders any role string as a header, so an
 * unknown one ("wizard", a typo of "user") would reach the model silently: refused instead. */
static int check_roles(const cJSON *msgs, char *why, size_t cap)
{
    static const char *const roles[] = {"system", "user", "assistant", "tool", "ipython", NULL};
    int i = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        if (!cJSON_IsObject(m)) return snprintf(why, cap, "messages[%d]: expected an object", i), -1;
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(m, "role");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
        if (!cJSON_IsString(r)) return snprintf(why, cap, "messages[%d].role: expected a string", i), -1;
        int known = 0;
        for (int k = 0; roles[k] && !known; k++) known = !strcmp(r->valuestring, roles[k]);
        if (!known)
            return snprintf(why, cap, "messages[%d].role: '%.100s' is not one of system, user, assistant, tool, "
                            "ipython", i, r->valuestring), -1;
        /* only an assistant's turn may be tool calls without text */
        int calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls") != NULL;
        if ((!content || cJSON_IsNull(content)) && !(calls && !strcmp(r->valuestring, "assistant")))
            return snprintf(why, cap, "messages[%d].content: required for role %s", i, r->valuestring), -1;
        if (content && !cJSON_IsNull(content) && !cJSON_IsString(content) && !cJSON_IsArray(content))
            return snprintf(why, cap, "messages[%d].content: expected a string or a list of parts", i), -1;
        i++;
    }
    return 0;
}

/* The request's settings onto the session, from generation_config.json's defaults. */
static int apply_request(server *srv, tl_session *s, const cJSON *b, int raw, char *why, size_t cap,
                         const char **param, int *stream, int *include_usage, int *logprobs)
{
    tl_error err = {{0}};
    if (check_fields(b, raw, why, cap, param)) return -1;
    /* logprobs: the chosen token's and top_logprobs alternatives' (the legacy /v1/completions
     * form, an integer, is not served: chat's form names each token's bytes) */
    const cJSON *lp = cJSON_GetObjectItemCaseSensitive(b, "logprobs");
    double top = 0;
    *param = "top_logprobs";
    int got_top = get_number(b, "top_logprobs", 0, 20, &top, why, cap);
    if (got_top < 0 || (got_top && top != (int)top))
        return snprintf(why, cap, "top_logprobs: expected an integer from 0 to 20"), -1;
    *logprobs = cJSON_IsTrue(lp) ? (int)top : -1;
    if (got_top && *logprobs < 0) return snprintf(why, cap, "top_logprobs: needs \"logprobs\": true"), -1;
    *param = "logprobs";
    if (raw && *logprobs >= 0)
        return snprintf(why, cap, "logprobs: not served on /v1/completions (use /v1/chat/completions)"), -1;
    tl_session_set_top_n(s, *logprobs > 0 ? *logprobs : 1);
    tl_session_set_report(s, *logprobs >= 0 ? TL_REPORT_MODEL : 0);   /* logprobs need log_z */
    if (raw) {
        *param = "prompt";
        if (set_raw_prompt(s, b, &err)) return snprintf(why, cap, "%s", err.msg), -1;
    } else {
        const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(b, "messages");
        *param = "messages";
        if (!cJSON_IsArray(msgs)) return snprintf(why, cap, "messages: expected an array of messages"), -1;
        if (check_roles(msgs, why, cap)) return -1;
        char *mj = cJSON_PrintUnformatted(msgs);
        int rc = !mj || tl_chat_messages_check(mj, strlen(mj), &err) || tl_session_set_messages(s, mj, &err);
        free(mj);
        if (rc) return snprintf(why, cap, "%s", err.msg), -1;
        tl_session_set_add_generation_prompt(s, 1);
    }
    tl_session_set_stream_mode(s, TL_STREAM_SERVER);   /* hold back only what a stop string may take */
    tl_sampling p = srv->defaults;
    double v;
    int got;
    *param = "temperature";
    if ((got = get_number(b, "temperature", 0, 2, &v, why, cap)) < 0) return -1;
    if (got) {
        p.greedy = v == 0;
        if (v > 0) p.temperature = (float)v;
    }
    *param = "top_p";
    if ((got = get_number(b, "top_p", 1e-9, 1, &v, why, cap)) < 0) return -1;
    if (got) p.top_p = (float)v;
    *param = "top_k";
    if ((got = get_number(b, "top_k", 0, 1 << 20, &v, why, cap)) < 0) return -1;
    if (got) p.top_k = (int)v;
    *param = "seed";
    if ((got = get_number(b, "seed", 0, 9007199254740991.0, &v, why, cap)) < 0) return -1;
    if (got) p.seed = (uint64_t)v;
    tl_session_set_sampling(s, p);
    double max_new = 0;
    *param = "max_completion_tokens";
    if ((got = get_number(b, "max_completion_tokens", 1, 1 << 20, &max_new, why, cap)) < 0) return -1;
    *param = "max_tokens";
    if (!got && get_number(b, "max_tokens", 1, 1 << 20, &max_new, why, cap) < 0) return -1;
    tl_session_set_max_new_tokens(s, (int)max_new);
    const cJSON *stop = cJSON_GetObjectItemCaseSensitive(b, "stop");
    const char *list[TL_MAX_STOP];
    int n = 0;
    *param = "stop";
    if (cJSON_IsString(stop)) list[n++] = stop->valuestring;
    else if (cJSON_IsArray(stop)) {
        const cJSON *e;
        cJSON_ArrayForEach(e, stop) {
            if (!cJSON_IsString(e) || n == 4) return snprintf(why, cap, "stop: expected a string or up to 4 strings"), -1;
            list[n++] = e->valuestring;
        }
    } else if (stop && !cJSON_IsNull(stop)) return snprintf(why, cap, "stop: expected a string or up to 4 strings"), -1;
    if (tl_session_set_stop_strings(s, list, n, &err)) return snprintf(why, cap, "%s", err.msg), -1;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(b, "stream");
    *stream = cJSON_IsTrue(st);
    const cJSON *so = cJSON_GetObjectItemCaseSensitive(b, "stream_options");
    *include_usage = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(so, "include_usage"));
    return 0;
}

/* POST /v1/chat/completions (raw 0) and /v1/completions (raw 1) */
static enum MHD_Result complete(struct MHD_Connection *c, request *q, int raw)
{
    server *srv = q->srv;
    cJSON *b = cJSON_ParseWithLength(q->body ? q->body : "", q->len);
    if (!cJSON_IsObject(b)) {
        cJSON_Delete(b);
        return fail(c, 400, NULL, "the body is not a JSON object");
    }
    q->sl = slot_acquire(srv);
    if (!q->sl) {
        cJSON_Delete(b);
        char body[300];
        snprintf(body, sizeof body, "{\"error\":{\"message\":\"all %d slots are busy and %d requests wait: try "
                 "again shortly\",\"type\":\"rate_limit_error\",\"param\":null,\"code\":null}}",
                 srv->n_slots, srv->max_queue);
        struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_COPY);
        MHD_add_response_header(r, "Content-Type", "application/json");
        MHD_add_response_header(r, "Retry-After", "1");
        enum MHD_Result ok = MHD_queue_response(c, 429, r);
        MHD_destroy_response(r);
        return ok;
    }
    tl_session *s = q->sl->s;
    char why[1100];
    const char *param = NULL;
    int streaming = 0;
    int include_usage = 0, logprobs = -1;
    if (apply_request(srv, s, b, raw, why, sizeof why, &param, &streaming, &include_usage, &logprobs)) {
        char pname[64];   /* param may point into the body */
        snprintf(pname, sizeof pname, "%s", param ? param : "");
        cJSON_Delete(b);
        slot_release(srv, q->sl);
        q->sl = NULL;
        return fail(c, 400, param ? pname : NULL, "%s", why);
    }
    cJSON_Delete(b);
    /* rendered and tokenized here, so a prompt the context cannot hold (or a template that
     * refuses the messages) is the client's 400, before any stream begins */
    tl_error perr = {{0}};
    if (tl_session_prepare(s, &perr)) {
        slot_release(srv, q->sl);
        q->sl = NULL;
        return fail(c, 400, raw ? "prompt" : "messages", "%s", perr.msg);
    }
    pthread_mutex_lock(&srv->mu);
    long long id = ++srv->next_id;
    pthread_mutex_unlock(&srv->mu);
    char cid[48];
    snprintf(cid, sizeof cid, "%s-tl%lld", raw ? "cmpl" : "chatcmpl", id);
    long long created = (long long)time(NULL);
    tl_error err = {{0}};
    if (streaming) {
        stream *st = calloc(1, sizeof *st);
        if (!st) tl_error_set(&err, "out of memory");
        else {
            st->srv = srv;
            memcpy(st->id, cid, sizeof cid);
            st->created = created;
            st->include_usage = include_usage;
            st->raw = raw;
            st->logprobs = logprobs;
            st->tok = tl_session_tokenizer(s);
        }
        if (!st || tl_iter_start(&st->it, s, &err)) {
            free(st);
            slot_release(srv, q->sl);
            q->sl = NULL;
            return fail(c, 500, NULL, "%s", err.msg);
        }
        st->sl = q->sl;   /* the response holds the slot now */
        q->sl = NULL;
        struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_reader, st, stream_done);
        if (!r) {
            stream_done(st);
            return MHD_NO;
        }
        MHD_add_response_header(r, "Content-Type", "text/event-stream");
        MHD_add_response_header(r, "Cache-Control", "no-cache");
        enum MHD_Result ok = MHD_queue_response(c, 200, r);
        MHD_destroy_response(r);
        return ok;   /* stream_done releases the slot */
    }
    enum MHD_Result ok;
    if (tl_generate(s, NULL, NULL, &err) < 0) {
        ok = fail(c, 500, NULL, "%s", err.msg);
    } else {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", cid);
        cJSON_AddStringToObject(o, "object", raw ? "text_completion" : "chat.completion");
        cJSON_AddNumberToObject(o, "created", (double)created);
        cJSON_AddStringToObject(o, "model", srv->model_id);
        cJSON *ch = cJSON_AddArrayToObject(o, "choices"), *c0 = cJSON_CreateObject();
        cJSON_AddItemToArray(ch, c0);
        cJSON_AddNumberToObject(c0, "index", 0);
        /* what the server-mode streamer printed: the text without a matched stop string */
        if (raw) {
            cJSON_AddStringToObject(c0, "text", tl_session_streamed(s, NULL));
        } else {
            cJSON *m = cJSON_AddObjectToObject(c0, "message");
            cJSON_AddStringToObject(m, "role", "assistant");
            cJSON_AddStringToObject(m, "content", tl_session_streamed(s, NULL));
        }
        if (logprobs < 0) {
            cJSON_AddNullToObject(c0, "logprobs");
        } else {   /* one entry per generated token, the EOS and a stop string's tokens too */
            cJSON *lo = cJSON_AddObjectToObject(c0, "logprobs"), *content = cJSON_AddArrayToObject(lo, "content");
            for (int i = 0; i < tl_session_n_steps(s); i++) {
                const tl_step *stp = tl_session_step_at(s, i);
                add_logprob_entry(content, tl_session_tokenizer(s), stp->chosen, &stp->sample, logprobs);
            }
            cJSON_AddNullToObject(lo, "refusal");
        }
        cJSON_AddStringToObject(c0, "finish_reason", finish_reason(tl_session_stop(s)->reason));
        add_usage(o, s);
        add_stop_ext(o, s);
        char *j = cJSON_PrintUnformatted(o);
        ok = reply(c, 200, j ? j : "{}");
        free(j);
        cJSON_Delete(o);
    }
    slot_release(srv, q->sl);
    q->sl = NULL;
    return ok;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *data, size_t *data_size, void **con_cls)
{
    (void)version;
    server *srv = cls;
    request *q = *con_cls;
    if (!q) {   /* the headers have arrived: the body, if any, comes in later calls */
        q = calloc(1, sizeof *q);
        if (!q) return MHD_NO;
        q->srv = srv;
        *con_cls = q;
        return MHD_YES;
    }
    if (*data_size) {
        if (q->len + *data_size > MAX_BODY) q->too_big = 1;
        else {
            char *nb = realloc(q->body, q->len + *data_size + 1);
            if (!nb) return MHD_NO;
            q->body = nb;
            memcpy(q->body + q->len, data, *data_size);
            q->len += *data_size;
            q->body[q->len] = 0;
        }
        *data_size = 0;
        return MHD_YES;
    }
    int open_path = !strcmp(url, "/") || !strcmp(url, "/index.html") || !strcmp(url, "/health");
    if (srv->api_key && !open_path) {   /* the page and /health carry no secret */
        const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
        if (!auth || strncmp(auth, "Bearer ", 7) || strcmp(auth + 7, srv->api_key))
            return fail(c, 401, NULL, "Incorrect or missing API key (send \"Authorization: Bearer KEY\")");
    }
    if (q->too_big) return fail(c, 413, NULL, "the body is larger than %d bytes", MAX_BODY);
    int get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
    if (!strcmp(url, "/") || !strcmp(url, "/index.html")) {
        if (!get) return fail(c, 405, NULL, "%s %s: use GET", method, url);
        struct MHD_Response *r = MHD_create_response_from_buffer(sizeof class_page - 1, (void *)class_page,
                                                                MHD_RESPMEM_PERSISTENT);
        MHD_add_response_header(r, "Content-Type", "text/html; charset=utf-8");
        enum MHD_Result ok = MHD_queue_response(c, 200, r);
        MHD_destroy_response(r);
        return ok;
    }
    if (!strcmp(url, "/health")) {
        if (!get) return fail(c, 405, NULL, "%s %s: use GET", method, url);
        /* the slots and the queue as they are now: a class (and the load test) sees them fill and free */
        pthread_mutex_lock(&srv->mu);
        int busy = 0;
        for (int i = 0; i < srv->n_slots; i++) busy += srv->slots[i].busy;
        char h[160];
        snprintf(h, sizeof h, "{\"status\":\"ok\",\"slots\":%d,\"busy\":%d,\"waiting\":%d,\"queue\":%d}",
                 srv->n_slots, busy, srv->waiting, srv->max_queue);
        pthread_mutex_unlock(&srv->mu);
        return reply(c, 200, h);
    }
    if (!strcmp(url, "/v1/models")) {
        if (!get) return fail(c, 405, NULL, "%s %s: use GET", method, url);
        cJSON *o = cJSON_CreateObject(), *d = cJSON_AddArrayToObject(o, "data"), *m = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "object", "list");
        cJSON_AddItemToArray(d, m);
        cJSON_AddStringToObject(m, "id", srv->model_id);
        cJSON_AddStringToObject(m, "object", "model");
        cJSON_AddNumberToObject(m, "created", 0);
        cJSON_AddStringToObject(m, "owned_by", "tokenloop");
        char *j = cJSON_PrintUnformatted(o);
        enum MHD_Result ok = reply(c, 200, j ? j : "{}");
        free(j);
        cJSON_Delete(o);
        return ok;
    }
    int raw = !strcmp(url, "/v1/completions");
    if (raw || !strcmp(url, "/v1/chat/completions")) {
        if (!post) return fail(c, 405, NULL, "%s %s: use POST", method, url);
        return complete(c, q, raw);
    }
    return fail(c, 404, NULL, "%s %s: no such endpoint (/v1/chat/completions, /v1/completions, /v1/models, /health)",
                method, url);
}

static void request_free(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    request *q = *con_cls;
    if (!q) return;
    if (q->sl) slot_release(q->srv, q->sl);   /* a request that ended before its answer */
    free(q->body);
    free(q);
    *con_cls = NULL;
}

static void base_name(const char *dir, char *name, size_t cap)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    const char *p = dir + n;
    while (p > dir && p[-1] != '/') p--;
    snprintf(name, cap, "%.*s", (int)(dir + n - p), p);
}

int serve_start(server **out, const serve_opts *o, tl_error *err)
{
    *out = NULL;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o->port)};
    const char *host = o->host ? o->host : "127.0.0.1";
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1)
        return tl_error_set(err, "--host %s: expected an IPv4 address such as 127.0.0.1", host);
    if (o->slots < 1 || o->slots > MAX_SLOTS) return tl_error_set(err, "--slots %d: expected 1 to %d", o->slots, MAX_SLOTS);
    server *srv = calloc(1, sizeof *srv);
    if (!srv) return tl_error_set(err, "serve: out of memory");
    pthread_mutex_init(&srv->mu, NULL);   /* first, so serve_stop can undo any step below */
    pthread_cond_init(&srv->freed, NULL);
    if (o->api_key && !(srv->api_key = strdup(o->api_key))) {
        serve_stop(srv);
        return tl_error_set(err, "serve: out of memory");
    }
    base_name(o->model_dir ? o->model_dir : "model", srv->model_id, sizeof srv->model_id);
    srv->max_queue = o->queue;
    tl_session_opts so = {.model_dir = o->model_dir, .threads = o->threads, .precision = o->precision};
    tl_model *m = o->model;
    if (!m) {
        if (tl_session_open(&srv->slots[0].s, &so, err)) {
            serve_stop(srv);
            return -1;
        }
        srv->n_slots = 1;
        m = (tl_model *)tl_session_model(srv->slots[0].s);
    }
    /* the other slots read the same weights: one copy, a KV cache each */
    for (; srv->n_slots < o->slots; srv->n_slots++)
        if (tl_session_open_model(&srv->slots[srv->n_slots].s, m, 0, &so, err)) {
            serve_stop(srv);
            return -1;
        }
    srv->defaults = tl_session_sampling(srv->slots[0].s);
    /* no MHD_USE_ERROR_LOG: its one routine message is a client going away, which cancels */
    srv->daemon = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD,
                                   (uint16_t)o->port, NULL, NULL, handle, srv,
                                   MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                                   MHD_OPTION_NOTIFY_COMPLETED, request_free, NULL,
                                   MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)600, MHD_OPTION_END);
    if (!srv->daemon) {
        int e = errno;
        serve_stop(srv);
        return tl_error_set(err, "serve: cannot listen on %s:%d (%s)", host, o->port, strerror(e));
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = info ? info->port : (unsigned)o->port;
    *out = srv;
    return 0;
}

unsigned serve_port(const server *srv) { return srv->port; }

int serve_slots(const server *srv) { return srv->n_slots; }

const char *serve_model_id(const server *srv) { return srv->model_id; }

void serve_stop(server *srv)
{
    if (!srv) return;
    if (srv->daemon) MHD_stop_daemon(srv->daemon);   /* waits for every connection's thread */
    for (int i = srv->n_slots - 1; i >= 0; i--) tl_session_free(srv->slots[i].s);   /* slot 0 may own the model */
    pthread_mutex_destroy(&srv->mu);
    pthread_cond_destroy(&srv->freed);
    free(srv->api_key);
    free(srv);
}
