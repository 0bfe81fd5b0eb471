/* What tokenloop asks of the operating system in more than one place (tokenloop/system.h). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "tokenloop/system.h"

int tl_cpu_count(void)
{
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

double tl_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

double tl_now_ms(void) { return tl_now_s() * 1e3; }

struct timespec tl_deadline_ms(int monotonic, long ms)
{
    struct timespec t;
    clock_gettime(monotonic ? CLOCK_MONOTONIC : CLOCK_REALTIME, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += ms % 1000 * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

void tl_thread_stop(pthread_t thread, pthread_mutex_t *mu, pthread_cond_t *wake, int *stop)
{
    pthread_mutex_lock(mu);
    *stop = 1;
    pthread_cond_signal(wake);
    pthread_mutex_unlock(mu);
    pthread_join(thread, NULL);
    pthread_mutex_destroy(mu);
    pthread_cond_destroy(wake);
}
