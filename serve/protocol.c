/* A request body to a checked request (parsed_req), before any slot is taken: exactly one JSON
 * value, no duplicate keys, no NUL, every field known and of its type, and the prompt's size
 * bounded against the context before anything renders or tokenizes it. Then req_apply puts the
 * request onto a slot's session. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tokenloop/platform.h"
#include "tokenloop/streamer.h"
#include "tokenloop/template.h"
#include "tokenloop/tokenizer.h"

/* The fewest tokens a Llama 3.x template renders a message in: its header's three markers and
 * the <|eot_id|> that ends it. A conversation of n messages needs at least 4n positions. */
enum { MIN_TOKENS_PER_MESSAGE = 4 };

void req_error_set(req_error *e, unsigned status, const char *param, const char *code, const char *fmt, ...)
{
    e->status = status;
    e->type = status == 401 ? "authentication_error" : status == 429 ? "rate_limit_error"
            : status >= 500 ? "server_error" : "invalid_request_error";
    e->code = code;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
}

void req_free(parsed_req *r)
{
    free(r->messages);
    free(r->prompt);
    for (int i = 0; i < r->n_stop; i++) free(r->stop[i]);
    memset(r, 0, sizeof *r);
}

/* A "\u0000" escape in the body (not a "\\u0000", which is text): cJSON would end the string there. */
static int has_nul_escape(const char *b, size_t len)
{
    for (size_t i = 0; i + 6 <= len; i++) {
        if (b[i] != '\\' || b[i + 1] != 'u' || memcmp(b + i + 2, "0000", 4)) continue;
        size_t k = i;
        while (k > 0 && b[k - 1] == '\\') k--;
        if ((i - k) % 2 == 0) return 1;   /* an even run of backslashes before: this one escapes */
    }
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The first key that appears twice in an object anywhere in v (NULL: none). Sorted, not pairwise:
 * an object of 100,000 keys costs a sort, not 10^10 comparisons. */
static const char *duplicate_key(const cJSON *v)
{
    int n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, v) n++;
    if (cJSON_IsObject(v) && n > 1) {
        const char **keys = malloc((size_t)n * sizeof *keys);
        if (!keys) return "(out of memory)";
        int k = 0;
        cJSON_ArrayForEach(c, v) keys[k++] = c->string;
        qsort(keys, (size_t)n, sizeof *keys, cmp_str);
        const char *dup = NULL;
        for (int i = 1; i < n && !dup; i++)
            if (!strcmp(keys[i - 1], keys[i])) dup = keys[i];
        free(keys);
        if (dup) return dup;
    }
    cJSON_ArrayForEach(c, v) {
        const char *d = duplicate_key(c);
        if (d) return d;
    }
    return NULL;
}

/* Exactly one JSON object, unchanged by parsing: NULL with e set otherwise. */
static cJSON *parse_strict(const char *body, size_t len, req_error *e)
{
    if (memchr(body, 0, len))
        return req_error_set(e, 400, NULL, "invalid_json", "the body contains a NUL byte (JSON has none outside "
                             "strings, and inside one it must be escaped)"), NULL;
    if (has_nul_escape(body, len))
        return req_error_set(e, 400, NULL, "invalid_json", "the body contains \\u0000: tokenloop cannot pass a NUL "
                             "character to the model, and will not cut the text there"), NULL;
    const char *end = NULL;
    cJSON *b = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    if (!b) {
        size_t at = end ? (size_t)(end - body) : 0;
        return req_error_set(e, 400, NULL, "invalid_json", "the body is not JSON (at byte %zu)", at), NULL;
    }
    while (end < body + len && strchr(" \t\r\n", *end)) end++;
    if (end != body + len) {
        cJSON_Delete(b);
        return req_error_set(e, 400, NULL, "invalid_json", "the body has more after its JSON value (at byte %zu)",
                             (size_t)(end - body)), NULL;
    }
    if (!cJSON_IsObject(b)) {
        cJSON_Delete(b);
        return req_error_set(e, 400, NULL, "invalid_json", "the body is not a JSON object"), NULL;
    }
    const char *dup = duplicate_key(b);
    if (dup) {
        req_error_set(e, 400, dup, "duplicate_key", "the key \"%.100s\" appears twice in one object", dup);
        cJSON_Delete(b);
        return NULL;
    }
    return b;
}

/* The fields a request may carry. OpenAI refuses a field it does not know; so does this server,
 * rather than let a student believe an option (logit_bias, tools...) took effect. */
