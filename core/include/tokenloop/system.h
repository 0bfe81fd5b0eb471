/* What tokenloop asks of the operating system in more than one place. */
#ifndef TOKENLOOP_SYSTEM_H
#define TOKENLOOP_SYSTEM_H

#include <pthread.h>
#include <time.h>

/* The cores this process may run on (its CPU affinity where the system has one, so a container
 * or `taskset` limit counts), at least 1. */
int tl_cpu_count(void);

/* Seconds and milliseconds on the monotonic clock (CLOCK_MONOTONIC): for intervals, not dates. */
double tl_now_s(void);
double tl_now_ms(void);

/* The time ms milliseconds from now, for pthread_cond_timedwait: on CLOCK_MONOTONIC when
 * monotonic (a condition variable set to wait on it), else CLOCK_REALTIME (the default). */
struct timespec tl_deadline_ms(int monotonic, long ms);

/* Ends a worker that waits on wake under mu and returns once *stop is set: sets it, wakes the
 * worker, joins it, then destroys mu and wake. */
void tl_thread_stop(pthread_t thread, pthread_mutex_t *mu, pthread_cond_t *wake, int *stop);

#endif
