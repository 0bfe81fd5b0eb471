/* What tokenloop asks of the operating system in more than one place (tokenloop/system.h). */
#define _GNU_SOURCE
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
