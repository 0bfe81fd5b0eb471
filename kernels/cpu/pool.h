/* A small persistent thread pool for the CPU backend. The caller runs share 0 itself, so a
 * pool of one thread starts no threads at all. Workers spin briefly between jobs (decode
 * issues a hundred short jobs per token) and then sleep on a condition variable. */
#ifndef TL_KERNELS_CPU_POOL_H
#define TL_KERNELS_CPU_POOL_H

typedef struct tl_pool tl_pool;
typedef void (*tl_pool_fn)(void *arg, int tid, int nthreads);

tl_pool *tl_pool_create(int nthreads);   /* NULL on failure */
void tl_pool_destroy(tl_pool *p);
int tl_pool_size(const tl_pool *p);
/* Runs fn(arg, tid, n) for tid = 0..n-1 in parallel and returns when all have finished. */
void tl_pool_run(tl_pool *p, tl_pool_fn fn, void *arg);
int tl_cpu_count(void);                  /* cores this process may run on */

#endif
