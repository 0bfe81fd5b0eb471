/* One conversation's generation, one forward pass at a time: the seam that the CLI, the TUI and
 * the lessons drive. A session owns the model, engine, tokenizer, sampler, streamer, stop
 * criteria and metrics, and keeps every step it took so a class can look back, branch
 * (tl_session_force) and step back (tl_session_rewind).
 *
 * Step i chooses generated token i. Step 0 is the prefill of the prompt; step i > 0 decodes
 * generated token i-1. The token that stops generation is never fed back (as in transformers).
 * Strings and pointers returned by accessors stay valid until the next call that changes the
 * session. A session is not thread-safe; tl_iter runs one on its own thread.
 * Every run from step 0 starts the sampler from its seed (same seed, same tokens); stepping on
 * after a rewind continues the random stream, it does not replay it. */
#ifndef TOKENLOOP_SESSION_H
#define TOKENLOOP_SESSION_H

#include <stddef.h>
#include "tokenloop/error.h"
#include "tokenloop/engine.h"
#include "tokenloop/model.h"
#include "tokenloop/sampler.h"
#include "tokenloop/streamer.h"
#include "tokenloop/stop.h"
#include "tokenloop/metrics.h"
#include "tokenloop/template.h"

typedef struct tl_session tl_session;
typedef struct tl_engine tl_engine;
typedef struct tl_tokenizer tl_tokenizer;

typedef struct tl_session_opts {
    const char *model_dir;      /* tl_session_open: the model directory */
    const char *tokenizer_dir;  /* NULL: model_dir if it has tokenizer.json, else assets/tokenizer */
    const char *device;         /* "cpu" (NULL) or "cuda" */
    int threads;                /* <= 0: all cores */
    int capacity;               /* KV positions; <= 0: the engine's default */
    tl_clock_fn clock;          /* NULL: monotonic (tests pass a fake clock) */
    void *clock_ctx;
    double bandwidth_gbs;       /* > 0: use this instead of probing (the floor) */
    int async;                  /* 1: the engine's asynchronous mode (tl_engine_set_async) */
    tl_precision precision;     /* 0: TL_PRECISION_MIXED (tl_engine_set_precision) */
    int kv_bf16;                /* 1: a bf16 KV cache (tl_engine_set_kv_dtype); 0: fp32 */
    const char *dtype;          /* "q8_0", "q4_0", "bf16", ...: convert the weights on load; NULL: as loaded */
    const char *synthetic;      /* the shape's name when the weights are random (tl_model_synthetic) */
    int no_floor_reads;         /* 1: no reads of the weights beside the steps, so no floor on the CPU
                                 * (a server's slots share one memory bus and show no floor) */
} tl_session_opts;
/* The shape's name when the session runs random weights (front ends label them); NULL otherwise. */
const char *tl_session_synthetic(const tl_session *s);

int tl_session_open(tl_session **out, const tl_session_opts *opts, tl_error *err);
/* On a model already loaded (synthetic or shared); own != 0 hands it to the session. */
int tl_session_open_model(tl_session **out, tl_model *m, int own, const tl_session_opts *opts,
                          tl_error *err);
void tl_session_free(tl_session *s);

/* --- the request ---
 * The session holds every setting; front ends read them back with the getters below and never
 * keep copies. Setters that change the prompt (messages, system, generation prompt, template
 * variables, prompt ids) clear the generation. The others apply from the next token and keep
 * what was generated: sampling chooses the next token; budget and stop strings are checked again
 * on the newest token (a stop they caused is undone, one they now cause fires, an EOS stays);
 * streamer settings replay the streamer over the same tokens. */
/* A JSON array of {"role","content"} messages. */
int tl_session_set_messages(tl_session *s, const char *messages_json, tl_error *err);
/* Convenience: [{"role":"system",system}] (when system != NULL) + [{"role":"user",text}]. */
int tl_session_set_user(tl_session *s, const char *system, const char *text, tl_error *err);
/* Replaces the content of the last message with this role, or adds one (a system message
 * first, others last); content NULL removes the system message. */
int tl_session_set_message(tl_session *s, const char *role, const char *content, tl_error *err);
void tl_session_set_add_generation_prompt(tl_session *s, int on);   /* default on */
/* On (the default, as transformers): "<|eot_id|>" typed inside a message is the special token,
 * so content can end a turn early (prompt injection). Off: content is encoded as plain text and
 * only the template's own markers are special. */
