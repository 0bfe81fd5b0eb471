/* What tokenloop asks of the operating system in more than one place (tokenloop/system.h). */
#define _GNU_SOURCE
#include <sched.h>
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