static const char *const known_fields[] = {
    "model", "messages", "prompt", "stream", "stream_options", "max_tokens", "max_completion_tokens",
    "temperature", "top_p", "top_k", "seed", "stop", "logprobs", "top_logprobs", "n", "user",
    "frequency_penalty", "presence_penalty", "response_format", "store", NULL};

static int check_field(const cJSON *f, req_error *e)
{
    const char *k = f->string;
    if (!strcmp(k, "n") && !(cJSON_IsNumber(f) && f->valuedouble == 1))
        return req_error_set(e, 400, k, NULL, "n: only 1 choice per request (one session per slot)"), -1;
    if ((!strcmp(k, "frequency_penalty") || !strcmp(k, "presence_penalty")) && !(cJSON_IsNumber(f) && f->valuedouble == 0))
        return req_error_set(e, 400, k, NULL, "%s: only 0 (tokenloop samples as transformers' generate() does, "
                             "without penalties)", k), -1;
    if ((!strcmp(k, "model") || !strcmp(k, "user")) && !cJSON_IsString(f))
        return req_error_set(e, 400, k, NULL, "%s: expected a string", k), -1;
    if ((!strcmp(k, "stream") || !strcmp(k, "logprobs") || !strcmp(k, "store")) && !cJSON_IsBool(f))
        return req_error_set(e, 400, k, NULL, "%s: expected true or false", k), -1;
    if (!strcmp(k, "stream_options")) {
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(f, "include_usage");
        if (!cJSON_IsObject(f) || (u && !cJSON_IsBool(u) && !cJSON_IsNull(u)))
            return req_error_set(e, 400, k, NULL, "stream_options: expected {\"include_usage\": true or false}"), -1;
    }
    if (!strcmp(k, "response_format")) {   /* text is what it always is; JSON modes need a grammar */
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(f, "type");
        if (!cJSON_IsObject(f) || !cJSON_IsString(t))
            return req_error_set(e, 400, k, NULL, "response_format: expected {\"type\": \"text\"}"), -1;
        if (strcmp(t->valuestring, "text"))
            return req_error_set(e, 400, k, "unsupported_response_format", "response_format: '%.60s' is not served: "
                                 "tokenloop samples without a grammar, so only {\"type\": \"text\"}", t->valuestring), -1;
    }
    return 0;
}

static int check_fields(const cJSON *b, int raw, req_error *e)
{
    const cJSON *f;
    cJSON_ArrayForEach(f, b) {
        int known = 0;
        for (int i = 0; known_fields[i] && !known; i++) known = !strcmp(f->string, known_fields[i]);
        if (!known || (raw && !strcmp(f->string, "messages")) || (!raw && !strcmp(f->string, "prompt")))
            return req_error_set(e, 400, f->string, "unknown_parameter", "%s: not a field of %s that tokenloop serve "
                                 "supports", f->string, raw ? "/v1/completions" : "/v1/chat/completions"), -1;
        if (!cJSON_IsNull(f) && check_field(f, e)) return -1;
    }
    return 0;
}

/* A number field within [lo, hi] (integer when asked): 0 absent, 1 set, -1 refused. */
static int get_number(const cJSON *b, const char *name, double lo, double hi, int integer, double *out, req_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(b, name);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi) ||
        (integer && v->valuedouble != (double)(long long)v->valuedouble))
        return req_error_set(e, 400, name, NULL, "%s: expected %s from %.15g to %.15g", name,
                             integer ? "an integer" : "a number", lo, hi), -1;
    *out = v->valuedouble;
    return 1;
}

/* content as one string: a string as it is, a list of text parts joined with "\n" (what vLLM
 * does with OpenAI's parts); any other part type refused by name. NULL with e set. */
