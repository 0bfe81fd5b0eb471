/* The iterator streamer: tl_generate on a background thread; each step's printed text goes into
 * a mutex-protected queue that the consumer drains with an optional timeout. The end of the
 * stream is an explicit marker; a cancel is seen by the generation thread after the next token. */
#define _GNU_SOURCE
#include "tokenloop/session.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct chunk {
    struct chunk *next;
    double t_ms;                /* the step's t_ms: when its token was on the host */
    tl_iter_token *tok;         /* the tokens chosen since the previous chunk */
    int n_tok;
    size_t len;
    char text[];
} chunk;

struct tl_iter {
    tl_session *s;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    chunk *head, *tail;
    int ended;                  /* the producer pushed the end marker */
    int started;                /* the first step was seen */
    atomic_int cancel;
    double last_ms;             /* consumer side: t_ms of the chunk tl_iter_next gave last */
    tl_iter_token *last_tok;    /* consumer side: that chunk's tokens (owned) */
    int n_last_tok;
    tl_iter_token *pend;        /* producer side: tokens no chunk has carried yet */
    int n_pend, cap_pend;
    tl_iter_token *rest;        /* pend at the end of generation (under mu), for the consumer */
    int n_rest;
    int n_put, n_got;           /* chunks the producer queued, the consumer took (under mu) */
    int rc;
    tl_error err;
};

static void push(tl_iter *it, const char *text, size_t len, double t_ms)
{
    chunk *c = malloc(sizeof *c + len + 1);
    if (!c) return;
    c->next = NULL;
    c->t_ms = t_ms;
    c->tok = it->pend;   /* the first chunk of a step carries the tokens since the last one */
    c->n_tok = it->n_pend;
    it->pend = NULL;
    it->n_pend = it->cap_pend = 0;
    c->len = len;
    memcpy(c->text, text, len);
    c->text[len] = 0;
    pthread_mutex_lock(&it->mu);
    if (it->tail) it->tail->next = c;
    else it->head = c;
    it->tail = c;
    it->n_put++;
    pthread_cond_signal(&it->cv);
    pthread_mutex_unlock(&it->mu);
}

/* Chunks as TextIteratorStreamer queues them: one per put() that printed something, and
 * end()'s flush on its own. Empty strings, which transformers also queues, carry nothing. */
static int on_step(void *ctx, tl_session *s, const tl_step *st)
{
    tl_iter *it = ctx;
    if (it->n_pend == it->cap_pend) {
        int cap = it->cap_pend ? 2 * it->cap_pend : 4;
        tl_iter_token *p = realloc(it->pend, (size_t)cap * sizeof *p);
        if (!p) return 1;   /* out of memory: stop, as a cancel would */
        it->pend = p;
        it->cap_pend = cap;
    }
    it->pend[it->n_pend++] = (tl_iter_token){.id = st->chosen, .forced = st->forced, .sample = st->sample};
    size_t n = st->printed ? strlen(st->printed) : 0, cut = st->end_at < n ? st->end_at : n;
    if (!it->started) {
        /* Printed before this step: the prompt (skip_prompt off) and any steps the session took
         * before the iterator started, so the chunks always add up to the streamed text. */
        size_t all;
        const char *text = tl_session_streamed(s, &all);
        if (all > n) push(it, text, all - n, st->t_ms);
        it->started = 1;
    }
    if (cut) push(it, st->printed, cut, st->t_ms);
    if (n > cut) push(it, st->printed + cut, n - cut, st->t_ms);
    return atomic_load(&it->cancel);
}

static void *run(void *arg)
{
    tl_iter *it = arg;
    int rc = tl_generate(it->s, on_step, it, &it->err);
    pthread_mutex_lock(&it->mu);
    it->rc = rc;
    it->rest = it->pend;
    it->n_rest = it->n_pend;
    it->pend = NULL;
    it->n_pend = 0;
    it->ended = 1;
    pthread_cond_broadcast(&it->cv);
    pthread_mutex_unlock(&it->mu);
    return NULL;
}

int tl_iter_start(tl_iter **out, tl_session *s, tl_error *err)
{
    *out = NULL;
    tl_iter *it = calloc(1, sizeof *it);
    if (!it) return tl_error_set(err, "iterator: out of memory");
    it->s = s;
    atomic_init(&it->cancel, 0);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&it->mu, NULL);
    pthread_cond_init(&it->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&it->thread, NULL, run, it)) {
        pthread_mutex_destroy(&it->mu);
        pthread_cond_destroy(&it->cv);
        free(it);
        return tl_error_set(err, "iterator: cannot start a thread");
    }
    *out = it;
    return 0;
}

int tl_iter_next(tl_iter *it, char **text, size_t *len, int timeout_ms)
{
    struct timespec until;
    if (timeout_ms >= 0) {
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += timeout_ms / 1000;
        until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
    }
    *text = NULL;
    if (len) *len = 0;
    pthread_mutex_lock(&it->mu);
    while (!it->head && !it->ended) {
        if (timeout_ms < 0) {
            pthread_cond_wait(&it->cv, &it->mu);
        } else if (pthread_cond_timedwait(&it->cv, &it->mu, &until) == ETIMEDOUT && !it->head && !it->ended) {
            pthread_mutex_unlock(&it->mu);
            return -1;
        }
    }
    chunk *c = it->head;
    if (c) {
        it->head = c->next;
        if (!it->head) it->tail = NULL;
        it->n_got++;
    }
    free(it->last_tok);
    it->last_tok = NULL;
    it->n_last_tok = 0;
    if (!c) {   /* ended and drained: what no chunk carried, once */
        it->last_tok = it->rest;
        it->n_last_tok = it->n_rest;
        it->rest = NULL;
        it->n_rest = 0;
    }
    pthread_mutex_unlock(&it->mu);
    if (!c) return 0;
    it->last_ms = c->t_ms;
    it->last_tok = c->tok;
    it->n_last_tok = c->n_tok;
    char *t = malloc(c->len + 1);
    if (t) {
        memcpy(t, c->text, c->len + 1);
        if (len) *len = c->len;
    }
    *text = t;
    free(c);
    return t ? 1 : -1;
}

void tl_iter_cancel(tl_iter *it) { atomic_store(&it->cancel, 1); }

double tl_iter_last_ms(const tl_iter *it) { return it->last_ms; }

int tl_iter_last_tokens(const tl_iter *it, const tl_iter_token **tok)
{
    *tok = it->last_tok;
    return it->n_last_tok;
}

void tl_iter_counts(tl_iter *it, int *put, int *got)
{
    pthread_mutex_lock(&it->mu);
    *put = it->n_put;
    *got = it->n_got;
    pthread_mutex_unlock(&it->mu);
}

int tl_iter_finish(tl_iter *it, tl_error *err)
{
    if (!it) return 0;
    pthread_join(it->thread, NULL);
    int rc = it->rc;
    if (rc < 0 && err) *err = it->err;
    for (chunk *c = it->head; c;) {
        chunk *n = c->next;
        free(c->tok);
        free(c);
        c = n;
    }
    free(it->last_tok);
    free(it->pend);
    free(it->rest);
    pthread_mutex_destroy(&it->mu);
    pthread_cond_destroy(&it->cv);
    free(it);
    return rc;
}
