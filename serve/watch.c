/* Deadlines libmicrohttpd does not have: its connection timeout is for inactivity, so a client
 * that sends a header byte every few seconds, or announces a body it never sends, would hold a
 * connection (and its thread) for ever. A watchdog thread shuts down the socket of a connection
 * that has waited for its headers (or, kept alive, for its next request) longer than idle_s, or
 * for its body longer than body_s; libmicrohttpd then sees the end of the stream and closes it. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "tokenloop/system.h"

enum { WATCH_TICK_MS = 100 };

typedef struct conn_entry {
    struct conn_entry *next, *prev;
    struct conn_watch *w;
    int fd;
    int phase;                  /* 0 waiting for headers, 1 body, 2 answering (no deadline) */
    double since;               /* when the phase began (monotonic seconds) */
    int cut;
} conn_entry;

struct conn_watch {
    pthread_mutex_t mu;
    pthread_cond_t wake;
    conn_entry head;            /* a ring: head.next is the oldest */
    pthread_t thread;
    int stop;
};

void watch_notify(void *cls, struct MHD_Connection *c, void **socket_ctx, enum MHD_ConnectionNotificationCode tc)
{
    server *srv = cls;
    conn_watch *w = srv->watch;
    if (tc == MHD_CONNECTION_NOTIFY_STARTED) {
        conn_entry *e = calloc(1, sizeof *e);
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (e && !ci) {
            free(e);
            e = NULL;
        }
        *socket_ctx = e;
        if (!e) return;
        e->fd = ci->connect_fd;
        e->w = w;
        e->since = tl_now_s();
        pthread_mutex_lock(&w->mu);
        e->prev = w->head.prev;
        e->next = &w->head;
        w->head.prev->next = e;
        w->head.prev = e;
        pthread_mutex_unlock(&w->mu);
        return;
    }
    conn_entry *e = *socket_ctx;   /* closed: unlinked before libmicrohttpd closes the socket */
    if (!e) return;
    pthread_mutex_lock(&w->mu);
    if (e->next) {
        e->prev->next = e->next;
        e->next->prev = e->prev;
    }
    pthread_mutex_unlock(&w->mu);
    free(e);
    *socket_ctx = NULL;
}

void watch_phase(struct MHD_Connection *c, int phase)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (!ci || !ci->socket_context) return;
    conn_entry *e = ci->socket_context;
    pthread_mutex_lock(&e->w->mu);
    e->phase = phase;
    e->since = tl_now_s();
    pthread_mutex_unlock(&e->w->mu);
}

static void *watch_main(void *arg)
{
    server *srv = arg;
    conn_watch *w = srv->watch;
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        double t = tl_now_s();
        for (conn_entry *e = w->head.next; e != &w->head; e = e->next) {
            double limit = e->phase == 0 ? srv->idle_s : e->phase == 1 ? srv->body_s : 0;
            if (limit > 0 && !e->cut && t - e->since > limit) {
                shutdown(e->fd, SHUT_RDWR);
                e->cut = 1;
            }
        }
        struct timespec d = tl_deadline_ms(0, WATCH_TICK_MS);
        pthread_cond_timedwait(&w->wake, &w->mu, &d);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int watch_start(server *srv)
{
    conn_watch *w = calloc(1, sizeof *w);
    if (!w) return -1;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->wake, NULL);
    w->head.next = w->head.prev = &w->head;
    w->head.fd = -1;
    srv->watch = w;
    if (pthread_create(&w->thread, NULL, watch_main, srv)) {
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->wake);
        free(w);
        srv->watch = NULL;
        return -1;
    }
    return 0;
}

/* After the daemon has stopped: no connection is left to watch. */
void watch_stop(server *srv)
{
    conn_watch *w = srv->watch;
    if (!w) return;
    tl_thread_stop(w->thread, &w->mu, &w->wake, &w->stop);
    free(w);
    srv->watch = NULL;
}
