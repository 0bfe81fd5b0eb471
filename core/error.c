#include "tokenloop/error.h"

#include <stdarg.h>
#include <stdio.h>

int tl_error_set(tl_error *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}
