/* Memory read bandwidth: each thread streams through its own slice of a 256 MiB buffer (well
 * past any last-level cache), all threads starting together; a pass takes as long as its
 * slowest thread. The best pass is the figure a well-behaved decode could hope for. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "tokenloop/bandwidth.h"
#include "tokenloop/platform.h"
#include "tokenloop/system.h"

#define BW_BUFFER ((size_t)256 << 20)
#define BW_MAX_PASSES 64

typedef struct bw_shared {
    const uint64_t *buf;
    size_t words;
    int threads;
    int passes;
    int go;                       /* set once the barriers know how many threads started */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    tl_barrier start, end;
    uint64_t sink[64];
} bw_shared;

typedef struct {
    bw_shared *s;
    int tid;
} bw_arg;

/* Eight independent sums per 64-byte line keep many loads in flight; the compiler
 * vectorizes the inner loop. */
static uint64_t read_slice(const uint64_t *p, size_t n)
{
    uint64_t acc[8] = {0};
    for (size_t i = 0; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            acc[j] += p[i + j];
    return acc[0] ^ acc[1] ^ acc[2] ^ acc[3] ^ acc[4] ^ acc[5] ^ acc[6] ^ acc[7];
}

static void *bw_thread(void *v)
{
    bw_arg *a = v;
    bw_shared *s = a->s;
    pthread_mutex_lock(&s->mu);
    while (!s->go)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    size_t per = s->words / (size_t)s->threads / 8 * 8;
    const uint64_t *mine = s->buf + per * (size_t)a->tid;
    uint64_t x = 0;
    for (int p = 0; p < s->passes; p++) {
        tl_barrier_wait(&s->start);
        x ^= read_slice(mine, per);
        tl_barrier_wait(&s->end);
    }
    s->sink[a->tid % 64] = x;
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int tl_bandwidth_probe(tl_bandwidth *out, int threads, double budget_s, tl_error *err)
{
    double t_begin = tl_now_s();
    memset(out, 0, sizeof *out);
    if (threads <= 0)
        threads = tl_cpu_count();
    if (threads > 256)
        threads = 256;
    if (budget_s <= 0)
        budget_s = 0.3;
    void *mem = mmap(NULL, BW_BUFFER, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return tl_error_set(err, "bandwidth probe: cannot map %zu MiB", BW_BUFFER >> 20);
#ifdef MADV_HUGEPAGE
    madvise(mem, BW_BUFFER, MADV_HUGEPAGE);   /* as the synthetic weights are */
#endif
    /* Real data, not the shared zero page: untouched pages would read from the cache. */
    uint64_t *w = mem, x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < BW_BUFFER / 8; i++)
        w[i] = (x += 0x9e3779b97f4a7c15ull);

    /* Time one pass single-handedly to size the run to the budget. */
    double t0 = tl_now_s();
    volatile uint64_t sink = read_slice(w, BW_BUFFER / 8);
    (void)sink;
    double one = tl_now_s() - t0;
    double left = budget_s - (tl_now_s() - t_begin);
    int passes = one > 0 ? (int)(left / (one / threads + 1e-4)) : BW_MAX_PASSES;
    if (passes < 3)
        passes = 3;
    if (passes > BW_MAX_PASSES)
        passes = BW_MAX_PASSES;

    bw_shared *s = calloc(1, sizeof *s);
    pthread_t *th = calloc((size_t)threads, sizeof *th);
    bw_arg *args = calloc((size_t)threads, sizeof *args);
    if (!s || !th || !args) {
        free(s);
        free(th);
        free(args);
        munmap(mem, BW_BUFFER);
        return tl_error_set(err, "bandwidth probe: out of memory");
    }
    s->buf = w;
    s->words = BW_BUFFER / 8;
    s->passes = passes;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    int started = 1;
    for (int i = 1; i < threads; i++) {
        args[i] = (bw_arg){s, i};
        if (pthread_create(&th[i], NULL, bw_thread, &args[i]) != 0)
            break;
        started++;
    }
    /* Measure with however many threads started; they wait for the barriers to exist. */
    threads = started;
    s->threads = threads;
    tl_barrier_init(&s->start, (unsigned)threads);
    tl_barrier_init(&s->end, (unsigned)threads);
    pthread_mutex_lock(&s->mu);
    s->go = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    double rates[BW_MAX_PASSES];
    size_t per = s->words / (size_t)threads / 8 * 8;
    uint64_t acc = 0;
    for (int p = 0; p < passes; p++) {
        tl_barrier_wait(&s->start);
        double a = tl_now_s();
        acc ^= read_slice(w, per);
        tl_barrier_wait(&s->end);
        rates[p] = (double)(per * 8 * (size_t)threads) / (tl_now_s() - a);
    }
    s->sink[0] = acc;
    for (int i = 1; i < started; i++)
        pthread_join(th[i], NULL);
    tl_barrier_destroy(&s->start);
    tl_barrier_destroy(&s->end);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
    free(th);
    free(args);
    munmap(mem, BW_BUFFER);
    qsort(rates, (size_t)passes, sizeof rates[0], cmp_double);
    out->bytes_per_s = rates[passes - 1];
    out->median_bytes_per_s = rates[passes / 2];
    out->buffer_bytes = per * 8 * (size_t)threads;
    out->threads = threads;
    out->passes = passes;
    out->seconds = tl_now_s() - t_begin;
    return 0;
}

/* ---- the same bytes a decode step reads ---- */

typedef struct rd_shared {
    const tl_mem_region *r;
    int n, threads;
    int go;                       /* the workers spin on it: they start within nanoseconds */
    uint64_t sink[64];
} rd_shared;

typedef struct {
    rd_shared *s;
    int tid;
} rd_arg;

/* Thread tid's share of every region, in whole 64-byte lines but for the ends. */
static uint64_t read_share(const rd_shared *s, int tid)
{
    uint64_t x = 0;
    for (int i = 0; i < s->n; i++) {
        const unsigned char *p = s->r[i].p;
        size_t n = s->r[i].n, per = (n / (size_t)s->threads + 63) & ~(size_t)63;
        size_t a = per * (size_t)tid, b = a + per < n ? a + per : n;
        while (a < b && ((uintptr_t)(p + a) & 7))
            x += p[a++];
        size_t words = (b > a ? b - a : 0) / 64 * 8;
        if (words)
            x ^= read_slice((const uint64_t *)(const void *)(p + a), words);
        for (a += words * 8; a < b; a++)
            x += p[a];
    }
    return x;
}

static void *rd_thread(void *v)
{
    rd_arg *a = v;
    while (!__atomic_load_n(&a->s->go, __ATOMIC_ACQUIRE))
        sched_yield();
    a->s->sink[a->tid % 64] = read_share(a->s, a->tid);
    return NULL;
}

double tl_bandwidth_read(const tl_mem_region *r, int n, int threads)
{
    if (threads <= 0)
        threads = tl_cpu_count();
    if (threads > 256)
        threads = 256;
    rd_shared s = {.r = r, .n = n};
    pthread_t th[256];
    rd_arg args[256];
    int started = 1;
    for (int i = 1; i < threads; i++) {
        args[i] = (rd_arg){&s, i};
        if (pthread_create(&th[i], NULL, rd_thread, &args[i]) != 0)
            break;
        started++;
    }
    s.threads = started;   /* the shares of the threads that exist */
    double t0 = tl_now_s();
    __atomic_store_n(&s.go, 1, __ATOMIC_RELEASE);
    s.sink[0] = read_share(&s, 0);
    for (int i = 1; i < started; i++)
        pthread_join(th[i], NULL);
    return tl_now_s() - t0;
}

/* ---- which bytes, and whether they stay in cache ---- */

int tl_bandwidth_model_max(const tl_model *m)
{
    return 9 * m->cfg.n_layers + 3;
}

int tl_bandwidth_model_regions(const tl_model *m, tl_mem_region *r)
{
    int n = 0;
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const tl_layer *L = &m->layers[l];
        const tl_weight *w[] = {&L->attn_norm, &L->wq, &L->wk, &L->wv, &L->wo,
                                &L->mlp_norm, &L->w_gate, &L->w_up, &L->w_down};
        for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
            r[n++] = (tl_mem_region){w[i]->data, (size_t)tl_weight_bytes(w[i])};
    }
    r[n++] = (tl_mem_region){m->final_norm.data, (size_t)tl_weight_bytes(&m->final_norm)};
    r[n++] = (tl_mem_region){m->lm_head.data, (size_t)tl_weight_bytes(&m->lm_head)};
    if (m->lm_head.data != m->embed.data)   /* untied: a step also reads its token's row */
        r[n++] = (tl_mem_region){m->embed.data, (size_t)tl_dtype_row_bytes(m->embed.dtype, m->embed.cols)};
    return n;
}

/* "32768K" -> bytes; 0 when unreadable. */
static double sysfs_size(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    double v = 0;
    char unit = 0;
    int k = fscanf(f, "%lf%c", &v, &unit);
    fclose(f);
    if (k < 1 || v <= 0)
        return 0;
    return unit == 'K' ? v * 1024 : unit == 'M' ? v * 1024 * 1024 : unit == 'G' ? v * 1024 * 1024 * 1024 : v;
}

double tl_bandwidth_llc_bytes(void)
{
#ifdef __APPLE__   /* no sysfs: the last level sysctl names (Apple Silicon has no L3) */
    double l2 = (double)tl_sysctl_bytes("hw.l2cachesize"), l3 = (double)tl_sysctl_bytes("hw.l3cachesize");
    return l3 > l2 ? l3 : l2;
#endif
    double best = 0;
    for (int i = 0; i < 16; i++) {
        char path[96], type[32] = "";
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        int ok = fscanf(f, "%31s", type) == 1;
        fclose(f);
        if (!ok || !strcmp(type, "Instruction"))
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        double b = sysfs_size(path);
        best = b > best ? b : best;
    }
    return best;
}

int tl_bandwidth_cache_fit(double bytes, double llc)
{
    if (!(llc > 0) || !(bytes > 0))
        return 0;
    return bytes <= llc ? 2 : bytes <= 2 * llc ? 1 : 0;
}