void tl_session_set_parse_special_in_content(tl_session *s, int on);
/* Extra template variables (date_string, tools, ...); copied. */
int tl_session_set_template_vars(tl_session *s, const tl_template_var *vars, size_t n, tl_error *err);
/* Raw prompt ids instead of messages (no template, no tokenizing). */
int tl_session_set_prompt_ids(tl_session *s, const int *ids, int n, tl_error *err);

void tl_session_set_sampling(tl_session *s, tl_sampling p);
tl_sampling tl_session_sampling(const tl_session *s);   /* starts as the model's defaults */
void tl_session_set_max_new_tokens(tl_session *s, int n);   /* <= 0: the config's budget */
int tl_session_set_stop_strings(tl_session *s, const char *const *stop, int n, tl_error *err);
void tl_session_set_stream_mode(tl_session *s, tl_stream_mode mode);
/* TextStreamer options; defaults: skip_prompt 1, skip_special 1, clean_up as tokenizer_config. */
void tl_session_set_streamer_opts(tl_session *s, int skip_prompt, int skip_special, int clean_up);
void tl_session_set_top_n(tl_session *s, int n);    /* candidates per step, 1..TL_MAX_TOP; 10 */
/* The figures each step's report computes beyond the choice (TL_REPORT_*, sampler.h): each
 * is a pass over the vocabulary, so a front end asks only for those it shows. TL_REPORT_ALL by
 * default; those not asked for are NaN. */
void tl_session_set_report(tl_session *s, unsigned fields);

/* The settings as they are now. */
const char *tl_session_messages(const tl_session *s);        /* the JSON array; NULL: none/raw ids */
const char *tl_session_message(const tl_session *s, const char *role);  /* last of role; NULL */
int tl_session_add_generation_prompt(const tl_session *s);
int tl_session_parse_special_in_content(const tl_session *s);
int tl_session_max_new_tokens(const tl_session *s);          /* as requested; 0: the config's */
const char *const *tl_session_stop_strings(const tl_session *s, int *n);
tl_stream_mode tl_session_stream_mode(const tl_session *s);
void tl_session_streamer_flags(const tl_session *s, int *skip_prompt, int *skip_special, int *clean_up);
int tl_session_raw_prompt(const tl_session *s);               /* 1: prompt given as ids */
/* First byte of the generation prompt in the render; -1 when off, raw or not a suffix. */
long tl_session_genprompt_at(const tl_session *s);
/* The transformers code that would run this request with these settings (malloc'd). */
char *tl_session_hf_call(const tl_session *s);
/* The settings as one JSON object (messages, add_generation_prompt, sampling, budget, stop
 * strings, streamer), malloc'd: what `generate --json` and `lesson settings` print. */
char *tl_session_settings_json(const tl_session *s);

/* Render and tokenize now (otherwise the first step does it). The request's clock starts here. */
int tl_session_prepare(tl_session *s, tl_error *err);

/* --- stepping --- */
typedef enum { TL_STEP_PREFILL = 0, TL_STEP_DECODE = 1 } tl_step_kind;

typedef struct tl_step {
    int index;
    tl_step_kind kind;
    int n_input;                /* positions this pass appended (the prompt length, then 1) */
    int pos;                    /* KV positions after the pass */
    double ms;                  /* wall time of the pass (synchronized) */
    double t_ms;                /* when the chosen id was on the host, ms since the request start */
    double work_ms;             /* host time of this step alone: pass, sampling, streamer */
    int stats_in_pass;          /* the pass also ranked the scores and summed the softmax for the
                                   sampler (tl_engine_stats): ms includes that work */
    int joined;                 /* made in one run right after the previous step (no pause) */
    tl_sampling sampling;       /* the settings that chose this token */
    int chosen;
    int forced;                 /* chosen by tl_session_force, not the sampler */
    char piece[64];             /* display form of the chosen token (tl_tokenizer_display) */
    tl_sample_report sample;    /* the top-N candidates and what each stage did */
    char *printed;              /* text the streamer printed this step (NUL-terminated) */
    size_t end_at;              /* printed[end_at..]: what end() flushed when generation stopped here */
    char *held;                 /* the streamer's held-back buffer after this step */
    int hold_reason;            /* TL_HOLD_* flags */
    tl_stop_result stop;        /* reason TL_STOP_NONE unless this step stopped generation */
    int batch;                  /* decodes in the pass that made it (tl_session_step_batch); 0: alone */
} tl_step;

enum { TL_SESSION_STEPPED = 0, TL_SESSION_DONE = 1 };

