/* The answer to a completion request that holds a slot: one JSON object, or the iterator
 * streamer's queue forwarded as server-sent events. This is the seam of lesson 4 made real:
 * generation runs on tl_iter's thread, and the response's reader (libmicrohttpd calls it on the
 * connection's thread) takes each chunk from the queue and sends it. Both watch their client:
 * one that went away cancels the generation at the next token, and so does a server draining. */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "tokenloop/tokenizer.h"

/* How long the stream's reader waits on the queue before it looks at its client again. */
enum { STREAM_POLL_MS = 100 };

/* A streamed answer: owned by its response, which libmicrohttpd may destroy after the request
 * itself is gone, so it holds the slot from then on and frees itself in stream_done. */
typedef struct stream {
    server *srv;
    slot *sl;
    struct MHD_Connection *c;
    tl_iter *it;                /* running until finish */
    char id[48];
    long long created;
    int include_usage, raw, logprobs, seed_given, from_default;
    unsigned long long seed;
    int shutdown;               /* the server's drain cancelled the generation */
    const tl_tokenizer *tok;    /* read-only while generation runs */
    int phase;                  /* 0 role chunk, 1 content, 2 final, 3 [DONE], 4 end */
    char *out;                  /* bytes not yet handed to libmicrohttpd */
    size_t out_len, out_pos;
    answer_stats *st;
} stream;

static const char *finish_reason(tl_stop_reason r)
{
    return r == TL_STOP_MAX_NEW_TOKENS ? "length" : "stop";   /* EOS and stop strings are both "stop" */
}

/* tokenloop's own account of the request beside OpenAI's fields: the stop, the budget's source,
 * the seed that drew the tokens (a fresh one when none was given: send it back to reproduce) */
static void add_ext(cJSON *o, tl_session *s, int shutdown, unsigned long long seed, int seed_given, int from_default)
{
    const tl_stop_result *st = tl_session_stop(s);
    const tl_stop_config *sc = tl_session_stop_config(s);
    cJSON *x = cJSON_AddObjectToObject(o, "tokenloop");
    cJSON_AddStringToObject(x, "stop_reason", shutdown ? "server_shutdown" : tl_stop_reason_name(st->reason));
    cJSON_AddStringToObject(x, "stop_detail", shutdown ? "the server is shutting down" : st->detail);
    cJSON_AddStringToObject(x, "budget_source", from_default && sc->budget_source == TL_BUDGET_REQUEST
                            ? "server_default" : tl_budget_source_name(sc->budget_source));
    cJSON_AddNumberToObject(x, "max_new_tokens", sc->max_new_tokens);
    char num[24];   /* the seed as an integer, whatever its size (a double would print 3.2e+15) */
    snprintf(num, sizeof num, "%llu", seed);
    cJSON_AddRawToObject(x, "seed", num);
    cJSON_AddStringToObject(x, "seed_source", seed_given ? "request" : "fresh");
    tl_metrics_report m = tl_session_metrics(s);
    cJSON_AddNumberToObject(x, "ttft_ms", m.ttft_ms);
    if (m.tpot_ms >= 0) cJSON_AddNumberToObject(x, "tpot_ms", m.tpot_ms);
}

static void add_usage(cJSON *o, tl_session *s, answer_stats *st)
{
    int np = 0, ng = 0;
    tl_session_prompt_ids(s, &np);
    tl_session_generated_ids(s, &ng);
    cJSON *u = cJSON_AddObjectToObject(o, "usage");
    /* trap 1: the prompt is not output; generate() returns both, usage keeps them apart */
    cJSON_AddNumberToObject(u, "prompt_tokens", np);
    cJSON_AddNumberToObject(u, "completion_tokens", ng);
    cJSON_AddNumberToObject(u, "total_tokens", np + ng);
    st->prompt_tokens = np;
    st->completion_tokens = ng;
    st->ttft_ms = tl_session_metrics(s).ttft_ms;
    int decodes = 0;
    double sum = 0;
    for (int i = 1; i < tl_session_n_steps(s); i++) {
        const tl_step *stp = tl_session_step_at(s, i);
        sum += stp->batch > 0 ? stp->batch : 1;
        decodes++;
    }
    st->batch = decodes ? sum / decodes : 0;
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
 * logits, before temperature, top-k and top-p), as vLLM reports by default. */
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

/* The generation has ended: the final chunk carries the tokens no text came with (an EOS, a
 * stop string's cut), the finish_reason and tokenloop's account; an error replaces it. */