static char *content_text(const cJSON *content, int i, size_t *len, req_error *e)
{
    if (cJSON_IsString(content)) {
        *len = strlen(content->valuestring);
        return strdup(content->valuestring);
    }
    if (!cJSON_IsArray(content) || !cJSON_GetArraySize(content))
        return req_error_set(e, 400, "messages", NULL, "messages[%d].content: expected a string or a non-empty list "
                             "of text parts", i), NULL;
    size_t total = 0;
    int j = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, content) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(p, "type"), *x = cJSON_GetObjectItemCaseSensitive(p, "text");
        if (!cJSON_IsString(t))
            return req_error_set(e, 400, "messages", NULL, "messages[%d].content[%d].type: expected a string", i, j), NULL;
        if (strcmp(t->valuestring, "text"))
            return req_error_set(e, 400, "messages", "unsupported_content_type", "messages[%d].content[%d]: '%.60s' "
                                 "parts are not served (a text-only model): only \"text\"", i, j, t->valuestring), NULL;
        if (!cJSON_IsString(x))
            return req_error_set(e, 400, "messages", NULL, "messages[%d].content[%d].text: expected a string", i, j), NULL;
        total += strlen(x->valuestring) + 1;
        j++;
    }
    char *out = malloc(total), *w = out;
    if (!out) return req_error_set(e, 500, NULL, NULL, "out of memory"), NULL;
    cJSON_ArrayForEach(p, content) {
        const char *x = cJSON_GetObjectItemCaseSensitive(p, "text")->valuestring;
        size_t n = strlen(x);
        if (w != out) *w++ = '\n';
        memcpy(w, x, n);
        w += n;
    }
    *w = 0;
    *len = (size_t)(w - out);
    return out;
}

/* The roles the Llama 3.x templates know, with OpenAI's "developer" as the system turn. A template
 * renders any role string as a header, so an unknown one would reach the model silently. */
static const char *role_of(const cJSON *r)
{
    static const char *const roles[] = {"system", "user", "assistant", "tool", "ipython", NULL};
    if (!cJSON_IsString(r)) return NULL;
    if (!strcmp(r->valuestring, "developer")) return "system";
    for (int k = 0; roles[k]; k++)
        if (!strcmp(r->valuestring, roles[k])) return roles[k];
    return NULL;
}

/* One message checked and rewritten: its role mapped, its content one string. *bytes adds its size. */
static int message_copy(const cJSON *m, int i, cJSON *out, size_t *bytes, req_error *e)
{
    if (!cJSON_IsObject(m)) return req_error_set(e, 400, "messages", NULL, "messages[%d]: expected an object", i), -1;
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(m, "role"), *content = cJSON_GetObjectItemCaseSensitive(m, "content");
    const char *role = role_of(r);
    if (!role)
        return req_error_set(e, 400, "messages", NULL, cJSON_IsString(r) ? "messages[%d].role: '%.100s' is not one of "
                             "system, developer, user, assistant, tool, ipython" : "messages[%d].role: expected a string%.0s",
                             i, cJSON_IsString(r) ? r->valuestring : ""), -1;
    /* only an assistant's turn may be tool calls without text */
    int calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls") != NULL;
    cJSON *copy = cJSON_Duplicate(m, 1);
    if (!copy) return req_error_set(e, 500, NULL, NULL, "out of memory"), -1;
    cJSON_AddItemToArray(out, copy);
    cJSON_ReplaceItemInObjectCaseSensitive(copy, "role", cJSON_CreateString(role));
    if (!content || cJSON_IsNull(content)) {
        if (calls && !strcmp(role, "assistant")) return 0;
        return req_error_set(e, 400, "messages", NULL, "messages[%d].content: required for role %s", i, role), -1;
    }
    size_t len = 0;
    char *text = content_text(content, i, &len, e);
    if (!text) return -1;
    cJSON_ReplaceItemInObjectCaseSensitive(copy, "content", cJSON_CreateString(text));
    free(text);
    *bytes += len;
    return 0;
}

/* The bound on a prompt of this many bytes: no token is longer than max_piece bytes, so fewer
 * than bytes / max_piece tokens is impossible; past the context, refused before any tokenizing. */
static int too_long(server *srv, size_t bytes, const char *param, req_error *e)
{
    size_t least = (bytes + (size_t)srv->max_piece - 1) / (size_t)srv->max_piece;
    if (least < (size_t)srv->capacity) return 0;
    return req_error_set(e, 400, param, "context_length_exceeded", "%s: %zu bytes are at least %zu tokens (none is "
                         "longer than %d bytes), and the context holds %d", param, bytes, least, srv->max_piece,
                         srv->capacity), -1;
}

