/* Lesson 4's seam made real: the session's request sent over HTTP to a `tokenloop serve` started
 * inside this program on the session's own weights (a loopback port the kernel picks), read as a
 * client reads it: server-sent events, each chunk stamped with the client's clock. The lesson
 * then sets what the client received beside what the screen read from the iterator queue. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "lesson_serve.h"
#include "tokenloop/platform_net.h"
#include "serve.h"
#include "tokenloop/model.h"
#include "tokenloop/system.h"

/* The body of POST /v1/chat/completions for s's conversation and settings; NULL with err set
 * for what the protocol cannot say (the server would answer a different request). */
static char *request_body(tl_session *s, tl_error *err)
{
    const char *msgs = tl_session_messages(s);
    if (!msgs || tl_session_raw_prompt(s))
        return tl_error_set(err, "serve_request: needs a conversation (messages), not a raw prompt"), NULL;
    if (!tl_session_add_generation_prompt(s))
        return tl_error_set(err, "serve_request: chat completions always add the generation prompt; turn it on first"), NULL;
    cJSON *b = cJSON_CreateObject(), *m = cJSON_Parse(msgs);
    if (!b || !m) {
        cJSON_Delete(b);
        cJSON_Delete(m);
        return tl_error_set(err, "serve_request: the session's messages are not JSON"), NULL;
    }
    cJSON_AddItemToObject(b, "messages", m);
    cJSON_AddTrueToObject(b, "stream");
    cJSON_AddTrueToObject(cJSON_AddObjectToObject(b, "stream_options"), "include_usage");
    tl_sampling p = tl_session_sampling(s);
    cJSON_AddNumberToObject(b, "temperature", p.greedy ? 0.0 : (double)p.temperature);
    if (!p.greedy) {
        cJSON_AddNumberToObject(b, "top_p", (double)p.top_p);
        cJSON_AddNumberToObject(b, "top_k", p.top_k);
        cJSON_AddNumberToObject(b, "seed", (double)p.seed);
    }
    if (tl_session_max_new_tokens(s) > 0)
        cJSON_AddNumberToObject(b, "max_tokens", tl_session_max_new_tokens(s));
    int n_stop = 0;
    const char *const *stop = tl_session_stop_strings(s, &n_stop);
    if (n_stop) {
        cJSON *a = cJSON_AddArrayToObject(b, "stop");
        for (int i = 0; i < n_stop; i++)
            cJSON_AddItemToArray(a, cJSON_CreateString(stop[i]));
    }
    char *j = cJSON_PrintUnformatted(b);
    cJSON_Delete(b);
    if (!j)
        tl_error_set(err, "serve_request: out of memory");
    return j;
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* One event's JSON: a content chunk, the final chunk, the usage, or an error. */
static int take_event(const char *json, double t, tl_lesson_served *out, int *done, tl_error *err)
{
    if (!strcmp(json, "[DONE]")) {
        *done = 1;
        return 0;
    }
    cJSON *o = cJSON_Parse(json);
    if (!o)
        return tl_error_set(err, "serve_request: the server sent an event that is not JSON: %.80s", json);
    int rc = 0;
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "choices"), 0);
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c0, "delta"), "content");
    const cJSON *fin = cJSON_GetObjectItemCaseSensitive(c0, "finish_reason");
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, "tokenloop");
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(o, "usage");
    if (e) {
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
        rc = tl_error_set(err, "serve_request: the stream ended with an error: %s",
                          cJSON_IsString(msg) ? msg->valuestring : "(no message)");
    } else if (cJSON_IsString(content) && content->valuestring[0]) {
        char **nc = realloc(out->chunks, sizeof *nc * (size_t)(out->n_chunks + 1));
        if (!nc || !(nc[out->n_chunks] = strdup(content->valuestring))) {
            if (nc)
                out->chunks = nc;
            rc = tl_error_set(err, "serve_request: out of memory");
        } else {
            out->chunks = nc;
            if (!out->n_chunks++)
                out->client_ttft_ms = t;
            out->client_last_ms = t;
        }
    }
    if (cJSON_IsString(fin))
        snprintf(out->finish_reason, sizeof out->finish_reason, "%s", fin->valuestring);
    const cJSON *ttft = cJSON_GetObjectItemCaseSensitive(x, "ttft_ms");
    if (cJSON_IsNumber(ttft))
        out->server_ttft_ms = ttft->valuedouble;
    if (cJSON_IsObject(u)) {
        const cJSON *pt = cJSON_GetObjectItemCaseSensitive(u, "prompt_tokens");
        const cJSON *ct = cJSON_GetObjectItemCaseSensitive(u, "completion_tokens");
        out->prompt_tokens = cJSON_IsNumber(pt) ? pt->valueint : -1;
        out->completion_tokens = cJSON_IsNumber(ct) ? ct->valueint : -1;
    }
    cJSON_Delete(o);
    return rc;
}

