/* The slots, the queue in front of them, and each client's count of requests in flight. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "tokenloop/system.h"

/* How often a queued request looks at its client: a place held for a client that left is
 * given up within this (the issue asks for 0.5 s). */
enum { QUEUE_POLL_MS = 100 };

static slot *free_slot(server *srv)
{
    for (int i = 0; i < srv->n_slots; i++)
        if (!srv->slots[i].busy) return &srv->slots[i];
    return NULL;
}

/* A free slot, waiting in the queue for one if need be. SLOT_FULL when the queue is full (the
 * caller says 429), SLOT_GONE when the client left while waiting, SLOT_DRAINING on shutdown. */
int slot_acquire(server *srv, gone_fn gone, void *ctx, slot **out)
{
    *out = NULL;
    pthread_mutex_lock(&srv->mu);
    slot *got = srv->draining ? NULL : free_slot(srv);
    int rc = srv->draining ? SLOT_DRAINING : SLOT_OK;
    if (!got && rc == SLOT_OK && srv->waiting >= srv->max_queue) rc = SLOT_FULL;
    if (!got && rc == SLOT_OK) {
        srv->waiting++;
        while (!got && rc == SLOT_OK) {
            struct timespec t = tl_deadline_ms(0, QUEUE_POLL_MS);
            int w = pthread_cond_timedwait(&srv->freed, &srv->mu, &t);
            if (srv->draining) rc = SLOT_DRAINING;   /* before a slot the drain freed: no new work */
            else if ((got = free_slot(srv)) != NULL) break;
            else if (w == ETIMEDOUT && gone && gone(ctx)) rc = SLOT_GONE;
        }
        srv->waiting--;
    }
    if (got) got->busy = 1;
    pthread_mutex_unlock(&srv->mu);
    *out = got;
    return rc;
}

void slot_release(server *srv, slot *sl)
{
    pthread_mutex_lock(&srv->mu);
    sl->busy = 0;
    pthread_cond_signal(&srv->freed);
    pthread_mutex_unlock(&srv->mu);
}

/* One more request from addr; -1 (nothing counted) past --per-client or a full table. */
int client_enter(server *srv, const char *addr)
{
    if (srv->per_client <= 0) return 0;
    pthread_mutex_lock(&srv->mu);
    client_count *hit = NULL, *empty = NULL;
    for (int i = 0; i < MAX_CLIENTS && !hit; i++) {
        if (srv->clients[i].n && !strcmp(srv->clients[i].addr, addr)) hit = &srv->clients[i];
        else if (!srv->clients[i].n && !empty) empty = &srv->clients[i];
    }
    int rc = 0;
    if (!hit && empty) {
        hit = empty;
        snprintf(hit->addr, sizeof hit->addr, "%s", addr);
    }
    if (!hit || hit->n >= srv->per_client) rc = -1;
    else hit->n++;
    pthread_mutex_unlock(&srv->mu);
    return rc;
}

void client_leave(server *srv, const char *addr)
{
    if (srv->per_client <= 0) return;
    pthread_mutex_lock(&srv->mu);
    for (int i = 0; i < MAX_CLIENTS; i++)
        if (srv->clients[i].n && !strcmp(srv->clients[i].addr, addr)) {
            srv->clients[i].n--;
            break;
        }
    pthread_mutex_unlock(&srv->mu);
}
