/* Subcommands of the tokenloop program. Each returns the process exit status:
 * 0 success, 1 bad input or failure at run time, 2 bad usage. */
#ifndef TOKENLOOP_COMMANDS_H
#define TOKENLOOP_COMMANDS_H

#include <stdint.h>

#include "tokenloop/engine.h"
#include "tokenloop/session.h"

int cmd_info(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_template(int argc, char **argv);
int cmd_tui(int argc, char **argv);
int cmd_lesson(int argc, char **argv);
/* `tokenloop serve`: built when libmicrohttpd is found (TL_HAVE_SERVE). */
int cmd_serve(int argc, char **argv);
/* `tokenloop bench --tokenizer ...`: cmd_bench hands over to this one, without the flag. */
int cmd_bench_tokenizer(int argc, char **argv);
/* `tokenloop bench --template ...`: likewise. */
int cmd_bench_template(int argc, char **argv);
/* `tokenloop bench --sampler ...`: likewise. */
int cmd_bench_sampler(int argc, char **argv);
/* `tokenloop bench --batch ...`: likewise. */
int cmd_bench_batch(int argc, char **argv);

/* "tokenloop: <what>" on stderr; returns status. */
int cli_fail(int status, const char *fmt, ...);
/* --exact or --bf16-activations (docs/accuracy.md): 1 with *p set, 0 when a is neither, -1
 * (said on stderr) when *p already holds the other one. */
int cli_precision_flag(const char *a, tl_precision *p);
/* The engine's flags without a value, --async and the precision flags: 1 when a is one (set in
 * *async or *p), 0 when it is not, -1 (said) as cli_precision_flag. */
int cli_engine_flag(const char *a, int *async, tl_precision *p);
/* --runs N (1..1000) of the tokenizer and template benchmarks: 0 with *runs, or 2 (said). */
int cli_runs(const char *v, int *runs);
/* 1 when an argument is --help or -h, with usage printed on stdout (the caller exits 0). */
int cli_help(int argc, char **argv, const char *usage);
/* s as a whole decimal integer in [lo, hi] into *out: 0, or -1 (nothing said) when it is not one. */
int cli_parse_int(const char *s, long lo, long hi, long *out);
/* A session on random weights of a published shape (tokenloop/synthetic.h), in two steps so that
 * the caller can say what is coming before the fill: cli_synthetic_dtype picks the dtype the
 * weights run in (`dtype`, else bf16; a smaller one, said on stderr, when memory is short), and
 * cli_open_synthetic fills bf16 weights of shape cfg and opens the session on them, o's dtype
 * set to got (converted by the session). 0, or -1 with err. */
int cli_synthetic_dtype(const char *synthetic, const char *dtype, tl_dtype *got, tl_error *err);
int cli_open_synthetic(tl_session **s, tl_session_opts o, const tl_config *cfg, tl_dtype got, tl_error *err);
/* The model a benchmark runs: a checkpoint (model_dir), or a published shape with random bf16
 * weights (synthetic, seeded); converted to dtype when given (NULL: as loaded). positions: what
 * the run needs, refused before any weight is filled when the context is shorter. quiet: no
 * progress lines. *convert_s: the conversion's seconds (0: none). 0, or an exit status (said). */
int cli_open_model(tl_model **out, const char *model_dir, const char *synthetic, const char *dtype,
                   unsigned long long seed, int64_t positions, int quiet, double *convert_s);
#define CLI_PRECISION_USAGE \
    "  --exact            fp32 activations in every product with bf16 weights (twice the\n" \
    "                     arithmetic of the default on AVX-512 BF16; the logits transformers\n" \
    "                     gives in float32). Default: only q/k/v keep them, the other products\n" \
    "                     round them to bf16 (docs/accuracy.md)\n" \
    "  --bf16-activations round them in every product, q/k/v too, as llama.cpp does\n"

#endif
