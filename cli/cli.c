/* What every subcommand shares: the one-line error and the precision flags. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"

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