/* A non-200 answer: its error.message, or the status line. */
static int http_error(const char *head, const char *body, tl_error *err)
{
    cJSON *o = cJSON_Parse(body);
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "error"), "message");
    int rc = tl_error_set(err, "serve_request: the server answered %.*s: %s", (int)strcspn(head, "\r\n"), head,
                          cJSON_IsString(msg) ? msg->valuestring : "(no error message)");
    cJSON_Delete(o);
    return rc;
}

/* HTTP/1.0, so the server marks the stream's end by closing (no chunked coding to undo); events
 * are taken as each one completes, so their clock is the client's receive time. */
static int exchange(unsigned port, const char *body, tl_lesson_served *out, tl_error *err)
{
    int fd = tl_socket_cloexec(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return tl_error_set(err, "serve_request: socket: %s", strerror(errno));
    struct timeval tv = {.tv_sec = 120};   /* a server that stalls cannot hang the lesson */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    char head[256];
    int hn = snprintf(head, sizeof head, "POST /v1/chat/completions HTTP/1.0\r\nHost: 127.0.0.1:%u\r\n"
                      "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n", port, strlen(body));
    double t0 = tl_now_ms();
    if (connect(fd, (struct sockaddr *)&a, sizeof a) || send_all(fd, head, (size_t)hn) || send_all(fd, body, strlen(body))) {
        int e = errno;
        close(fd);
        return tl_error_set(err, "serve_request: sending to 127.0.0.1:%u: %s", port, strerror(e));
    }
    char *buf = NULL;
    size_t len = 0, cap = 0, at = 0;   /* at: first byte not yet parsed */
    int done = 0, rc = 0, status = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            size_t nc = cap ? cap * 2 : 16384;
            char *nb = realloc(buf, nc);
            if (!nb) {
                rc = tl_error_set(err, "serve_request: out of memory");
                break;
            }
            buf = nb;
            cap = nc;
        }
        ssize_t r = recv(fd, buf + len, cap - len - 1, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = tl_error_set(err, "serve_request: reading from 127.0.0.1:%u: %s", port,
                              errno == EAGAIN ? "no answer for 120 s" : strerror(errno));
            break;
        }
        double t = tl_now_ms() - t0;
        len += (size_t)r;
        buf[len] = 0;
        if (!status) {
            char *end = strstr(buf, "\r\n\r\n");
            if (!end && r > 0)
                continue;
            if (!end || strncmp(buf, "HTTP/1.", 7)) {
                rc = tl_error_set(err, "serve_request: the server closed without an HTTP answer");
                break;
            }
            status = atoi(buf + 9);
            at = (size_t)(end + 4 - buf);
        }
        if (status != 200) {
            if (r > 0)
                continue;   /* the error's body, to its end */
            rc = http_error(buf, buf + at, err);
            break;
        }
        char *ev;
        while (!rc && !done && (ev = strstr(buf + at, "\n\n"))) {
            *ev = 0;
            if (strncmp(buf + at, "data: ", 6))
                rc = tl_error_set(err, "serve_request: an event without \"data: \": %.80s", buf + at);
            else
                rc = take_event(buf + at + 6, t, out, &done, err);
            at = (size_t)(ev + 2 - buf);
        }
        if (rc || done)
            break;
        if (r == 0) {
            rc = tl_error_set(err, "serve_request: the stream ended before data: [DONE]");
            break;
        }
    }
    free(buf);
    close(fd);
    return rc;
}

int lesson_serve_request(void *ctx, tl_session *s, tl_lesson_served *out, tl_error *err)
{
    (void)ctx;
    char *body = request_body(s, err);
    if (!body)
        return -1;
    tl_model *m = (tl_model *)tl_session_model(s);   /* read only: the server's slot shares the weights */
    tl_precision p = tl_engine_precision(tl_session_engine(s));   /* the numbers the class saw */
    serve_opts o = {.model = m, .model_dir = m->dir[0] ? m->dir : "model", .port = 0, .slots = 1, .queue = 0, .no_log = 1,
                    .parse_special = tl_session_parse_special_in_content(s),   /* content as the class set it */
                    .precision = p == TL_PRECISION_DEVICE ? TL_PRECISION_MIXED : p};   /* the slot is on the CPU */
    server *srv;
    if (serve_start(&srv, &o, err)) {
        free(body);
        return -1;
    }
    memset(out, 0, sizeof *out);
    out->server_ttft_ms = -1;
    out->port = serve_port(srv);
    int rc = exchange(out->port, body, out, err);
    serve_stop(srv);
    free(body);
    return rc;
}
