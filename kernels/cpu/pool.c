/* Persistent pthread pool: one generation counter announces a job, one pending counter
 * reports its end. Spinning first keeps back-to-back decode jobs off the scheduler; the
 * condition variables keep an idle pool from burning a shared machine's cores. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "pool.h"

#define TL_POOL_SPIN 2000   /* ~30-50 us of PAUSE: covers the gaps between one pass's operations */

struct tl_pool {
    int n;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t start, done;
    atomic_uint gen;
    atomic_int pending;
    atomic_int stop;
    tl_pool_fn fn;
    void *arg;
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

static void *worker(void *v)
{
    worker_arg *wa = v;
    tl_pool *p = wa->p;
    int tid = wa->tid;
    free(wa);
    unsigned seen = 0;
    for (;;) {
        unsigned g = atomic_load_explicit(&p->gen, memory_order_acquire);
        for (int i = 0; g == seen && i < TL_POOL_SPIN; i++) {
            cpu_relax();
            g = atomic_load_explicit(&p->gen, memory_order_acquire);
        }
        if (g == seen) {
            pthread_mutex_lock(&p->mu);
            while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen)
                pthread_cond_wait(&p->start, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        seen = g;
        if (atomic_load_explicit(&p->stop, memory_order_acquire))
            return NULL;
        p->fn(p->arg, tid, p->n);
        if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_broadcast(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

int tl_cpu_count(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0)
            return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

tl_pool *tl_pool_create(int nthreads)
{
    if (nthreads <= 0)
        nthreads = tl_cpu_count();
    tl_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->n = nthreads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->start, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->gen, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->stop, 0);
    if (nthreads > 1) {
        p->threads = calloc((size_t)nthreads, sizeof *p->threads);
        if (!p->threads) {
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

void tl_pool_run(tl_pool *p, tl_pool_fn fn, void *arg)
{
    if (p->n == 1) {
        fn(arg, 0, 1);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    atomic_store_explicit(&p->pending, p->n - 1, memory_order_relaxed);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    fn(arg, 0, p->n);
    for (int i = 0; i < TL_POOL_SPIN; i++) {
        if (atomic_load_explicit(&p->pending, memory_order_acquire) == 0)
            return;
        cpu_relax();
    }
    pthread_mutex_lock(&p->mu);
    while (atomic_load_explicit(&p->pending, memory_order_acquire) > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void tl_pool_destroy(tl_pool *p)
{
    if (!p)
        return;
    if (p->threads) {
        pthread_mutex_lock(&p->mu);
        atomic_store_explicit(&p->stop, 1, memory_order_release);
        atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
        pthread_cond_broadcast(&p->start);
        pthread_mutex_unlock(&p->mu);
        for (int i = 1; i < p->n; i++)
            pthread_join(p->threads[i], NULL);
        free(p->threads);
    }
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->start);
    pthread_cond_destroy(&p->done);
    free(p);
}
