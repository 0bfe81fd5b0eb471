/* tokenloop serve: start, drain and stop. The OpenAI chat-completions protocol that llama.cpp's
 * server, vLLM, SGLang and Ollama also speak, on the iterator streamer (respond.c). Each slot's
 * session serves one request at a time; requests beyond the slots wait in a bounded queue, and
 * past it get 429 (slots.c). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "tokenloop/tokenizer.h"

/* Defaults for the deadlines (watch.c): a class's browsers reconnect as they need. */
static const double IDLE_S = 15, BODY_S = 60;
/* A body's bytes beyond its prompt's: the other fields, the JSON around the messages. */
enum { BODY_SLACK = 64 << 10 };

static void base_name(const char *dir, char *name, size_t cap)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    const char *p = dir + n;
    while (p > dir && p[-1] != '/') p--;
    snprintf(name, cap, "%.*s", (int)(dir + n - p), p);
}

/* The longest token's bytes: no prompt of b bytes is fewer than b / max_piece tokens. */
static int longest_piece(const tl_tokenizer *tok)
{
    int best = 1;
    for (int id = 0; tok && id < tl_tokenizer_vocab_size(tok); id++) {
        size_t n = 0;
        if (tl_tokenizer_piece(tok, id, &n) && (int)n > best) best = (int)n;
    }
    return best;
}

/* host (an address or a name) to the socket address to listen on, and its URL form */
static int resolve(const char *host, int port, struct sockaddr_storage *addr, char *url_host, size_t cap,
                   tl_error *err)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    if (!host[0]) return tl_error_set(err, "--host: empty (expected an address such as 127.0.0.1 or ::1, or a name)");
    /* the resolver's own words differ by network (no such name, no DNS reachable): not quoted.
     * A name under .invalid never resolves (RFC 6761): refused without asking a resolver that a
     * machine without network may wait seconds for. */
    size_t n = strlen(host);
    int invalid = n >= 8 && !strcasecmp(host + n - 8, ".invalid");
    if (invalid || getaddrinfo(host, NULL, &hints, &res) || !res)
        return tl_error_set(err, "--host %s: not an address, nor a name this machine resolves (expected an address "
                            "such as 127.0.0.1 or ::1, or a name)", host);
    memcpy(addr, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    char num[INET6_ADDRSTRLEN];
    if (addr->ss_family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)addr;
        a->sin6_port = htons((uint16_t)port);
        inet_ntop(AF_INET6, &a->sin6_addr, num, sizeof num);
        snprintf(url_host, cap, "[%s]", num);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)addr;
        a->sin_port = htons((uint16_t)port);
        inet_ntop(AF_INET, &a->sin_addr, num, sizeof num);
        snprintf(url_host, cap, "%s", num);
    }
    return 0;
}

/* The slots' sessions: the first opens the model (unless one is given), the others read the
 * same weights: one copy, a KV cache each. */
static int open_slots(server *srv, const serve_opts *o, tl_error *err)
{
    /* no floor reads: the slots share the memory bus, and the answers carry no floor */
    tl_session_opts so = {.model_dir = o->model_dir, .threads = o->threads, .precision = o->precision,
                          .no_floor_reads = 1};
    tl_model *m = o->model;
    if (!m) {
        if (tl_session_open(&srv->slots[0].s, &so, err)) return -1;
        srv->n_slots = 1;
        m = (tl_model *)tl_session_model(srv->slots[0].s);
    }
    for (; srv->n_slots < o->slots; srv->n_slots++)
        if (tl_session_open_model(&srv->slots[srv->n_slots].s, m, 0, &so, err)) return -1;
    srv->defaults = tl_session_sampling(srv->slots[0].s);
    srv->capacity = tl_engine_capacity(tl_session_engine(srv->slots[0].s));
    srv->max_piece = longest_piece(tl_session_tokenizer(srv->slots[0].s));
    /* the largest body whose prompt could fit: every token at most max_piece bytes, every byte
     * at most 6 characters of JSON (\u00XX), and room for the other fields */
    size_t fits = (size_t)srv->capacity * (size_t)srv->max_piece * 6 + BODY_SLACK;
    srv->body_limit = fits < MAX_BODY ? fits : MAX_BODY;
    return 0;
}

