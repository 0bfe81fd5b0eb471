/* The HTTP side: routes, the key, the body as it arrives (bounded), one access-log line per
 * request, and every answer in OpenAI's shape. A completion's body is checked in full (protocol.c)
 * before it may wait for a slot, so a refused request never holds one. */
#define _GNU_SOURCE
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "class_page.h"
#include "internal.h"
#include "tokenloop/platform.h"


/* Bodies above this are handed back to the system after their request (malloc_trim): an 8 MB
 * body parsed into 240,000 cJSON nodes otherwise stays in the heap. */
enum { TRIM_ABOVE = 1 << 20, DISCARD_MAX = 64 << 20 };

/* One request: its body as it arrives, its client, what the access log says about it. */
typedef struct request {
    char *body;
    size_t len, received;       /* kept, and arrived (a body past the limits is dropped) */
    int too_big, past_context;
    server *srv;
    char addr[64];
    int counted;                /* client_enter took a place for it */
    struct timespec t0;
    char method[8];
    char path[96];
    unsigned status;
    answer_stats st;
} request;

static int gone_cb(void *ctx) { return reply_client_gone(ctx); }

/* A URL as text a JSON string can carry: bytes outside printable ASCII %-escaped, so an error
 * that names it is valid UTF-8 whatever the client sent. */
static void url_text(const char *url, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t w = 0;
    for (const unsigned char *p = (const unsigned char *)url; *p && w + 4 < cap; p++) {
        if (*p >= 0x20 && *p < 0x7f) out[w++] = (char)*p;
        else {
            out[w++] = '%';
            out[w++] = hex[*p >> 4];
            out[w++] = hex[*p & 15];
        }
    }
    out[w] = 0;
}

static enum MHD_Result wrong_method(struct MHD_Connection *c, const char *method, const char *url, const char *allow)
{
    char u[200];
    url_text(url, u, sizeof u);
    req_error e;
    req_error_set(&e, 405, NULL, "method_not_allowed", "%.16s %s: use %s", method, u, allow);
    return reply_error_allow(c, &e, allow);
}

static enum MHD_Result page(struct MHD_Connection *c)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(sizeof class_page - 1, (void *)class_page, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "text/html; charset=utf-8");
    return reply_queue(c, 200, r);
}

/* the slots and the queue as they are now: a class (and the load test) sees them fill and free */
static enum MHD_Result health(struct MHD_Connection *c, server *srv)
{
    pthread_mutex_lock(&srv->mu);
    int busy = 0;
    for (int i = 0; i < srv->n_slots; i++) busy += srv->slots[i].busy;
    char h[200];
    snprintf(h, sizeof h, "{\"status\":\"ok\",\"slots\":%d,\"busy\":%d,\"waiting\":%d,\"queue\":%d,\"batch\":%d}",
             srv->n_slots, busy, srv->waiting, srv->max_queue, tl_batcher_last_batch(srv->batcher));
    pthread_mutex_unlock(&srv->mu);
    return reply_json(c, 200, h);
}

static cJSON *model_object(server *srv)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "id", srv->model_id);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", 0);
    cJSON_AddStringToObject(m, "owned_by", "tokenloop");
    return m;
}

/* GET /v1/models, and /v1/models/{id} (the openai client's models.retrieve) */
static enum MHD_Result models(struct MHD_Connection *c, server *srv, const char *id)
{
    cJSON *o;
    if (id) {
        if (strcmp(id, srv->model_id)) {
            char u[200];
            url_text(id, u, sizeof u);
            req_error e;
            req_error_set(&e, 404, "model", "model_not_found", "the model '%s' does not exist here (this server has "
                          "'%s')", u, srv->model_id);
            return reply_error(c, &e);
        }
        o = model_object(srv);
    } else {
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "object", "list");
        cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "data"), model_object(srv));
    }
    char *j = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    enum MHD_Result ok = reply_json(c, 200, j ? j : "{}");
    free(j);
    return ok;
}

