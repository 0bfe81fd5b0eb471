/* A short probe of this machine's memory read bandwidth: the denominator of the decode
 * floor (bytes a step must read / bandwidth). Used by `tokenloop bench` and the metrics. */
#ifndef TOKENLOOP_BANDWIDTH_H
#define TOKENLOOP_BANDWIDTH_H

#include <stddef.h>
#include "tokenloop/error.h"

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

#endif
