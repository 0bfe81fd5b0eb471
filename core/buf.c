/* Growing arrays and text (buf.h). */
#include "tokenloop/buf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *tl_grow(void *p, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : first ? first : 1;
    while (c < need) {
        if (c > SIZE_MAX / 2)
            return NULL;
        c *= 2;
    }
    if (c > SIZE_MAX / elem)
        return NULL;
    void *q = realloc(p, c * elem);
    if (q)
        *cap = c;
    return q;
}

/* Room for n more bytes and the NUL; 0 when there is none (the text is then given up). */
static int room(tl_strbuf *b, size_t n)
{
    if (b->oom)
        return 0;
    char *q = tl_grow(b->p, &b->cap, b->n + n + 1, 1, 256);
    if (!q) {
        free(b->p);
        *b = (tl_strbuf){.oom = 1};
        return 0;
    }
    b->p = q;
    return 1;
}

void tl_strbuf_put(tl_strbuf *b, const char *s, size_t n)
{
    if (!room(b, n))
        return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void tl_strbuf_printf(tl_strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0 || !room(b, (size_t)need))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    b->n += (size_t)need;
}
