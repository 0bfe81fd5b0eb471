/* A short probe of this machine's memory read bandwidth: the denominator of the decode
 * floor (bytes a step must read / bandwidth). Used by `tokenloop bench` and the metrics. */
#ifndef TOKENLOOP_BANDWIDTH_H
#define TOKENLOOP_BANDWIDTH_H

#include <stddef.h>
#include "tokenloop/error.h"
#include "tokenloop/model.h"

typedef struct tl_bandwidth {
    double bytes_per_s;     /* the best pass: what a streaming reader can get */
    double median_bytes_per_s;
    double seconds;         /* wall time of the whole probe */
    size_t buffer_bytes;
    int threads, passes;
} tl_bandwidth;

/* Reads a buffer far larger than the caches with `threads` threads (<= 0: all cores) for
 * about budget_s seconds (<= 0: 0.3 s) and reports the read rate. */
int tl_bandwidth_probe(tl_bandwidth *out, int threads, double budget_s, tl_error *err);

/* Memory that a decode step reads: a weight matrix, a norm. */
typedef struct tl_mem_region {
    const void *p;
    size_t n;
} tl_mem_region;

/* Reads every byte of the n regions once, in order, with `threads` threads (each a contiguous
 * share of every region, as the matrix products split rows; fewer if threads cannot start) and
 * returns the seconds it took. Timed between decode steps over the model's own weights,
 * it is the floor at that moment: the same bytes, in the same pages, by a plain read loop. */
double tl_bandwidth_read(const tl_mem_region *r, int n, int threads);

/* The weights a decode step of m reads, as regions for tl_bandwidth_read (the KV cache is the
 * engine's), in the order the step reads them, so neither the step nor the read finds the
 * other's last bytes in the cache: every layer's norms and matrices, the final norm, the lm_head
 * and one embedding row when the lm_head is not the embedding. Their sum is m->weight_bytes.
 * r holds at least tl_bandwidth_model_max(m) entries; returns the count. */
int tl_bandwidth_model_max(const tl_model *m);
int tl_bandwidth_model_regions(const tl_model *m, tl_mem_region *r);

/* This CPU's last-level cache in bytes: the largest data or unified cache that sysfs lists for
 * cpu0 (/sys/devices/system/cpu/cpu0/cache/index*; macOS: sysctl hw.l2/l3cachesize); 0 when unknown. */
double tl_bandwidth_llc_bytes(void);
/* Where bytes read on every step come from: 2 when they fit the last-level cache (a step reads
 * them from cache, so a DRAM floor does not bind it); 1 when within twice its size (part of
 * each step is still served from cache); 0 when they reach memory, or the cache is unknown. */
int tl_bandwidth_cache_fit(double bytes, double llc_bytes);

#endif
