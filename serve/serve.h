/* `tokenloop serve` as a component: the command runs one until a signal, and the lesson player
 * starts one inside the program for lesson 4's step (serve/lesson_serve.c). Built only with
 * libmicrohttpd (TL_HAVE_SERVE). */
#ifndef TOKENLOOP_SERVE_H
#define TOKENLOOP_SERVE_H

#include <stdio.h>

#include "tokenloop/error.h"
#include "tokenloop/engine.h"
#include "tokenloop/model.h"

enum { SERVE_MAX_SLOTS = 64 };

typedef struct server server;

typedef struct serve_opts {
    const char *model_dir;   /* opened unless model is given; its last component names the model */
    tl_model *model;         /* weights to share (not owned), or NULL */
    const char *host;        /* an address or a name (IPv4 or IPv6); NULL: 127.0.0.1 */
    int port;                /* 0: a free one (serve_port says which) */
    int slots, queue, threads;
    int per_client;          /* requests in flight from one address; 0: no cap */
    const char *api_key;     /* NULL: none asked */
    tl_precision precision;  /* each slot's engine (tl_session_opts.precision) */
    int parse_special;       /* 1: "<|eot_id|>" typed in content is the special token (the injection
                                demo); 0: content is plain text */
    int default_max_tokens;  /* budget without max_tokens; 0: the rest of the context */
    double idle_s, body_s;   /* deadlines: headers (or the next request), body; 0: 15 s, 60 s */
    FILE *log;               /* the access log, one line a request; NULL: stderr */
    int no_log;              /* 1: none (the lesson's server inside the TUI) */
    int no_batch;            /* 1: each slot its own passes; 0: the slots' decodes as one batch */
} serve_opts;

/* Listening when it returns 0; each connection is served on its own thread. */
int serve_start(server **out, const serve_opts *o, tl_error *err);
unsigned serve_port(const server *srv);
int serve_slots(const server *srv);
const char *serve_model_id(const server *srv);
/* The address it listens on, as a URL's host part ("127.0.0.1", "[::1]"). */
const char *serve_host(const server *srv);
/* Shutdown, first part: new requests get 503, queued ones 503, running ones end at their next
 * token (a stream with a final chunk that says so, then [DONE]). Returns once every request has
 * been answered, or after deadline_s. */
void serve_drain(server *srv, double deadline_s);
/* Stops listening, waits for the connections' threads and frees the slots. */
void serve_stop(server *srv);

#endif