static int parse_messages(server *srv, const cJSON *b, parsed_req *out, req_error *e)
{
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(b, "messages");
    if (!cJSON_IsArray(msgs)) return req_error_set(e, 400, "messages", NULL, "messages: expected an array of messages"), -1;
    int n = cJSON_GetArraySize(msgs);
    if ((long long)n * MIN_TOKENS_PER_MESSAGE >= srv->capacity)
        return req_error_set(e, 400, "messages", "context_length_exceeded", "messages: %d messages need at least %lld "
                             "tokens (%d each), and the context holds %d", n, (long long)n * MIN_TOKENS_PER_MESSAGE,
                             MIN_TOKENS_PER_MESSAGE, srv->capacity), -1;
    cJSON *copy = cJSON_CreateArray();
    if (!copy) return req_error_set(e, 500, NULL, NULL, "out of memory"), -1;
    size_t bytes = 0;
    int i = 0, rc = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        if ((rc = message_copy(m, i++, copy, &bytes, e)) || (rc = too_long(srv, bytes, "messages", e))) break;
    }
    tl_error err = {{0}};
    if (!rc) {
        out->messages = cJSON_PrintUnformatted(copy);
        if (!out->messages) {
            req_error_set(e, 500, NULL, NULL, "out of memory");
            rc = -1;
        } else if (tl_chat_messages_check(out->messages, strlen(out->messages), &err)) {
            req_error_set(e, 400, "messages", NULL, "%s", err.msg);
            rc = -1;
        }
    }
    cJSON_Delete(copy);
    return rc;
}

/* /v1/completions' prompt: the text as it is (a list of one string accepted) */
static int parse_prompt(server *srv, const cJSON *b, parsed_req *out, req_error *e)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(b, "prompt");
    if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1) p = cJSON_GetArrayItem(p, 0);
    if (!cJSON_IsString(p) || !p->valuestring[0])
        return req_error_set(e, 400, "prompt", NULL, "prompt: expected a non-empty string"), -1;
    out->prompt_len = strlen(p->valuestring);
    if (too_long(srv, out->prompt_len, "prompt", e)) return -1;
    out->prompt = strdup(p->valuestring);
    return out->prompt ? 0 : (req_error_set(e, 500, NULL, NULL, "out of memory"), -1);
}

static int parse_stop(const cJSON *b, parsed_req *out, req_error *e)
{
    const cJSON *stop = cJSON_GetObjectItemCaseSensitive(b, "stop");
    if (!stop || cJSON_IsNull(stop)) return 0;
    const cJSON *one[1] = {stop}, *const *list = one;
    int n = 1;
    const cJSON *arr[4];
    if (cJSON_IsArray(stop)) {
        n = 0;
        const cJSON *x;
        cJSON_ArrayForEach(x, stop) {
            if (n == 4) return req_error_set(e, 400, "stop", NULL, "stop: expected a string or up to 4 strings"), -1;
            arr[n++] = x;
        }
        list = arr;
    }
    for (int i = 0; i < n; i++) {
        if (!cJSON_IsString(list[i]))
            return req_error_set(e, 400, "stop", NULL, "stop: expected a string or up to 4 strings"), -1;
        if (!list[i]->valuestring[0])
            return req_error_set(e, 400, "stop", NULL, "stop: an empty string matches everywhere: leave it out"), -1;
        if (!(out->stop[out->n_stop++] = strdup(list[i]->valuestring)))
            return req_error_set(e, 500, NULL, NULL, "out of memory"), -1;
    }
    return 0;
}

/* temperature, top_p, top_k, seed onto generation_config.json's defaults; no seed: a fresh one
 * from the kernel, so a class does not all get the same "random" story */
static int parse_sampling(server *srv, const cJSON *b, parsed_req *out, req_error *e)
{
    tl_sampling p = srv->defaults;
    double v;
    int got;
    if ((got = get_number(b, "temperature", 0, 2, 0, &v, e)) < 0) return -1;
    if (got) {
        p.greedy = v == 0;
        if (v > 0) p.temperature = (float)v;
    }
    if ((got = get_number(b, "top_p", 1e-9, 1, 0, &v, e)) < 0) return -1;
    if (got) p.top_p = (float)v;
    if ((got = get_number(b, "top_k", 0, 1 << 20, 1, &v, e)) < 0) return -1;
    if (got) p.top_k = (int)v;
    if ((got = get_number(b, "seed", 0, 9007199254740991.0, 1, &v, e)) < 0) return -1;
    out->seed_given = got;
    if (got) out->seed = (uint64_t)v;
    else if (tl_random_bytes(&out->seed, sizeof out->seed))
        return req_error_set(e, 500, NULL, NULL, "getrandom: no seed"), -1;
    out->seed &= (1ull << 53) - 1;   /* a JSON number that reads back exactly */
    p.seed = out->seed;
    out->sampling = p;
    double max_new = 0;
    if ((got = get_number(b, "max_completion_tokens", 1, 1 << 20, 1, &max_new, e)) < 0) return -1;
    if (!got && get_number(b, "max_tokens", 1, 1 << 20, 1, &max_new, e) < 0) return -1;
    out->max_new = (int)max_new;
    return 0;
}