/* Exactly one forward pass. Returns TL_SESSION_STEPPED, TL_SESSION_DONE (already stopped: no
 * pass ran), or -1 on error. *out (may be NULL) receives the step (its strings belong to the
 * session). */
int tl_session_step(tl_session *s, const tl_step **out, tl_error *err);
/* One step for each of n sessions, the decodes in one pass (tl_engine_decode_batch: each
 * weight read once for all of them), as a server steps its requests. The sessions share one
 * model; a session that is done is left out (outs[i] NULL), one whose prompt has not run takes
 * its prefill alone as its step. Sampling, streamer and stop stay each session's own. Returns
 * how many sessions stepped, or -1 with err (batch[i] names the one at fault). */
#define TL_SESSION_BATCH_MAX 256
int tl_session_step_batch(tl_session *const *ss, int n, const tl_step **outs, tl_error *err);
/* Replace the newest step's choice by id (no new pass: the same logits, explained by
 * tl_sampler_explain); the streamer, stop check and metrics follow. After a rewind the logits
 * are recomputed first (one pass). */
int tl_session_force(tl_session *s, int id, tl_error *err);
/* Step back n steps: the KV cache, the streamer, the stop state and the metrics return to where
 * they were after step (n_steps - n - 1). n == n_steps goes back to before the prefill. */
int tl_session_rewind(tl_session *s, int n, tl_error *err);
/* Back to before the prefill; the request (prompt, settings) is kept. */
void tl_session_reset(tl_session *s);

/* Step through to the end. hook (may be NULL) sees each step; non-zero from it cancels.
 * Returns TL_SESSION_DONE when a stop reason fired, TL_GENERATE_CANCELLED, or -1. */
enum { TL_GENERATE_CANCELLED = 2 };
typedef int (*tl_step_hook)(void *ctx, tl_session *s, const tl_step *step);
int tl_generate(tl_session *s, tl_step_hook hook, void *ctx, tl_error *err);
/* Marks the steps that follow as one run (on), as tl_generate does, or ends it: in a run the
 * gap between two steps counts as the pace (a batch runner's steps are one run). */
void tl_session_run_mark(tl_session *s, int on);

/* --- what the TUI shows --- */
int tl_session_done(const tl_session *s);
const tl_stop_result *tl_session_stop(const tl_session *s);      /* reason NONE while running */
int tl_session_n_steps(const tl_session *s);
const tl_step *tl_session_step_at(const tl_session *s, int i);
const char *tl_session_prompt_text(const tl_session *s, size_t *len);  /* NULL for raw ids */
const tl_span *tl_session_prompt_spans(const tl_session *s, size_t *n); /* message content */
const int *tl_session_prompt_ids(const tl_session *s, int *n);
const int *tl_session_generated_ids(const tl_session *s, int *n);
/* The generated text: every generated token's bytes, special tokens dropped when skip_special. */
const char *tl_session_text(const tl_session *s, size_t *len);
/* Everything the streamer has printed. */
const char *tl_session_streamed(const tl_session *s, size_t *len);
const tl_stop_config *tl_session_stop_config(const tl_session *s);  /* EOS ids, budget + source */
tl_metrics_report tl_session_metrics(const tl_session *s);
/* 1 when every decode pass so far also gathered the sampler's statistics (tl_step.stats_in_pass),
 * so their times include that work; 0 when any did not, or there are none. */
int tl_session_pass_stats(const tl_session *s);
const tl_metrics *tl_session_metrics_obj(const tl_session *s);      /* per-token times */
const tl_model *tl_session_model(const tl_session *s);
tl_engine *tl_session_engine(tl_session *s);
const tl_tokenizer *tl_session_tokenizer(const tl_session *s);       /* NULL if none loaded */
/* Last full logits (vocab_size floats) if they are those of the newest step, else NULL. */
const float *tl_session_logits(const tl_session *s);

/* --- the weights' dtype: pace follows bytes ---
 * The matrices as loaded, or converted from them (tl_model_convert; always from the loaded
 * weights, never a conversion of a conversion). A change keeps the request and every setting
 * and clears the generation: the KV cache and the logits came from the other weights, so the
 * next step prefills again. What the other dtypes measured stays in the table below. */
int tl_session_set_dtype(tl_session *s, tl_dtype dt, tl_error *err);
/* Random weights of a published shape (tl_synthetic_config's NAME) run in place of the model
 * opened, which waits aside; NAME NULL brings it back. The conversation and settings stay, the
 * generation and the dtype table go. When memory is short a smaller dtype is taken and *note
 * says so (else it is empty). 0, or -1 with err and the session as it was. */
