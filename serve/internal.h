/* What serve/'s files share: the server, its slots, a request's parsed form. One idea a file:
 * door.c the listening socket, http.c the routes, reply.c the answers' primitives (JSON, OpenAI's
 * errors, is the client still there), log.c the access log, watch.c the connections' deadlines,
 * slots.c the slots, the queue and each client's count, protocol.c a request body to a checked
 * request, respond.c a completion's answer (a JSON object, or server-sent events), server.c
 * start, drain and stop. Calls run one way: server -> door, http -> respond -> reply/log. */
#ifndef TOKENLOOP_SERVE_INTERNAL_H
#define TOKENLOOP_SERVE_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>

#include "serve.h"
#include "tokenloop/session.h"

enum { MAX_BODY = 8 << 20, MAX_SLOTS = SERVE_MAX_SLOTS, MAX_CLIENTS = 256 };

/* A slot: one session (its own KV cache, sampler, streamer) serving one request at a time. */
typedef struct slot {
    tl_session *s;
    int busy;
} slot;

/* Requests in flight from one client address (--per-client). */
typedef struct client_count {
    char addr[64];
    int n;
} client_count;

typedef struct conn_watch conn_watch;   /* watch.c */
typedef struct door door;               /* door.c */

typedef struct server {
    slot slots[MAX_SLOTS];
    int n_slots, max_queue, waiting;
    int per_client;             /* 0: no cap */
    client_count clients[MAX_CLIENTS];
    struct MHD_Daemon *daemon;
    unsigned port;
    char url_host[INET6_ADDRSTRLEN + 2];   /* "127.0.0.1", "[::1]" */
    pthread_mutex_t mu;         /* slots[].busy, waiting, clients, next_id, in_flight */
    pthread_cond_t freed;
    tl_sampling defaults;       /* generation_config.json's, the start of every request */
    char model_id[256];
    char *api_key;
    long long next_id;
    int in_flight;              /* requests between their headers and their end (the drain waits) */
    _Atomic int draining;       /* set once by serve_drain: new requests 503, streams end */
    int parse_special;          /* special-token strings in content are live (the injection demo) */
    int default_max_tokens;     /* 0: the rest of the context */
    int capacity;               /* each slot's KV positions */
    int max_piece;              /* the longest token's bytes: bytes per token at most */
    size_t body_limit;          /* past this a body cannot fit the context: read, dropped, 400 */
    double idle_s, body_s;      /* deadlines (watch.c) */
    FILE *log;                  /* the access log; NULL: stderr */
    int no_log;
    pthread_mutex_t log_mu;
    conn_watch *watch;
    door *door;
    int door_started;
    tl_batcher *batcher;        /* --slots > 1: the slots' decodes run as one batch; NULL: each alone */
} server;

/* A request as protocol.c checked it, before any slot is taken. */
typedef struct parsed_req {
    int raw;                    /* /v1/completions */
    char *messages;             /* chat: the messages as JSON, parts joined (malloc'd) */
    char *prompt;               /* raw: the text (malloc'd) */
    size_t prompt_len;
    tl_sampling sampling;
    uint64_t seed;
    int seed_given;
    int max_new;                /* 0: none asked */
    char *stop[4];
    int n_stop;
    int stream, include_usage;
    int logprobs;               /* -1: none; else the alternatives per token */
} parsed_req;

/* An error to answer: status, OpenAI's type, param (may be NULL), code (may be NULL), message. */
typedef struct req_error {
    unsigned status;
    const char *type, *code;
    char param[64];
    char msg[1100];
} req_error;

/* protocol.c */
int req_parse(server *srv, const char *body, size_t len, int raw, parsed_req *out, req_error *e);
int req_apply(server *srv, tl_session *s, const parsed_req *r, req_error *e);
void req_free(parsed_req *r);
void req_error_set(req_error *e, unsigned status, const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* slots.c */
typedef int (*gone_fn)(void *ctx);   /* 1 when the client has gone away */
enum { SLOT_OK = 0, SLOT_FULL, SLOT_GONE, SLOT_DRAINING };
int slot_acquire(server *srv, gone_fn gone, void *ctx, slot **out);
void slot_release(server *srv, slot *sl);
int client_enter(server *srv, const char *addr);   /* 0, or -1 past --per-client */
void client_leave(server *srv, const char *addr);

/* reply.c: answers on a connection; the status queued last on this thread, for the access log */
enum MHD_Result reply_queue(struct MHD_Connection *c, unsigned code, struct MHD_Response *r);
enum MHD_Result reply_json(struct MHD_Connection *c, unsigned code, const char *json);
enum MHD_Result reply_error(struct MHD_Connection *c, const req_error *e);
enum MHD_Result reply_error_allow(struct MHD_Connection *c, const req_error *e, const char *allow);
char *reply_error_json(const req_error *e);   /* OpenAI's error object (malloc'd; NULL: no memory) */
int reply_client_gone(struct MHD_Connection *c);
unsigned reply_status(void);
void reply_set_status(unsigned s);

/* http.c: the routes (libmicrohttpd's callbacks) */
enum MHD_Result http_handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                            const char *version, const char *data, size_t *data_size, void **con_cls);
void http_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe);

/* respond.c: the answer for a request that holds sl; *done tells the caller it may log */
typedef struct answer_stats {
    int prompt_tokens, completion_tokens;
    double ttft_ms;
    double batch;               /* decodes per pass over this answer's decode steps (mean); 0: none */
} answer_stats;
enum MHD_Result respond_complete(struct MHD_Connection *c, server *srv, slot *sl, const parsed_req *r,
                                 answer_stats *st);

/* watch.c: each connection's deadline for its headers (or the next request) and its body */
int watch_start(server *srv);
void watch_stop(server *srv);
void watch_notify(void *cls, struct MHD_Connection *c, void **socket_ctx, enum MHD_ConnectionNotificationCode tc);
void watch_phase(struct MHD_Connection *c, int phase);   /* 0 waiting for headers, 1 body, 2 answering */

/* door.c: the listening socket, and each new connection's first head read ahead */
int door_open(server *srv, const struct sockaddr_storage *addr, unsigned *port, int *err_no);
int door_start(server *srv);
void door_close(server *srv, int started);

/* log.c: one access-log line */
void serve_log_line(server *srv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
