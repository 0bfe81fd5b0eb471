/* The access log: one line a request, stamped in UTC, on stderr or --log FILE. */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "internal.h"

void serve_log_line(server *srv, const char *fmt, ...)
{
    if (srv->no_log) return;
    char line[600];
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    size_t n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%SZ ", &tm);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - n, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&srv->log_mu);
    FILE *f = srv->log ? srv->log : stderr;
    fprintf(f, "%s\n", line);
    fflush(f);
    pthread_mutex_unlock(&srv->log_mu);
}
