/* Where Linux and macOS differ, in one place. Each call is the Linux one on Linux, unchanged, and a
 * portable fallback elsewhere, chosen at build time by what the system headers define. Only the
 * Linux side runs here; scripts/check-macos.sh compiles the other for macOS (arm64 and x86_64).
 * Header-only, so that the few programs built from single core files (tokenloop_read, paths_probe)
 * need nothing more to link. Sockets and pipes: tokenloop/platform_net.h (<sys/socket.h> would
 * clash with names such as bind in files that use none). */
#ifndef TOKENLOOP_PLATFORM_H
#define TOKENLOOP_PLATFORM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/random.h>
#endif
#ifdef __GLIBC__
#include <malloc.h>
#endif
#ifdef __APPLE__
#include <mach-o/dyld.h>
#include <mach/mach.h>
#include <malloc/malloc.h>
#include <sys/sysctl.h>
#endif

/* --- threads ---------------------------------------------------------------------------------- */

/* A barrier for count threads. macOS has no pthread_barrier_t: there, a mutex, a condition and a
 * generation number (a thread waits until the generation it arrived in has passed). */
#if defined(_POSIX_BARRIERS) && _POSIX_BARRIERS > 0
typedef pthread_barrier_t tl_barrier;
static inline void tl_barrier_init(tl_barrier *b, unsigned count) { pthread_barrier_init(b, NULL, count); }
static inline void tl_barrier_wait(tl_barrier *b) { pthread_barrier_wait(b); }
static inline void tl_barrier_destroy(tl_barrier *b) { pthread_barrier_destroy(b); }
#else
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t all_in;
    unsigned count, arrived, generation;
} tl_barrier;
static inline void tl_barrier_init(tl_barrier *b, unsigned count)
{
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->all_in, NULL);
    b->count = count;
    b->arrived = b->generation = 0;
}
static inline void tl_barrier_wait(tl_barrier *b)
{
    pthread_mutex_lock(&b->mu);
    unsigned gen = b->generation;
    if (++b->arrived == b->count) {
        b->arrived = 0;
        b->generation++;
        pthread_cond_broadcast(&b->all_in);
    } else {
        while (gen == b->generation) pthread_cond_wait(&b->all_in, &b->mu);
    }
    pthread_mutex_unlock(&b->mu);
}
static inline void tl_barrier_destroy(tl_barrier *b)
{
    pthread_cond_destroy(&b->all_in);
    pthread_mutex_destroy(&b->mu);
}
#endif

/* A condition whose timed waits count on TL_COND_MONOTONIC's clock: the monotonic one where it
 * can be chosen (a wall-clock change cannot stretch a wait), else (macOS) the realtime one, so
 * deadlines for it come from tl_deadline_ms(TL_COND_MONOTONIC, ms). */
#if defined(_POSIX_CLOCK_SELECTION) && _POSIX_CLOCK_SELECTION > 0
#define TL_COND_MONOTONIC 1
static inline void tl_cond_init_timed(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
}
#else
#define TL_COND_MONOTONIC 0
static inline void tl_cond_init_timed(pthread_cond_t *cv) { pthread_cond_init(cv, NULL); }
#endif

/* --- memory and the system ---------------------------------------------------------------------- */

/* n random bytes from the kernel; 0, or -1 when they could not be had. */
static inline int tl_random_bytes(void *buf, size_t n)
{
#ifdef __linux__
    return getrandom(buf, n, 0) == (ssize_t)n ? 0 : -1;
#else
    arc4random_buf(buf, n);
    return 0;
#endif
}

/* Gives freed heap memory back to the system (glibc keeps large freed blocks otherwise). */
static inline void tl_malloc_trim(void)
{
#if defined(__GLIBC__)
    malloc_trim(0);
#elif defined(__APPLE__)
    malloc_zone_pressure_relief(NULL, 0);
#endif
}

/* The running binary's path, symlinks resolved, in out; its length, or -1. */
static inline ssize_t tl_exe_path(char *out, size_t cap)
{
#ifdef __APPLE__
    char raw[4096];
    uint32_t n = sizeof raw;
    char *real;
    if (_NSGetExecutablePath(raw, &n) != 0 || !(real = realpath(raw, NULL))) return -1;
    size_t len = strlen(real);
    if (len + 1 > cap) len = (size_t)-1;
    else memcpy(out, real, len + 1);
    free(real);
    return (ssize_t)len;
#else
    ssize_t n = readlink("/proc/self/exe", out, cap - 1);
    if (n >= 0) out[n] = 0;
    return n;
#endif
}

#ifdef __APPLE__
/* A byte count from sysctl (hw.memsize, hw.l2cachesize, ...); 0 where the name is unknown. */
static inline uint64_t tl_sysctl_bytes(const char *name)
{
    uint64_t v = 0;   /* a 4-byte value fills the low half: both Macs are little-endian */
    size_t n = sizeof v;
    return sysctlbyname(name, &v, &n, NULL, 0) == 0 ? v : 0;
}

/* Memory the system could hand out now: free, inactive and purgeable pages (what Linux's
 * MemAvailable counts is close: free plus reclaimable). 0 if it cannot be read. */
static inline uint64_t tl_mem_available_apple(void)
{
    vm_statistics64_data_t s;
    mach_msg_type_number_t n = HOST_VM_INFO64_COUNT;
    if (host_statistics64(mach_host_self(), HOST_VM_INFO64, (host_info64_t)&s, &n) != KERN_SUCCESS) return 0;
    return ((uint64_t)s.free_count + s.inactive_count + s.purgeable_count) * (uint64_t)vm_page_size;
}
#endif

#endif
