/* Persistent pthread pool. A job is announced by storing its id in `job` (0: none open);
 * workers and the caller take items from `next` and count them in `done`. The caller closes
 * the job when `done` reaches the item count, then waits only for workers that are inside
 * the job at that moment (`inside`): a worker enters by incrementing `inside` and only then
 * checks that its job is still open, so after the close no worker can touch this job's
 * arguments. Spinning first keeps back-to-back decode jobs off the scheduler; the condition
 * variables keep an idle pool from burning a shared machine's cores. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "pool.h"
#include "tokenloop/system.h"

#define TL_POOL_SPIN 2000   /* ~30-50 us of PAUSE: covers the gaps between one pass's operations */

struct tl_pool {
    int n;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t wake, idle;
    atomic_int stop;
    alignas(64) atomic_uint job;
    atomic_int inside;
    unsigned last_id;         /* the caller's, like the two below */
    int strikes, solo;        /* see tl_pool_for */
    tl_pool_fn fn;            /* written before job is published, read only inside it */
    void *arg;
    int n_items;
    alignas(64) atomic_int next;
    alignas(64) atomic_int done;
};

typedef struct {
    tl_pool *p;
    int tid;
} worker_arg;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Takes items until none is left; wakes the caller when it finished the last one. */
static void take_items(tl_pool *p, int tid)
{
    const int n = p->n_items;
    for (;;) {
        int i = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (i >= n)
            return;
        p->fn(p->arg, i, tid);
        if (atomic_fetch_add_explicit(&p->done, 1, memory_order_acq_rel) + 1 == n && tid) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_broadcast(&p->idle);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

static void *worker(void *v)
{
    worker_arg *wa = v;
    tl_pool *p = wa->p;
    int tid = wa->tid;
    free(wa);
    unsigned seen = 0, j = 0;
    for (;;) {
        int i = 0;
        for (; i < TL_POOL_SPIN; i++) {
            j = atomic_load(&p->job);
            if ((j && j != seen) || atomic_load_explicit(&p->stop, memory_order_relaxed))
                break;
            cpu_relax();
        }
        if (i == TL_POOL_SPIN) {
            pthread_mutex_lock(&p->mu);
            while (((j = atomic_load(&p->job)) == 0 || j == seen) && !atomic_load(&p->stop))
                pthread_cond_wait(&p->wake, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop))
            return NULL;
        seen = j;
        atomic_fetch_add(&p->inside, 1);
        if (atomic_load(&p->job) == j)   /* still open: its fn, arg and n_items are valid */
            take_items(p, tid);
        atomic_fetch_sub(&p->inside, 1);
    }
}

tl_pool *tl_pool_create(int nthreads)
{
    if (nthreads <= 0)
        nthreads = tl_cpu_count();
    tl_pool *p = aligned_alloc(64, (sizeof *p + 63) & ~(size_t)63);
    if (!p)
        return NULL;
    *p = (tl_pool){.n = nthreads};
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->idle, NULL);
    atomic_init(&p->stop, 0);
    atomic_init(&p->job, 0);
    atomic_init(&p->inside, 0);
    atomic_init(&p->next, 0);
    atomic_init(&p->done, 0);
    if (nthreads > 1) {
        p->threads = calloc((size_t)nthreads, sizeof *p->threads);
        if (!p->threads) {
            p->n = 1;
            tl_pool_destroy(p);
            return NULL;
        }
        for (int i = 1; i < nthreads; i++) {
            worker_arg *wa = malloc(sizeof *wa);
            if (wa) {
                wa->p = p;
                wa->tid = i;
            }
            if (!wa || pthread_create(&p->threads[i], NULL, worker, wa) != 0) {
                free(wa);
                p->n = i;   /* destroy joins the ones that started */
                tl_pool_destroy(p);
                return NULL;
            }
        }
    }
    return p;
}

int tl_pool_size(const tl_pool *p) { return p->n; }

void tl_pool_for(tl_pool *p, int n_items, tl_pool_fn fn, void *arg)
{
    if (n_items <= 0)
        return;
    if (p->n == 1 || n_items == 1) {
        for (int i = 0; i < n_items; i++)
            fn(arg, i, 0);
        return;
    }
    /* On an oversubscribed machine a worker is often descheduled in the middle of an item,
     * and the caller then waits a whole scheduler slice for it. When that costs more than the
     * caller's own share of the work three jobs in a row, the caller runs the next jobs
     * alone (about two decode steps' worth), then tries the workers again. */
    if (p->solo > 0) {
        p->solo--;
        for (int i = 0; i < n_items; i++)
            fn(arg, i, 0);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    p->n_items = n_items;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    if (++p->last_id == 0)
        p->last_id = 1;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->job, p->last_id);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);

    struct timespec t0, t1, t2;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    take_items(p, 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int spins = 0;
    while (atomic_load_explicit(&p->done, memory_order_acquire) < n_items && spins++ < TL_POOL_SPIN)
        cpu_relax();
    if (atomic_load_explicit(&p->done, memory_order_acquire) < n_items) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load_explicit(&p->done, memory_order_acquire) < n_items)
            pthread_cond_wait(&p->idle, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
    clock_gettime(CLOCK_MONOTONIC, &t2);
    double own = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
    double waited = (t2.tv_sec - t1.tv_sec) * 1e9 + (t2.tv_nsec - t1.tv_nsec);
    if (waited > own && waited > 200e3) {
        if (++p->strikes >= 3) {
            p->strikes = 0;
            p->solo = 256;
        }
    } else {
        p->strikes = 0;
    }
    atomic_store(&p->job, 0);
    /* Workers inside now only find no items left; this is a window of a few instructions
     * unless the scheduler interrupts one of them. */
    for (spins = 0; atomic_load(&p->inside) != 0; spins++) {
        if (spins < TL_POOL_SPIN)
            cpu_relax();
        else
            sched_yield();
    }
}

void tl_pool_destroy(tl_pool *p)
{
    if (!p)
        return;
    if (p->threads) {
        pthread_mutex_lock(&p->mu);
        atomic_store(&p->stop, 1);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
        for (int i = 1; i < p->n; i++)
            pthread_join(p->threads[i], NULL);
        free(p->threads);
    }
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->idle);
    free(p);
}