static void final_event(stream *q)
{
    const tl_iter_token *toks;
    int n_tok = tl_iter_last_tokens(q->it, &toks);
    cJSON *o = delta_chunk(q, NULL, NULL, NULL, toks, n_tok);
    tl_error err = {{0}};
    int fin = tl_iter_finish(q->it, &err);
    q->it = NULL;
    if (fin < 0) {
        cJSON_Delete(o);
        o = cJSON_CreateObject();
        cJSON *e = cJSON_AddObjectToObject(o, "error");
        cJSON_AddStringToObject(e, "message", err.msg);
        cJSON_AddStringToObject(e, "type", "server_error");
        cJSON_AddNullToObject(e, "param");
        cJSON_AddNullToObject(e, "code");
        set_event(q, o);
        q->phase = 3;
        return;
    }
    cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "choices"), 0);
    tl_session *s = q->sl->s;
    cJSON_ReplaceItemInObjectCaseSensitive(c0, "finish_reason", cJSON_CreateString(finish_reason(tl_session_stop(s)->reason)));
    /* a drain that came after the generation had stopped on its own changed nothing */
    add_ext(o, s, q->shutdown && tl_session_stop(s)->reason == TL_STOP_NONE, q->seed, q->seed_given, q->from_default);
    cJSON *scratch = cJSON_CreateObject();
    add_usage(scratch, s, q->st);   /* the access log's figures, whether or not the client asked for usage */
    cJSON_Delete(scratch);
    set_event(q, o);
    q->phase = 2;
}

/* The next content chunk, or the final one; 0 when nothing came within the poll. */
static int content_event(stream *q)
{
    char *text;
    size_t len;
    int rc = tl_iter_next(q->it, &text, &len, STREAM_POLL_MS);
    if (rc < 0) return 0;
    if (rc == 0) {
        final_event(q);
        return 1;
    }
    const tl_iter_token *toks;
    int n_tok = tl_iter_last_tokens(q->it, &toks);
    cJSON *o = delta_chunk(q, NULL, text, NULL, toks, n_tok);
    /* the server's clock for this text: a client compares its own receive time; and how many
     * requests' decodes shared the pass that made its last token (1: alone, or a prefill) */
    cJSON *ext = cJSON_AddObjectToObject(o, "tokenloop");
    cJSON_AddNumberToObject(ext, "token_ms", tl_iter_last_ms(q->it));
    if (n_tok > 0) cJSON_AddNumberToObject(ext, "batch", toks[n_tok - 1].batch);
    set_event(q, o);
    free(text);
    return 1;
}

/* The next event of the stream: the role, each chunk from the queue, the finish, the usage.
 * -1: the client went away. */
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
            if (q->srv->draining && !q->shutdown) {   /* stop at the next token; the final chunk says why */
                q->shutdown = 1;
                tl_iter_cancel(q->it);
            }
            if (content_event(q)) return 1;
            if (reply_client_gone(q->c)) return -1;
            continue;
        }
        if (q->phase == 2) {
            q->phase = 3;
            if (!q->include_usage) continue;
            cJSON *o = chunk_base(q);
            cJSON_AddArrayToObject(o, "choices");
            add_usage(o, q->sl->s, q->st);
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
    while (q->out_pos >= q->out_len) {
        int rc = next_event(q);
        if (rc < 0) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (!rc) return MHD_CONTENT_READER_END_OF_STREAM;
    }
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

static enum MHD_Result start_stream(struct MHD_Connection *c, server *srv, slot *sl, const parsed_req *r,
                                    const char *cid, answer_stats *st)
{
    stream *q = calloc(1, sizeof *q);
    tl_error err = {{0}};
    if (!q || (srv->batcher ? tl_iter_start_batched(&q->it, sl->s, srv->batcher, &err)
                            : tl_iter_start(&q->it, sl->s, &err))) {
        free(q);
        slot_release(srv, sl);
        req_error e;
        req_error_set(&e, 500, NULL, NULL, "%s", q ? err.msg : "out of memory");
        return reply_error(c, &e);
    }
    q->srv = srv;
    q->sl = sl;   /* the response holds the slot now */
    q->c = c;
    snprintf(q->id, sizeof q->id, "%s", cid);
    q->created = (long long)time(NULL);
    q->include_usage = r->include_usage;
    q->raw = r->raw;
    q->logprobs = r->logprobs;
    q->seed = r->seed;
    q->seed_given = r->seed_given;
    q->from_default = !r->max_new && srv->default_max_tokens;
    q->tok = tl_session_tokenizer(sl->s);
    q->st = st;
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_reader, q, stream_done);
    if (!resp) {
        stream_done(q);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    enum MHD_Result ok = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp);
    return ok;   /* stream_done releases the slot */
}

/* Cancels tl_generate when the client has gone away or the server drains. */
typedef struct watch_ctx {
    struct MHD_Connection *c;
    server *srv;
    int gone;
} watch_ctx;