/* POST /v1/chat/completions (raw 0) and /v1/completions (raw 1): checked, then a slot. */
static enum MHD_Result complete(struct MHD_Connection *c, request *q, int raw)
{
    server *srv = q->srv;
    parsed_req r;
    req_error e;
    if (q->past_context) {
        req_error_set(&e, 400, raw ? "prompt" : "messages", "context_length_exceeded", "the body is %zu bytes; a "
                      "request this context can hold is at most %zu (%d positions, no token over %d bytes, a byte at "
                      "most 6 in JSON)", q->received, srv->body_limit, srv->capacity, srv->max_piece);
        return reply_error(c, &e);
    }
    int bad = req_parse(srv, q->body ? q->body : "", q->len, raw, &r, &e);
    if (q->len > TRIM_ABOVE) {   /* the body and its parse are gone: give their pages back */
        free(q->body);
        q->body = NULL;
        tl_malloc_trim();
    }
    if (bad) return reply_error(c, &e);
    slot *sl;
    int got = slot_acquire(srv, gone_cb, c, &sl);
    enum MHD_Result ok;
    if (got == SLOT_FULL) {
        req_error_set(&e, 429, NULL, "rate_limit_exceeded", "all %d slots are busy and %d requests wait: try again "
                      "shortly", srv->n_slots, srv->max_queue);
        ok = reply_error(c, &e);
    } else if (got == SLOT_GONE) {
        reply_set_status(499);   /* the access log's word for a client that left (nginx's) */
        ok = MHD_NO;
    } else if (got == SLOT_DRAINING) {
        req_error_set(&e, 503, NULL, "server_shutting_down", "the server is shutting down");
        ok = reply_error(c, &e);
    } else {
        ok = respond_complete(c, srv, sl, &r, &q->st);
    }
    req_free(&r);
    return ok;
}

/* The Authorization header against the key: "Bearer" in any case, as HTTP's schemes are. */
static int authorized(struct MHD_Connection *c, const server *srv)
{
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!auth || strncasecmp(auth, "Bearer ", 7)) return 0;
    auth += 7;
    while (*auth == ' ') auth++;
    return !strcmp(auth, srv->api_key);
}

/* The request's answer once its body has arrived. */
static enum MHD_Result route(struct MHD_Connection *c, request *q, const char *url, const char *method)
{
    server *srv = q->srv;
    req_error e;
    int is_page = !strcmp(url, "/") || !strcmp(url, "/index.html");
    if (srv->draining) {
        req_error_set(&e, 503, NULL, "server_shutting_down", "the server is shutting down");
        return reply_error(c, &e);
    }
    if (srv->api_key && !is_page && strcmp(url, "/health") && !authorized(c, srv)) {   /* the page and /health carry no secret */
        req_error_set(&e, 401, NULL, "invalid_api_key", "Incorrect or missing API key (send \"Authorization: Bearer KEY\")");
        return reply_error(c, &e);
    }
    if (q->too_big) {
        req_error_set(&e, 413, NULL, "request_too_large", "the body is larger than %d bytes", MAX_BODY);
        return reply_error(c, &e);
    }
    int get = !strcmp(method, "GET") || !strcmp(method, "HEAD"), post = !strcmp(method, "POST");
    if (is_page) return get ? page(c) : wrong_method(c, method, url, "GET");
    if (!strcmp(url, "/health")) return get ? health(c, srv) : wrong_method(c, method, url, "GET");
    if (!strcmp(url, "/v1/models")) return get ? models(c, srv, NULL) : wrong_method(c, method, url, "GET");
    if (!strncmp(url, "/v1/models/", 11)) return get ? models(c, srv, url + 11) : wrong_method(c, method, url, "GET");
    int raw = !strcmp(url, "/v1/completions");
    if (raw || !strcmp(url, "/v1/chat/completions")) {
        if (!post) return wrong_method(c, method, url, "POST");
        return complete(c, q, raw);
    }
    char u[200];
    url_text(url, u, sizeof u);
    req_error_set(&e, 404, NULL, "not_found", "%.16s %s: no such endpoint (/v1/chat/completions, /v1/completions, "
                  "/v1/models, /health)", method, u);
    return reply_error(c, &e);
}

static void client_address(struct MHD_Connection *c, char *out, size_t cap)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    snprintf(out, cap, "?");
    if (!ci || !ci->client_addr) return;
    socklen_t len = ci->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    getnameinfo(ci->client_addr, len, out, (socklen_t)cap, NULL, 0, NI_NUMERICHOST);
}

/* The headers have arrived: the request's record, the per-client cap, and a Content-Length too
 * big refused before any of its body is read. Non-zero: answered already. */
