/* TTFT, TPOT and decode speed measured as the lesson defines them, the two wrong readings it
 * warns about, and the memory-bandwidth floor. The clock is injectable so tests use a fake one. */
#ifndef TOKENLOOP_METRICS_H
#define TOKENLOOP_METRICS_H

/* Milliseconds on a monotonic clock. */
typedef double (*tl_clock_fn)(void *ctx);
double tl_clock_monotonic_ms(void *ctx);

/* The class material's reference: Llama 3.1 8B bf16 (16 GB) on an H100 (3.35 TB/s). */
#define TL_REF_FLOOR_BYTES 16e9
#define TL_REF_FLOOR_BW 3.35e12

typedef struct tl_metrics tl_metrics;

tl_metrics *tl_metrics_create(tl_clock_fn clock, void *clock_ctx);  /* clock NULL: monotonic */
void tl_metrics_free(tl_metrics *m);
double tl_metrics_now(const tl_metrics *m);

/* A new request starts now (clears everything). */
void tl_metrics_start(tl_metrics *m);
/* The prompt was rendered / tokenized now (the time since the previous mark is charged to it). */
void tl_metrics_templated(tl_metrics *m);
void tl_metrics_tokenized(tl_metrics *m, int prompt_tokens);
/* ms of wall time that belong to no request's work (a read that measures the floor between
 * steps) leave the request's clock: every later stamp is ms earlier. */
void tl_metrics_exclude(tl_metrics *m, double ms);
/* The request is run at `now` (a tl_metrics_now reading): the time since the last mark (a prompt
 * rendered and tokenized, then shown while a class read it) leaves the clock, so TTFT runs from
 * the request, not from when the prompt appeared. Only before the first token; later it does
 * nothing. */
void tl_metrics_resume(tl_metrics *m, double now);
/* A generated id is on the host now. pass_ms: the synchronized time of the pass that made it;
 * unsynced_ms: the same pass timed without synchronizing (< 0: not applicable). */
void tl_metrics_token(tl_metrics *m, double pass_ms, double unsynced_ms);
/* The same, saying how the token was made: t_begin is the clock reading when the step began
 * (its work is now - t_begin: the pass and the sampling; < 0: the work is pass_ms); joined is 0
 * when the step waited for someone (a key press) after the previous token, so its wall-clock
 * gap holds a pause. Returns the step's work in ms. */
double tl_metrics_token_gap(tl_metrics *m, double pass_ms, double unsynced_ms, double t_begin, int joined);
/* Forget the last n tokens (rewind). */
void tl_metrics_drop(tl_metrics *m, int n);
/* The median of v[0..n-1], n >= 1; sorts v in place. */
double tl_median(double *v, int n);
/* Bytes a decode step reads, and the bandwidth (bytes/s) to divide them by (<= 0: unknown). */
void tl_metrics_set_floor(tl_metrics *m, double step_bytes, double bandwidth_bytes_per_s);
/* A plain read of `bytes` of the weights, timed beside the steps, took `seconds`: the memory
 * rate at that moment (tl_bandwidth_read). Once the request has reads, the floor divides by
 * their median rate instead of set_floor's figure, and its spread is their range. A new
 * request (tl_metrics_start) forgets them. */
void tl_metrics_floor_read(tl_metrics *m, double bytes, double seconds);
int tl_metrics_floor_reads(const tl_metrics *m);
/* The last-level cache and the weights read every step, to say whether a DRAM floor binds. */
void tl_metrics_set_cache(tl_metrics *m, double llc_bytes, double weight_bytes);

