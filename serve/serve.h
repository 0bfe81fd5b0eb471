/* `tokenloop serve` as a component: the command runs one until a signal, and the lesson player
 * starts one inside the program for lesson 4's step (serve/lesson_serve.c). Built only with
 * libmicrohttpd (TL_HAVE_SERVE). */
#ifndef TOKENLOOP_SERVE_H
#define TOKENLOOP_SERVE_H

#include "tokenloop/error.h"
#include "tokenloop/engine.h"
#include "tokenloop/model.h"

enum { SERVE_MAX_SLOTS = 64 };

typedef struct server server;

typedef struct serve_opts {
    const char *model_dir;   /* opened unless model is given; its last component names the model */
    tl_model *model;         /* weights to share (not owned), or NULL */
    const char *host;        /* IPv4; NULL: 127.0.0.1 */
    int port;                /* 0: a free one (serve_port says which) */
    int slots, queue, threads;
    const char *api_key;     /* NULL: none asked */
    tl_precision precision;  /* each slot's engine (tl_session_opts.precision) */
} serve_opts;

/* Listening when it returns 0; each connection is served on its own thread. */
int serve_start(server **out, const serve_opts *o, tl_error *err);
unsigned serve_port(const server *srv);
int serve_slots(const server *srv);
const char *serve_model_id(const server *srv);
/* Stops listening, waits for the connections' threads and frees the slots. */
void serve_stop(server *srv);

#endif
