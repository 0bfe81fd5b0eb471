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
/* A generated id is on the host now. pass_ms: the synchronized time of the pass that made it;
 * unsynced_ms: the same pass timed without synchronizing (< 0: not applicable). */
void tl_metrics_token(tl_metrics *m, double pass_ms, double unsynced_ms);
/* Forget the last n tokens (rewind). */
void tl_metrics_drop(tl_metrics *m, int n);
/* Bytes a decode step reads, and the bandwidth (bytes/s) to divide them by (<= 0: unknown). */
void tl_metrics_set_floor(tl_metrics *m, double step_bytes, double bandwidth_bytes_per_s);

typedef struct tl_metrics_report {
    int prompt_tokens, generated;
    double template_ms, tokenize_ms;   /* -1 when the prompt was given as ids */
    double ttft_ms;                    /* request start -> first generated id on the host; -1 */
    double tpot_ms;                    /* (t_last - t_first) / (generated - 1); -1 if < 2 */
    double decode_tokens_per_s;        /* (generated - 1) / (t_last - t_first); -1 if < 2 */
    double total_ms;                   /* request start -> last id */
    /* Wrong reading 1: prompt tokens counted as output, over the whole request. */
    double prompt_as_output_tokens_per_s;
    /* Wrong reading 2: decode passes timed without synchronizing; unsynced_applicable is 0 on
     * a synchronous backend (the CPU), and then there is no number. */
    int unsynced_applicable;
    double unsynced_tpot_ms;
    double step_bytes, bandwidth_gbs, floor_ms;    /* -1 when the bandwidth is unknown */
    double tpot_over_floor;                        /* -1 when either is unknown */
    double ref_floor_ms;                           /* 16 GB / 3.35 TB/s */
} tl_metrics_report;

tl_metrics_report tl_metrics_report_get(const tl_metrics *m);
/* Time (ms since the request start) the i-th generated id reached the host; -1 if none. */
double tl_metrics_token_time(const tl_metrics *m, int i);
int tl_metrics_count(const tl_metrics *m);

#endif
