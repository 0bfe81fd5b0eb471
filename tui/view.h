/* What the panes draw: a plain snapshot of one conversation, filled from the session API by
 * session_view.c (and by tests with made-up data). Panes read only this; they never call
 * core, so drawing is pure and benchmarkable. */
#ifndef TL_TUI_VIEW_H
#define TL_TUI_VIEW_H

#include <stddef.h>

#define TL_VIEW_MAX_ROWS 64      /* logits rows (TL_MAX_TOP) */
#define TL_VIEW_MAX_STOPS 8
#define TL_VIEW_MAX_EOS 8
#define TL_VIEW_MAX_DTYPES 8

/* Byte classes of the rendered prompt. */
enum {
    VSTYLE_TEMPLATE = 0,   /* text the template itself wrote */
    VSTYLE_CONTENT = 1,    /* copied from a message's content */
    VSTYLE_SPECIAL = 2,    /* a special token literal such as <|start_header_id|> */
    VSTYLE_GENPROMPT = 4,  /* flag: part of the generation prompt (the final assistant header) */
};

typedef struct tl_view_token {
    int id;
    char display[48];        /* visible form (␣ ↵ <0xNN>), maybe shortened */
    int special;
    int generated;           /* 0: from the prompt */
} tl_view_token;

typedef struct tl_view_row {
    int id;
    char display[48];
    float logit, prob_temp, prob_final, cum;
    float prob;                 /* the model's own softmax (T = 1), before any setting */
    int cut_k, cut_p, chosen, forced;
} tl_view_row;

/* One row of the session's dtype table (tl_session_dtype_rows): what one dtype of the weights
 * measured in its last generation. Figures < 0 are unknown. */
typedef struct tl_view_dtype {
    char name[8];
    double weight_bytes;        /* the weights a decode step reads */
    double step_bytes;          /* those plus the KV cache */
    double floor_ms, pace_ms;   /* pace: the metrics' headline, without key-press pauses */
    int generated;
    int current;                /* the dtype running now */
    double floor_lo_ms;         /* the floor's fastest read: a pace under it gets no ratio */
} tl_view_dtype;

/* One row of the Timing pane's batch table (lesson 8: tl_session_batch): B sequences decoding
 * together, each weight read once a step. */
#define TL_VIEW_MAX_BATCH 6
typedef struct tl_view_batch {
    int B;
    double tpot_ms, tokens_per_s, bytes_per_token, over_floor, tokens_ratio;
} tl_view_batch;

typedef struct tl_view {
    /* title */
    char model_name[128];
    int random_weights;         /* tl_model_synthetic's weights: the Timing pane says so */
    char device[32];
    char kernels[24];           /* the CPU's kernel set (avx2, neon, ...): the pace depends on it */
    char precision[8];          /* tl_precision_name: what products read as x (docs/accuracy.md) */
    long long vocab_size;

    /* sampling */
    int greedy;
    float temperature, top_p;
    int top_k;
    /* the settings of the pass whose rows the Logits pane shows (k, p, T change from the next) */
    int rows_greedy, rows_top_k;
    float rows_temperature, rows_top_p;
    int logit_rows;             /* k rows shown (default 10) */

    /* prompt pane */
    const char *system_msg, *user_msg;
    const char *prompt;         /* the render */
    size_t prompt_len;
    const unsigned char *prompt_style;  /* one VSTYLE_* per byte, may be NULL */
    int add_generation_prompt;
    int parse_special_in_content;       /* 0: message content is encoded as plain text */
    long genprompt_at;          /* first byte of the generation prompt; -1: none */

    /* tokens pane */
    const tl_view_token *tokens;
    int n_tokens, n_prompt;     /* n_tokens = prompt + generated */
    int pos;                    /* positions in the KV cache */
    /* bytes of the selected token, for the detail line */
    char sel_bytes[96], sel_text[64];
    char sel_choice[160];       /* generated: how likely it was when chosen */

    /* logits pane: the pass just made (valid when has_logits) */
    int has_logits;
    int logits_step;            /* which generated token these scores chose (1 = first) */
    tl_view_row rows[TL_VIEW_MAX_ROWS];
    int n_rows;
    double entropy, mass_outside;
    int kept;

    /* stream pane */
    const char *printed;        /* what the streamer printed so far */
    const char *held;           /* the held-back buffer */
    char held_reason[96];
    int stream_server;          /* 0: hf TextStreamer, 1: server mode */
    int skip_prompt, skip_special;   /* the streamer's options, as the session runs it */
    char hf_call[73728];        /* the transformers program for the current settings: room for a
                                 * message as long as the editor takes (64 KiB) and the code */

    /* stop pane */
    int eos_ids[TL_VIEW_MAX_EOS];
    char eos_names[TL_VIEW_MAX_EOS][32];
    int n_eos;
    char eos_source[48];        /* "generation_config.json" or "config.json" */
    const char *stops[TL_VIEW_MAX_STOPS];
    int n_stops;
    int budget;
    char budget_source[96];
    int generated;
    int stopped;                /* a stop criterion fired */
    char stop_reason[32];       /* "eos", "stop_string", "max_new_tokens" */
    char stop_detail[256];

    /* timing pane */
    double ttft_ms, template_ms, tokenize_ms, prefill_ms;
    double tpot_ms, decode_tps;
    const double *step_ms;      /* synchronized wall time of each decode pass (steps 1..) */
    double pass_mean_ms;        /* their mean */
    int pass_stats;             /* those passes also gathered the sampler's statistics */
    double pace_ms;             /* the headline: TPOT for one run, the pass mean when stepped */
    int paused_gaps;            /* decode gaps that waited for a key press */
    double work_ms;             /* TPOT with the pauses taken out (pass + sampling per step) */
    double lesson_tps;          /* the lesson's n / (t_last - t_first) */
    int n_step_ms;
    double floor_ms, step_bytes, bandwidth_gbs;
    char bandwidth_source[64];
    /* the floor's reads of the same weights beside the steps (issue 38): their spread, and
     * whether the weights stay in the last-level cache (2 fit, 1 near its size, 0 no) */
    double floor_lo_ms, floor_hi_ms, llc_bytes, weight_bytes;
    int floor_reads, in_cache, below_floor;
    int show_wrong;
    double wrong_prompt_tps;    /* counting the prompt as output */
    double wrong_unsynced_ms;   /* < 0: not applicable (synchronous backend) */
    int async;                  /* passes are queued (a GPU, or the CPU with u) */
    char dtype[8], file_dtype[8];   /* the weights' dtype now, and as loaded */
    tl_view_dtype dtypes[TL_VIEW_MAX_DTYPES];
    int n_dtypes;
    tl_view_batch batches[TL_VIEW_MAX_BATCH];
    int n_batches;
    double batch_roof_gflops, batch_crossover;
    char batch_shape[32];

    /* state */
    int running;
    int queue_put, queue_got;   /* while running: the iterator queue's chunks in and out */
    char next[96];              /* "next: prefill 37 tokens" */
    char message[256];          /* last notice or error, shown on the status line */
} tl_view;

#endif