typedef struct tl_metrics_report {
    int prompt_tokens, generated;
    double template_ms, tokenize_ms;   /* -1 when the prompt was given as ids */
    double ttft_ms;                    /* request start -> first generated id on the host; -1 */
    double tpot_ms;                    /* (t_last - t_first) / (generated - 1); -1 if < 2 */
    double decode_tokens_per_s;        /* (generated - 1) / (t_last - t_first); -1 if < 2 */
    double total_ms;                   /* request start -> last id */
    /* Wrong reading 1: prompt tokens counted as output, over the whole request. */
    double prompt_as_output_tokens_per_s;
    /* Wrong reading 2: decode passes timed without synchronizing, the median over the passes;
     * unsynced_applicable is 0 on a synchronous backend (the CPU), and then there is no number. */
    int unsynced_applicable;
    double unsynced_tpot_ms;
    double step_bytes, bandwidth_gbs, floor_ms;    /* -1 when the bandwidth is unknown */
    double tpot_over_floor;                        /* pace / floor; -1 when either is unknown,
                                                    * or when the pace is below the floor. With
                                                    * floor reads: the median over floor_pairs of
                                                    * (decode pass / the read right after it), as
                                                    * `tokenloop bench` gives it */
    int floor_pairs;
    /* The floor's spread: step_bytes over the fastest and the slowest read (both floor_ms for a
     * single figure); floor_reads: how many reads beside the steps (0: set_floor's figure). */
    double floor_lo_ms, floor_hi_ms;
    int floor_reads;
    /* 1 when TPOT / floor is below floor_lo_ms / floor_ms (under the floor by more than the
     * reads' spread): a read cannot be slower than the step that reads the same bytes and more,
     * so this is a measurement problem, and no ratio is given. */
    int below_floor;
    /* the ratio below_floor was decided from (pairs' median, or pace / floor_ms), given even when
     * below_floor withholds tpot_over_floor; -1 when there is none */
    double floor_ratio_measured;
    double llc_bytes, weight_bytes;   /* 0 when unknown */
    int in_cache;                     /* tl_bandwidth_cache_fit of the weights: 2 fit, 1 near, 0 no */
    /* The headline pace: tpot_ms when the tokens came in one run; when any gap waited for a
     * key press (paused_gaps > 0), tpot_ms holds those pauses and the pace is the mean
     * synchronized decode pass (pass_mean_ms) instead. */
    double pace_ms;
    int paused_gaps;
    double pass_mean_ms;               /* mean synchronized decode pass, tokens 1.. */
    /* TPOT with the pauses taken out: a gap made in one run is the wall clock, a gap that
     * waited counts only the step's own work (pass + sampling). */
    double work_ms;
    /* The lesson's own definition: generated / (t_last - t_first). It counts n tokens over
     * n - 1 gaps (the first token came from the prefill), so it reads n/(n-1) too fast. */
    double lesson_tokens_per_s;
    double ref_floor_ms;                           /* 16 GB / 3.35 TB/s */
} tl_metrics_report;

tl_metrics_report tl_metrics_report_get(const tl_metrics *m);

/* Two sets of repeated, interleaved measurements of the same quantity, compared so that a
 * sentence chosen from the outcome cannot contradict the numbers: a is LOWER than b when a's
 * upper quartile is below b's lower quartile (the middle halves do not overlap) and the medians
 * differ by more than same_within (a fraction of the smaller median); HIGHER the other way;
 * SAME when the medians differ by at most same_within; UNDECIDED otherwise (the medians differ,
 * the spreads overlap: this machine's noise hides the answer). Needs 3 or more a side. */
typedef enum { TL_CMP_UNDECIDED, TL_CMP_LOWER, TL_CMP_SAME, TL_CMP_HIGHER } tl_cmp_outcome;
typedef struct tl_cmp {
    tl_cmp_outcome outcome;
    double med_a, med_b;        /* medians */
    double lo_a, hi_a, lo_b, hi_b;   /* the extremes: the spread shown */
    double q1_a, q3_a, q1_b, q3_b;   /* the quartiles the rule reads */
    int n_a, n_b;
} tl_cmp;
tl_cmp tl_compare(const double *a, int n_a, const double *b, int n_b, double same_within);
const char *tl_cmp_outcome_name(tl_cmp_outcome o);   /* "lower", "same", "higher", "undecided" */
/* Time (ms since the request start) the i-th generated id reached the host; -1 if none. */
double tl_metrics_token_time(const tl_metrics *m, int i);
/* The i-th token's pass timed both ways, as tl_metrics_token got them; -1 if none (and the
 * unsynchronized one is < 0 where it does not apply). */
double tl_metrics_token_pass_ms(const tl_metrics *m, int i);
double tl_metrics_token_unsynced_ms(const tl_metrics *m, int i);
int tl_metrics_count(const tl_metrics *m);

#endif
