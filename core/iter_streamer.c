/* The iterator streamer: tl_generate on a background thread; each step's printed text goes into
 * a mutex-protected queue that the consumer drains with an optional timeout. The end of the
 * stream is an explicit marker; a cancel is seen by the generation thread after the next token.
 * A batch runner (tl_batcher) is the same producer for many iterators on one thread: it steps
 * their sessions together (tl_session_step_batch), so each decode pass reads the weights once
 * for all of them, and feeds each step to its iterator's queue as the lone thread would. */
#define _GNU_SOURCE
#include "tokenloop/platform.h"
#include "tokenloop/session.h"
#include "tokenloop/system.h"

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
    tl_batcher *batcher;        /* NULL: the iterator's own thread runs tl_generate */
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
    it->pend[it->n_pend++] = (tl_iter_token){.id = st->chosen, .forced = st->forced,
                                             .batch = st->batch > 0 ? st->batch : 1, .sample = st->sample};
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

/* The producer is done with it: after this the consumer may free it at any time. */
static void end_run(tl_iter *it, int rc)
{
    pthread_mutex_lock(&it->mu);
    it->rc = rc;
    it->rest = it->pend;
    it->n_rest = it->n_pend;
    it->pend = NULL;
    it->n_pend = 0;
    it->ended = 1;
    pthread_cond_broadcast(&it->cv);
    pthread_mutex_unlock(&it->mu);
}

static void *run(void *arg)
{
    tl_iter *it = arg;
    end_run(it, tl_generate(it->s, on_step, it, &it->err));
    return NULL;
}

static tl_iter *iter_new(tl_session *s, tl_error *err)
{
    tl_iter *it = calloc(1, sizeof *it);
    if (!it) {
        tl_error_set(err, "iterator: out of memory");
        return NULL;
    }
    it->s = s;
    atomic_init(&it->cancel, 0);
    pthread_mutex_init(&it->mu, NULL);
    tl_cond_init_timed(&it->cv);
    return it;
}

static void iter_free(tl_iter *it)
{
    pthread_mutex_destroy(&it->mu);
    pthread_cond_destroy(&it->cv);
    free(it);
}

int tl_iter_start(tl_iter **out, tl_session *s, tl_error *err)
{
    *out = NULL;
    tl_iter *it = iter_new(s, err);
    if (!it) return -1;
    if (pthread_create(&it->thread, NULL, run, it)) {
        iter_free(it);
        return tl_error_set(err, "iterator: cannot start a thread");
    }
    *out = it;
    return 0;
}

/* ---- the batch runner ---- */

struct tl_batcher {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    tl_iter *join[TL_SESSION_BATCH_MAX];   /* handed over, not stepping yet (mu) */
    int n_join, stop;
    atomic_int last_batch;
};

/* One round: every running iterator's session steps (the decodes in one pass), and each step
 * goes to its iterator's queue. Returns how many still run (compacted at the front of run). */
static int batch_round(tl_batcher *b, tl_iter **run, int n)
{
    tl_session *ss[TL_SESSION_BATCH_MAX];
    const tl_step *outs[TL_SESSION_BATCH_MAX];
    int rcs[TL_SESSION_BATCH_MAX];
    for (int i = 0; i < n; i++) {
        ss[i] = run[i]->s;
        rcs[i] = 0;
    }
    tl_error err;
    if (tl_session_step_batch(ss, n, outs, &err) < 0) {
        /* which one could not step (a full context, no memory): each that has not stepped this
         * round steps alone, and only the one that fails ends with the error */
        for (int i = 0; i < n; i++)
            if (!outs[i] && !tl_session_done(ss[i]) && tl_session_step(ss[i], &outs[i], &run[i]->err) < 0)
                rcs[i] = -1;
    }
    int most = 0, keep = 0;
    for (int i = 0; i < n; i++)
        if (outs[i] && outs[i]->batch > most) most = outs[i]->batch;
    atomic_store(&b->last_batch, most);
    for (int i = 0; i < n; i++) {
        tl_iter *it = run[i];
        int cancel = outs[i] ? on_step(it, ss[i], outs[i]) : atomic_load(&it->cancel);
        int done = tl_session_done(ss[i]);
        if (rcs[i] < 0 || cancel || done) {
            tl_session_run_mark(ss[i], 0);
            end_run(it, rcs[i] < 0 ? -1 : done ? TL_SESSION_DONE : TL_GENERATE_CANCELLED);
        } else {
            run[keep++] = it;
        }
    }
    return keep;
}