/* logprobs: the chosen token's and top_logprobs alternatives' (the legacy /v1/completions form,
 * an integer, is not served: chat's form names each token's bytes) */
static int parse_logprobs(const cJSON *b, int raw, parsed_req *out, req_error *e)
{
    double top = 0;
    int got_top = get_number(b, "top_logprobs", 0, 20, 1, &top, e);
    if (got_top < 0) return -1;
    out->logprobs = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "logprobs")) ? (int)top : -1;
    if (got_top && out->logprobs < 0)
        return req_error_set(e, 400, "top_logprobs", NULL, "top_logprobs: needs \"logprobs\": true"), -1;
    if (raw && cJSON_GetObjectItemCaseSensitive(b, "logprobs") && !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(b, "logprobs")))
        return req_error_set(e, 400, "logprobs", NULL, "logprobs: not served on /v1/completions (use "
                             "/v1/chat/completions)"), -1;
    return 0;
}

int req_parse(server *srv, const char *body, size_t len, int raw, parsed_req *out, req_error *e)
{
    memset(out, 0, sizeof *out);
    out->raw = raw;
    cJSON *b = parse_strict(body, len, e);
    if (!b) return -1;
    int rc = check_fields(b, raw, e) || parse_logprobs(b, raw, out, e) ||
             (raw ? parse_prompt(srv, b, out, e) : parse_messages(srv, b, out, e)) ||
             parse_sampling(srv, b, out, e) || parse_stop(b, out, e) ? -1 : 0;
    out->stream = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "stream"));
    out->include_usage = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(b, "stream_options"),
                                                                      "include_usage"));
    cJSON_Delete(b);
    if (rc) req_free(out);
    return rc;
}

/* The prompt onto the session: chat messages through the template, or /v1/completions' text as
 * it is with BOS as the tokenizer's post-processor adds it (what vLLM does) */
static int apply_prompt(server *srv, tl_session *s, const parsed_req *r, tl_error *err)
{
    if (!r->raw) {
        tl_session_set_parse_special_in_content(s, srv->parse_special);
        if (tl_session_set_messages(s, r->messages, err)) return -1;
        tl_session_set_add_generation_prompt(s, 1);
        return 0;
    }
    const tl_tokenizer *tok = tl_session_tokenizer(s);
    if (!tok) return tl_error_set(err, "prompt: this model has no tokenizer");
    int *ids = NULL, n = 0;
    int rc = tl_tokenizer_encode(tok, r->prompt, r->prompt_len, TL_TOK_ADD_BOS, &ids, &n, err);
    if (!rc) rc = tl_session_set_prompt_ids(s, ids, n, err);
    free(ids);
    return rc;
}

/* The request onto a slot's session, rendered and tokenized: a prompt the context cannot hold is
 * the client's 400 here, before any stream begins. */
int req_apply(server *srv, tl_session *s, const parsed_req *r, req_error *e)
{
    tl_error err = {{0}};
    const char *param = r->raw ? "prompt" : "messages";
    if (apply_prompt(srv, s, r, &err)) return req_error_set(e, 400, param, NULL, "%s", err.msg), -1;
    tl_session_set_top_n(s, r->logprobs > 0 ? r->logprobs : 1);
    tl_session_set_report(s, r->logprobs >= 0 ? TL_REPORT_MODEL : 0);   /* logprobs need log_z */
    tl_session_set_stream_mode(s, TL_STREAM_SERVER);   /* hold back only what a stop string may take */
    tl_session_set_sampling(s, r->sampling);
    /* no max_tokens: the rest of the context (OpenAI, vLLM, llama.cpp's server), unless
     * --default-max-tokens says otherwise; the session cuts to what the context holds */
    int budget = r->max_new ? r->max_new : srv->default_max_tokens ? srv->default_max_tokens : srv->capacity;
    tl_session_set_max_new_tokens(s, budget);
    if (tl_session_set_stop_strings(s, (const char *const *)r->stop, r->n_stop, &err))
        return req_error_set(e, 400, "stop", NULL, "stop: %s", err.msg), -1;
    if (tl_session_prepare(s, &err)) {
        int ctx = strstr(err.msg, "do not fit the context") != NULL;
        return req_error_set(e, 400, param, ctx ? "context_length_exceeded" : NULL, "%s", err.msg), -1;
    }
    return 0;
}
