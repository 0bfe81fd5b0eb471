/* What every subcommand shares: the one-line error and the precision flags. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "tokenloop/synthetic.h"
#include "tokenloop/system.h"

int cli_fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("tokenloop: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return status;
}

int cli_precision_flag(const char *a, tl_precision *p)
{
    tl_precision q;
    if (!strcmp(a, "--exact"))
        q = TL_PRECISION_EXACT;
    else if (!strcmp(a, "--bf16-activations"))
        q = TL_PRECISION_BF16;
    else
        return 0;
    if (*p != TL_PRECISION_MIXED && *p != q)
        return cli_fail(-1, "give at most one of --exact and --bf16-activations");
    *p = q;
    return 1;
}

int cli_engine_flag(const char *a, int *async, tl_precision *p)
{
    if (!strcmp(a, "--async")) {
        *async = 1;
        return 1;
    }
    return cli_precision_flag(a, p);
}

int cli_runs(const char *v, int *runs)
{
    long r;
    if (cli_parse_int(v, 1, 1000, &r))
        return cli_fail(2, "--runs: expected 1..1000, got '%s'", v);
    *runs = (int)r;
    return 0;
}

int cli_help(int argc, char **argv, const char *usage)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return 1;
        }
    return 0;
}

int cli_parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int cli_synthetic_dtype(const char *synthetic, const char *dtype, tl_dtype *got, tl_error *err)
{
    tl_dtype want = TL_BF16;
    char note[256];
    if (dtype)
        tl_dtype_parse(dtype, &want);
    if (tl_synthetic_pick_dtype(synthetic, want, tl_synthetic_mem_available(), got, note, sizeof note, err))
        return -1;
    if (note[0])
        fprintf(stderr, "tokenloop: %s\n", note);
    return 0;
}

int cli_open_synthetic(tl_session **s, tl_session_opts o, const tl_config *cfg, tl_dtype got, tl_error *err)
{
    tl_model *m = NULL;
    o.dtype = got == TL_BF16 ? NULL : tl_dtype_name(got);
    return tl_model_synthetic(&m, cfg, TL_BF16, 0, err) || tl_session_open_model(s, m, 1, &o, err) ? -1 : 0;
}

/* A context too short for the run, said before any weight is filled or read. */
static int too_long(int64_t positions, const tl_config *c)
{
    if (positions <= c->max_position_embeddings)
        return 0;
    return cli_fail(2, "--prompt-tokens + --new-tokens: %lld positions exceed the context of %d",
                    (long long)positions, c->max_position_embeddings);
}

int cli_open_model(tl_model **out, const char *model_dir, const char *synthetic, const char *dtype,
                   unsigned long long seed, int64_t positions, int quiet, double *convert_s)
{
    tl_error err = {{0}};
    tl_model *m = NULL;
    *out = NULL;
    *convert_s = 0;
    if (synthetic) {
        tl_config cfg;
        if (tl_synthetic_config(&cfg, synthetic, &err))
            return cli_fail(2, "--synthetic %s", err.msg);
        if (too_long(positions, &cfg))   /* before filling gigabytes */
            return 2;
        if (!quiet)
            fprintf(stderr, "bench: filling %s with random bf16 weights...\n", synthetic);
        if (tl_model_synthetic(&m, &cfg, TL_BF16, seed, &err))
            return cli_fail(1, "%s", err.msg);
    } else if (tl_model_load(&m, model_dir, &err)) {
        return cli_fail(1, "%s", err.msg);
    }
    tl_dtype want;
    if (dtype && !tl_dtype_parse(dtype, &want) && want != m->layers[0].wq.dtype) {
        tl_model *conv;
        double t0 = tl_now_s();
        if (!quiet)
            fprintf(stderr, "bench: converting the weights to %s...\n", dtype);
        if (tl_model_convert(&conv, m, want, &err)) {
            tl_model_free(m);
            return cli_fail(1, "%s", err.msg);
        }
        tl_model_free(m);   /* the conversion owns its weights, in 2 MiB pages already */
        m = conv;
        *convert_s = tl_now_s() - t0;
    }
    if (too_long(positions, &m->cfg)) {
        tl_model_free(m);
        return 2;
    }
    *out = m;
    return 0;
}