int tl_session_use_synthetic(tl_session *s, const char *name, char *note, size_t note_size, tl_error *err);
tl_dtype tl_session_dtype(const tl_session *s);
tl_dtype tl_session_file_dtype(const tl_session *s);   /* the loaded matrices' dtype */

#define TL_DTYPE_ROW_IDS 8
typedef struct tl_dtype_row {
    tl_dtype dtype;
    double weight_bytes;        /* weights a decode step reads (the KV cache comes on top) */
    double step_bytes, floor_ms, pace_ms;   /* tl_metrics_report's, -1 when unknown */
    int generated;              /* tokens of that generation; 0: none yet on these weights */
    int first_ids[TL_DTYPE_ROW_IDS], n_first;   /* its first generated ids */
    double floor_lo_ms, floor_hi_ms;   /* the floor's spread (tl_metrics_report's) */
    int floor_reads, in_cache;
} tl_dtype_row;
/* One row per dtype this session has run, in the order first used: the current dtype's row is
 * its generation now (or, while it has none, its last one). Returns the count (<= max). */
int tl_session_dtype_rows(const tl_session *s, tl_dtype_row *rows, int max);

/* --- a batch measurement (tokenloop/batch.h) the front end shows beside the session's own
 * timing: lesson 8 keeps its last one here. A copy; NULL clears it. shape: what it ran on. */
struct tl_batch_report;
int tl_session_set_batch(tl_session *s, const struct tl_batch_report *r, const char *shape, tl_error *err);
const struct tl_batch_report *tl_session_batch(const tl_session *s, const char **shape);

/* --- the iterator streamer: generation on a background thread, text chunks in a queue --- */
typedef struct tl_iter tl_iter;
/* Starts generating on s (prepared or not); s must not be touched until tl_iter_finish. */
int tl_iter_start(tl_iter **out, tl_session *s, tl_error *err);
/* 1: a chunk (*chunk malloc'd, NUL-terminated; free it); 0: end of stream; -1: timeout
 * (timeout_ms < 0 waits for ever). */
int tl_iter_next(tl_iter *it, char **chunk, size_t *len, int timeout_ms);
/* From the consumer: stop at the next token. */
void tl_iter_cancel(tl_iter *it);
/* For the chunk tl_iter_next gave last: when the token that completed it was on the host (the
 * step's t_ms, ms since the request started), so a client can set its own clock beside it. */
double tl_iter_last_ms(const tl_iter *it);
/* A token as the iterator hands it over, with the chunk it completed: the id and the sampler's
 * report (a copy: the session itself must not be read while the iterator runs). */
typedef struct tl_iter_token {
    int id;
    int forced;
    int batch;                  /* decodes in the pass that made it (1: alone or a prefill) */
    tl_sample_report sample;
} tl_iter_token;
/* For the chunk tl_iter_next gave last: the tokens chosen since the chunk before it (several when
 * the streamer held text back, so every token arrives with the text it completed). After
 * tl_iter_next returned 0: the tokens no chunk carried (an EOS that printed nothing, text a stop
 * string cut). Returns the count; *tok is valid until the next tl_iter_next or tl_iter_finish. */
int tl_iter_last_tokens(const tl_iter *it, const tl_iter_token **tok);
/* Chunks the generation thread has put into the queue, and the consumer has taken; the
 * difference is the queue's depth (the TUI shows the seam while it runs). */
void tl_iter_counts(tl_iter *it, int *put, int *got);
/* Joins the thread and frees it. Returns what tl_generate returned (-1 with err on error). */
int tl_iter_finish(tl_iter *it, tl_error *err);

/* --- a batch runner: what a server does with several requests ---
 * One thread steps every iterator started on it together (tl_session_step_batch): each decode
 * pass reads the weights once for all of them. Iterators join and leave between steps; one
 * whose prompt arrives has its prefill alone, as a step of its own. Their sessions share one
 * model. The iterator API is the same as tl_iter_start's. */
typedef struct tl_batcher tl_batcher;
int tl_batcher_create(tl_batcher **out, tl_error *err);
/* Iterators still running are cancelled and finished first; call after tl_iter_finish on each. */
void tl_batcher_free(tl_batcher *b);
int tl_iter_start_batched(tl_iter **out, tl_session *s, tl_batcher *b, tl_error *err);
/* Sequences in the last batched pass (0 before any); for /health and a class's screen. */
int tl_batcher_last_batch(tl_batcher *b);

#endif