static int begin(struct MHD_Connection *c, server *srv, const char *url, const char *method, request *q,
                 enum MHD_Result *ok)
{
    q->srv = srv;
    pthread_mutex_lock(&srv->mu);
    srv->in_flight++;
    pthread_mutex_unlock(&srv->mu);
    clock_gettime(CLOCK_MONOTONIC, &q->t0);
    client_address(c, q->addr, sizeof q->addr);
    snprintf(q->method, sizeof q->method, "%s", method);
    url_text(url, q->path, sizeof q->path);
    watch_phase(c, 1);
    req_error e;
    /* A body over the limit is refused at once when the client waits for "100 Continue" or
     * announces more than DISCARD_MAX (then the connection closes); a smaller one is read and
     * dropped first, so a client that sends its body before reading gets the 413, not EPIPE. */
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    const char *expect = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Expect");
    unsigned long long announced = cl ? strtoull(cl, NULL, 10) : 0;
    if (announced > MAX_BODY) q->too_big = 1;
    if (announced > DISCARD_MAX || (announced > MAX_BODY && expect && !strcasecmp(expect, "100-continue"))) {
        req_error_set(&e, 413, NULL, "request_too_large", "the body is larger than %d bytes (Content-Length %.30s)",
                      MAX_BODY, cl);
        *ok = reply_error(c, &e);
        return 1;
    }
    if (!strncmp(url, "/v1/", 4) && strncmp(url, "/v1/models", 10)) {
        if (client_enter(srv, q->addr)) {
            req_error_set(&e, 429, NULL, "rate_limit_exceeded", "this client already has %d requests in flight "
                          "(the server's --per-client)", srv->per_client);
            *ok = reply_error(c, &e);
            return 1;
        }
        q->counted = 1;
    }
    return 0;
}

enum MHD_Result http_handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                            const char *version, const char *data, size_t *data_size, void **con_cls)
{
    (void)version;
    request *q = *con_cls;
    if (!q) {   /* the headers have arrived: the body, if any, comes in later calls */
        q = calloc(1, sizeof *q);
        if (!q) return MHD_NO;
        *con_cls = q;
        reply_set_status(0);
        enum MHD_Result ok = MHD_YES;
        if (begin(c, cls, url, method, q, &ok)) q->status = reply_status();
        return ok;
    }
    if (q->status) {   /* answered at the headers: the rest of the body is not kept */
        *data_size = 0;
        return MHD_YES;
    }
    if (*data_size) {
        q->received += *data_size;
        if (q->received > MAX_BODY) q->too_big = 1;
        else if (q->received > q->srv->body_limit) q->past_context = 1;
        if (q->too_big || q->past_context) {
            free(q->body);   /* not kept: no memory held for a body that cannot be served */
            q->body = NULL;
            q->len = 0;
        } else {
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
    watch_phase(c, 2);
    reply_set_status(0);
    enum MHD_Result ok = route(c, q, url, method);
    q->status = reply_status() ? reply_status() : 499;
    return ok;
}

/* time, client, request, status, prompt/completion tokens, TTFT, duration */
static void log_request(const request *q)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - q->t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - q->t0.tv_nsec) / 1e6;
    char ttft[32] = "-";
    if (q->st.completion_tokens || q->st.prompt_tokens) snprintf(ttft, sizeof ttft, "%.1f", q->st.ttft_ms);
    char batch[32] = "-";
    if (q->st.batch > 0) snprintf(batch, sizeof batch, "%.1f", q->st.batch);
    serve_log_line(q->srv, "%s %s %s %u prompt_tokens=%d completion_tokens=%d ttft_ms=%s batch=%s ms=%.1f", q->addr,
                   q->method, q->path, q->status ? q->status : 499, q->st.prompt_tokens, q->st.completion_tokens, ttft,
                   batch, ms);
}

void http_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    request *q = *con_cls;
    if (!q) return;
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && q->status == 200) q->status = 499;   /* cut off mid-answer */
    log_request(q);
    if (q->counted) client_leave(q->srv, q->addr);
    pthread_mutex_lock(&q->srv->mu);
    q->srv->in_flight--;
    pthread_mutex_unlock(&q->srv->mu);
    free(q->body);
    free(q);
    *con_cls = NULL;
    watch_phase(c, 0);
}