/* The door listens (door.c); libmicrohttpd serves what it hands over, a thread a connection. */
static int listen_on(server *srv, const serve_opts *o, struct sockaddr_storage addr, tl_error *err)
{
    int e = 0;
    if (door_open(srv, &addr, &srv->port, &e))
        return tl_error_set(err, "serve: cannot listen on %s:%d (%s)", srv->url_host, o->port, strerror(e));
    /* no MHD_USE_ERROR_LOG: its one routine message is a client going away, which cancels */
    srv->daemon = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                                   MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC, 0, NULL, NULL, http_handle, srv,
                                   MHD_OPTION_NOTIFY_COMPLETED, http_completed, srv,
                                   MHD_OPTION_NOTIFY_CONNECTION, watch_notify, srv,
                                   MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)600, MHD_OPTION_END);
    if (!srv->daemon) return tl_error_set(err, "serve: cannot start libmicrohttpd (%s)", strerror(errno));
    if (door_start(srv)) return tl_error_set(err, "serve: cannot start the listening thread");
    srv->door_started = 1;
    return 0;
}

int serve_start(server **out, const serve_opts *o, tl_error *err)
{
    *out = NULL;
    const char *host = o->host ? o->host : "127.0.0.1";
    if (o->slots < 1 || o->slots > MAX_SLOTS) return tl_error_set(err, "--slots %d: expected 1 to %d", o->slots, MAX_SLOTS);
    server *srv = calloc(1, sizeof *srv);
    if (!srv) return tl_error_set(err, "serve: out of memory");
    pthread_mutex_init(&srv->mu, NULL);   /* first, so serve_stop can undo any step below */
    pthread_mutex_init(&srv->log_mu, NULL);
    pthread_cond_init(&srv->freed, NULL);
    srv->max_queue = o->queue;
    srv->per_client = o->per_client;
    srv->parse_special = o->parse_special;
    srv->default_max_tokens = o->default_max_tokens;
    srv->idle_s = o->idle_s > 0 ? o->idle_s : IDLE_S;
    srv->body_s = o->body_s > 0 ? o->body_s : BODY_S;
    srv->log = o->log;
    srv->no_log = o->no_log;
    base_name(o->model_dir ? o->model_dir : "model", srv->model_id, sizeof srv->model_id);
    int rc = (o->api_key && !(srv->api_key = strdup(o->api_key))) ? tl_error_set(err, "serve: out of memory") : 0;
    struct sockaddr_storage addr;   /* a bad --host is refused before the model loads */
    if (!rc) rc = resolve(host, o->port, &addr, srv->url_host, sizeof srv->url_host, err);
    if (!rc) rc = open_slots(srv, o, err);
    if (!rc && srv->n_slots > 1 && !o->no_batch) rc = tl_batcher_create(&srv->batcher, err);   /* one batch */
    if (!rc && watch_start(srv)) rc = tl_error_set(err, "serve: cannot start the watchdog thread");
    if (!rc) rc = listen_on(srv, o, addr, err);
    if (rc) {
        serve_stop(srv);
        return -1;
    }
    *out = srv;
    return 0;
}

unsigned serve_port(const server *srv) { return srv->port; }

int serve_slots(const server *srv) { return srv->n_slots; }

const char *serve_model_id(const server *srv) { return srv->model_id; }

const char *serve_host(const server *srv) { return srv->url_host; }

/* requests still being answered, and slots a finished stream has not handed back yet */
static int busy(server *srv)
{
    pthread_mutex_lock(&srv->mu);
    int n = srv->in_flight;
    for (int i = 0; i < srv->n_slots; i++) n += srv->slots[i].busy;
    pthread_mutex_unlock(&srv->mu);
    return n;
}

void serve_drain(server *srv, double deadline_s)
{
    pthread_mutex_lock(&srv->mu);
    srv->draining = 1;
    pthread_cond_broadcast(&srv->freed);   /* the queue answers 503 now */
    pthread_mutex_unlock(&srv->mu);
    for (double waited = 0; waited < deadline_s && busy(srv); waited += 0.02) usleep(20000);
}

void serve_stop(server *srv)
{
    if (!srv) return;
    door_close(srv, srv->door_started);   /* first: nothing is handed to the daemon after this */
    if (srv->daemon) {
        pthread_mutex_lock(&srv->mu);
        srv->draining = 1;   /* a generation still running ends at its next token */
        pthread_cond_broadcast(&srv->freed);
        pthread_mutex_unlock(&srv->mu);
        MHD_stop_daemon(srv->daemon);   /* waits for every connection's thread */
    }
    watch_stop(srv);
    tl_batcher_free(srv->batcher);   /* after the daemon: every request's iterator has finished */
    for (int i = srv->n_slots - 1; i >= 0; i--) tl_session_free(srv->slots[i].s);   /* slot 0 may own the model */
    pthread_mutex_destroy(&srv->mu);
    pthread_mutex_destroy(&srv->log_mu);
    pthread_cond_destroy(&srv->freed);
    free(srv->api_key);
    free(srv);
}