static void *batcher_main(void *arg)
{
    tl_batcher *b = arg;
    tl_iter *run[TL_SESSION_BATCH_MAX];
    int n = 0;
    for (;;) {
        pthread_mutex_lock(&b->mu);
        while (!n && !b->n_join && !b->stop)
            pthread_cond_wait(&b->cv, &b->mu);
        int stop = b->stop;
        int take = b->n_join < TL_SESSION_BATCH_MAX - n ? b->n_join : TL_SESSION_BATCH_MAX - n;
        for (int i = 0; i < take; i++) {
            run[n + i] = b->join[i];
            tl_session_run_mark(run[n + i]->s, 1);
        }
        memmove(b->join, b->join + take, sizeof(tl_iter *) * (size_t)(b->n_join - take));
        b->n_join -= take;
        n += take;
        pthread_mutex_unlock(&b->mu);
        if (stop)
            for (int i = 0; i < n; i++)
                atomic_store(&run[i]->cancel, 1);
        if (!n && stop) break;
        n = batch_round(b, run, n);
        if (!n)
            atomic_store(&b->last_batch, 0);   /* idle: no pass is shared */
    }
    atomic_store(&b->last_batch, 0);
    return NULL;
}

int tl_batcher_create(tl_batcher **out, tl_error *err)
{
    *out = NULL;
    tl_batcher *b = calloc(1, sizeof *b);
    if (!b) return tl_error_set(err, "batch runner: out of memory");
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    atomic_init(&b->last_batch, 0);
    if (pthread_create(&b->thread, NULL, batcher_main, b)) {
        pthread_mutex_destroy(&b->mu);
        pthread_cond_destroy(&b->cv);
        free(b);
        return tl_error_set(err, "batch runner: cannot start a thread");
    }
    *out = b;
    return 0;
}

void tl_batcher_free(tl_batcher *b)
{
    if (!b) return;
    tl_thread_stop(b->thread, &b->mu, &b->cv, &b->stop);
    free(b);
}

int tl_batcher_last_batch(tl_batcher *b) { return b ? atomic_load(&b->last_batch) : 0; }

int tl_iter_start_batched(tl_iter **out, tl_session *s, tl_batcher *b, tl_error *err)
{
    *out = NULL;
    tl_iter *it = iter_new(s, err);
    if (!it) return -1;
    it->batcher = b;
    pthread_mutex_lock(&b->mu);
    int full = b->stop || b->n_join == TL_SESSION_BATCH_MAX;
    if (!full) {
        b->join[b->n_join++] = it;
        pthread_cond_signal(&b->cv);
    }
    pthread_mutex_unlock(&b->mu);
    if (full) {
        iter_free(it);
        return tl_error_set(err, "batch runner: %s", b->stop ? "stopping" : "too many requests waiting");
    }
    *out = it;
    return 0;
}

int tl_iter_next(tl_iter *it, char **text, size_t *len, int timeout_ms)
{
    struct timespec until;
    if (timeout_ms >= 0)
        until = tl_deadline_ms(TL_COND_MONOTONIC, timeout_ms);
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
    if (it->batcher) {   /* the runner ends it (a cancel is seen after the next round) */
        pthread_mutex_lock(&it->mu);
        while (!it->ended)
            pthread_cond_wait(&it->cv, &it->mu);
        pthread_mutex_unlock(&it->mu);
    } else {
        pthread_join(it->thread, NULL);
    }
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
    iter_free(it);
    return rc;
}