static int generate_hook(void *ctx, tl_session *s, const tl_step *step)
{
    (void)s;
    (void)step;
    watch_ctx *w = ctx;
    if (reply_client_gone(w->c)) return w->gone = 1;
    return w->srv->draining;
}

/* A whole answer's generation: on the batch runner when there is one (the slots' decodes share
 * each pass), else on this connection's thread. The hook's checks run between chunks. */
static int generate_whole(server *srv, slot *sl, watch_ctx *w, tl_error *err)
{
    if (!srv->batcher) return tl_generate(sl->s, generate_hook, w, err);
    tl_iter *it;
    if (tl_iter_start_batched(&it, sl->s, srv->batcher, err)) return -1;
    char *text;
    size_t len;
    int rc, cancelled = 0;
    while ((rc = tl_iter_next(it, &text, &len, STREAM_POLL_MS)) != 0) {
        if (rc == 1) free(text);
        if (!cancelled && generate_hook(w, sl->s, NULL)) {
            tl_iter_cancel(it);
            cancelled = 1;
        }
    }
    return tl_iter_finish(it, err);
}

static cJSON *whole_answer(server *srv, tl_session *s, const parsed_req *r, const char *cid, int shutdown,
                           answer_stats *st)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", cid);
    cJSON_AddStringToObject(o, "object", r->raw ? "text_completion" : "chat.completion");
    cJSON_AddNumberToObject(o, "created", (double)time(NULL));
    cJSON_AddStringToObject(o, "model", srv->model_id);
    cJSON *ch = cJSON_AddArrayToObject(o, "choices"), *c0 = cJSON_CreateObject();
    cJSON_AddItemToArray(ch, c0);
    cJSON_AddNumberToObject(c0, "index", 0);
    /* what the server-mode streamer printed: the text without a matched stop string */
    if (r->raw) {
        cJSON_AddStringToObject(c0, "text", tl_session_streamed(s, NULL));
    } else {
        cJSON *m = cJSON_AddObjectToObject(c0, "message");
        cJSON_AddStringToObject(m, "role", "assistant");
        cJSON_AddStringToObject(m, "content", tl_session_streamed(s, NULL));
    }
    if (r->logprobs < 0) {
        cJSON_AddNullToObject(c0, "logprobs");
    } else {   /* one entry per generated token, the EOS and a stop string's tokens too */
        cJSON *lo = cJSON_AddObjectToObject(c0, "logprobs"), *content = cJSON_AddArrayToObject(lo, "content");
        for (int i = 0; i < tl_session_n_steps(s); i++) {
            const tl_step *stp = tl_session_step_at(s, i);
            add_logprob_entry(content, tl_session_tokenizer(s), stp->chosen, &stp->sample, r->logprobs);
        }
        cJSON_AddNullToObject(lo, "refusal");
    }
    cJSON_AddStringToObject(c0, "finish_reason", finish_reason(tl_session_stop(s)->reason));
    add_usage(o, s, st);
    add_ext(o, s, shutdown, r->seed, r->seed_given, !r->max_new && srv->default_max_tokens);
    return o;
}

/* POST /v1/chat/completions and /v1/completions once the request holds sl (released here or,
 * for a stream, when the response ends). */
enum MHD_Result respond_complete(struct MHD_Connection *c, server *srv, slot *sl, const parsed_req *r,
                                 answer_stats *st)
{
    req_error e;
    if (req_apply(srv, sl->s, r, &e)) {
        slot_release(srv, sl);
        return reply_error(c, &e);
    }
    pthread_mutex_lock(&srv->mu);
    long long id = ++srv->next_id;
    pthread_mutex_unlock(&srv->mu);
    char cid[48];
    snprintf(cid, sizeof cid, "%s-tl%lld", r->raw ? "cmpl" : "chatcmpl", id);
    if (r->stream) return start_stream(c, srv, sl, r, cid, st);
    watch_ctx w = {.c = c, .srv = srv};
    tl_error err = {{0}};
    int rc = generate_whole(srv, sl, &w, &err);
    enum MHD_Result ok;
    if (rc < 0) {
        req_error_set(&e, 500, NULL, NULL, "%s", err.msg);
        ok = reply_error(c, &e);
    } else if (w.gone) {
        ok = MHD_NO;   /* nobody to answer: the connection closes */
    } else {
        cJSON *o = whole_answer(srv, sl->s, r, cid, rc == TL_GENERATE_CANCELLED, st);
        char *j = cJSON_PrintUnformatted(o);
        ok = reply_json(c, 200, j ? j : "{}");
        free(j);
        cJSON_Delete(o);
    }
    slot_release(srv, sl);
    return ok;
}
