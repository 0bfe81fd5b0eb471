/* Why servers batch, measured: B sequences decode together (tl_engine_decode_batch), so each
 * weight matrix is read once a step for all of them. `tokenloop bench --batch` and the lesson
 * "Why servers batch" run this. */
#ifndef TOKENLOOP_BATCH_H
#define TOKENLOOP_BATCH_H

#include "tokenloop/engine.h"
#include "tokenloop/error.h"
#include "tokenloop/model.h"

#define TL_BATCH_SIZES 16
#define TL_BATCH_STEPS 256

typedef struct tl_batch_opts {
    int sizes[TL_BATCH_SIZES], n_sizes;   /* batch sizes, 1..256; the first is the ratios' base */
    int prompt_tokens, steps;             /* each sequence's prompt; decode steps (<= TL_BATCH_STEPS) */
    int threads;                          /* <= 0: all cores */
    tl_precision precision;
    unsigned long long seed;              /* the prompts' ids */
    void (*progress)(void *ctx, int step, int steps);   /* optional, after each round */
    void *progress_ctx;
} tl_batch_opts;

typedef struct tl_batch_row {
    int B;
    double step_ms[TL_BATCH_STEPS];   /* each round's step: each stream's TPOT */
    double floor_ms[TL_BATCH_STEPS];  /* the weights read by a plain loop right after it */
    double tpot_ms, floor_med_ms;     /* medians */
    double roof_ms;                   /* the products' arithmetic at the measured peak */
    double bytes_per_token;           /* the weights' share plus its own KV rows (mean) */
    double vs_first, over_floor;      /* medians of the rounds' ratios: to the first size, to the floor */
} tl_batch_row;

typedef struct tl_batch_report {
    int n, steps;
    tl_batch_row rows[TL_BATCH_SIZES];
    double peak_flops;                /* the fastest products' FLOP/s seen: a 64-token prefill's (best
                                       * of 2) or a batched step's, whichever is higher */
    double crossover;                 /* the B whose arithmetic at that rate takes the first floor's time */
    double weight_bytes, product_params;
} tl_batch_report;

/* n ordinary token ids drawn from seed, BOS first when the model has one: the reproducible
 * prompt of bench and bench --batch. */
void tl_batch_prompt_ids(int *ids, int n, unsigned long long seed, const tl_config *c);

/* The sizes alternate round by round (a shared machine's drifting memory rate moves them
 * alike). out is large (about 70 KB): allocate it. 0, or -1 with err. */
int tl_batch_measure(const tl_model *m, const tl_batch_opts *o, tl_batch_report *out, tl_error *err);

#endif
