/* The pace law, measured: a decode step reads every weight once, so its time follows the bytes
 * and cannot beat a plain read of them. The lessons on the pause and the pace run this on random
 * weights of a published shape, whose bytes reach memory (the bundled model fits in a cache). */
#ifndef TOKENLOOP_PACE_H
#define TOKENLOOP_PACE_H

#include "tokenloop/engine.h"
#include "tokenloop/error.h"
#include "tokenloop/model.h"

#define TL_PACE_MODELS 4
#define TL_PACE_RUNS 20
#define TL_PACE_STEPS 32

typedef struct tl_pace_opts {
    int prompt_tokens, steps, runs;   /* each run: a prefill, then `steps` decodes (2..TL_PACE_STEPS) */
    int threads;                      /* <= 0: all cores */
    tl_precision precision;
    unsigned long long seed;          /* the prompt's ids */
} tl_pace_opts;

typedef struct tl_pace_row {
    tl_dtype dtype;                   /* the model's matrices' */
    double weight_bytes, step_bytes;  /* the weights; those plus the KV cache at a run's last step */
    /* each run's prefill, its first decode, and the median of its later decodes */
    double prefill_ms[TL_PACE_RUNS], first_ms[TL_PACE_RUNS], decode_ms[TL_PACE_RUNS];
    double read_ms[TL_PACE_RUNS * TL_PACE_STEPS];   /* a plain read of the weights after each decode */
    double over[TL_PACE_RUNS * TL_PACE_STEPS];      /* each later decode ÷ the read right after it */
    int n_reads, n_over;
    /* medians (and the reads' extremes) */
    double tpot_ms, prefill_med_ms, first_med_ms, floor_ms, floor_lo_ms, floor_hi_ms, over_floor;
} tl_pace_row;

typedef struct tl_pace_report {
    int n, runs, steps, prompt_tokens;
    tl_pace_row rows[TL_PACE_MODELS];
} tl_pace_report;

/* Runs each of the n models (1..TL_PACE_MODELS, one shape: the same prompt) `runs` times, the
 * models taking turns run by run, the first of each round moving on by one, so a drift of the
 * machine's speed falls on all. out is large (about 50 KB): allocate it. 0, or -1 with err. */
int tl_pace_measure(const tl_model *const *models, int n, const tl_pace_opts *o, tl_pace_report *out,
                    tl_error *err);

#endif
