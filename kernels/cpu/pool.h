/* A small persistent thread pool for the CPU backend. Work is a range of items that the
 * calling thread and the workers take one at a time, so a thread the scheduler delays (this
 * may be a shared machine) takes fewer items instead of holding everyone back, and a worker
 * that wakes after every item is done is not waited for at all. Workers spin briefly between
 * jobs (decode issues a hundred short jobs per token) and then sleep. */
#ifndef TL_KERNELS_CPU_POOL_H
#define TL_KERNELS_CPU_POOL_H

typedef struct tl_pool tl_pool;
/* Does item `item`; tid (0 = the caller, 1..n-1 the workers) indexes per-thread scratch. */
typedef void (*tl_pool_fn)(void *arg, int item, int tid);

tl_pool *tl_pool_create(int nthreads);   /* nthreads <= 0: all cores; NULL on failure */
void tl_pool_destroy(tl_pool *p);
int tl_pool_size(const tl_pool *p);
/* Runs fn for items 0..n_items-1 and returns when all are done. One caller at a time. */
void tl_pool_for(tl_pool *p, int n_items, tl_pool_fn fn, void *arg);

#endif
