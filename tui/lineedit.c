/* One-line editor; see lineedit.h. */
#include "lineedit.h"

#include <string.h>

#include "format.h"

void LineEdit_set(tl_lineedit *e, const char *text)
{
    size_t all = text ? strlen(text) : 0, n = all;
    e->dropped = 0;
    if (n >= TL_LINEEDIT_MAX) {
        n = TL_LINEEDIT_MAX - 1;
        while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80)
            n--;   /* never cut inside a character */
        for (size_t i = n; i < all; i++)
            e->dropped += ((unsigned char)text[i] & 0xC0) != 0x80;
    }
    if (n)
        memcpy(e->buf, text, n);
    e->buf[n] = 0;
    e->len = e->cur = n;
}

static int encode(int32_t cp, char *o)
{
    if (cp < 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return -1;
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

int LineEdit_insert(tl_lineedit *e, int32_t cp)
{
    char b[4];
    int n = encode(cp, b);
    if (n < 0)
        return -1;
    if (e->len + (size_t)n >= TL_LINEEDIT_MAX) {
        e->dropped++;
        return -1;
    }
    memmove(e->buf + e->cur + n, e->buf + e->cur, e->len - e->cur + 1);
    memcpy(e->buf + e->cur, b, (size_t)n);
    e->len += (size_t)n;
    e->cur += (size_t)n;
    return 0;
}

static size_t prevBoundary(const tl_lineedit *e, size_t at)
{
    if (at == 0)
        return 0;
    size_t p = at - 1;
    while (p > 0 && ((unsigned char)e->buf[p] & 0xC0) == 0x80)
        p--;
    return p;
}

static size_t nextBoundary(const tl_lineedit *e, size_t at)
{
    if (at >= e->len)
        return e->len;
    int32_t cp;
    return at + (size_t)Format_utf8Next(e->buf + at, e->len - at, &cp);
}

void LineEdit_left(tl_lineedit *e) { e->cur = prevBoundary(e, e->cur); }
void LineEdit_right(tl_lineedit *e) { e->cur = nextBoundary(e, e->cur); }
void LineEdit_home(tl_lineedit *e) { e->cur = 0; }
void LineEdit_end(tl_lineedit *e) { e->cur = e->len; }

static void cut(tl_lineedit *e, size_t a, size_t b)
{
    memmove(e->buf + a, e->buf + b, e->len - b + 1);
    e->len -= b - a;
    if (e->cur >= b)
        e->cur -= b - a;
    else if (e->cur > a)
        e->cur = a;
}

void LineEdit_backspace(tl_lineedit *e)
{
    if (e->cur > 0)
        cut(e, prevBoundary(e, e->cur), e->cur);
}

void LineEdit_delete(tl_lineedit *e)
{
    if (e->cur < e->len)
        cut(e, e->cur, nextBoundary(e, e->cur));
}

void LineEdit_killEnd(tl_lineedit *e) { cut(e, e->cur, e->len); }
void LineEdit_killStart(tl_lineedit *e) { cut(e, 0, e->cur); }

void LineEdit_view(const tl_lineedit *e, int cols, size_t *from, size_t *to, int *cursor_col)
{
    if (cols < 1)
        cols = 1;
    /* start so that the text before the cursor takes at most cols-1 columns: walked back from
     * the cursor, one character at a time (from the front it was quadratic in the length) */
    size_t start = e->cur;
    int ccol = 0;
    while (start > 0) {
        size_t p = prevBoundary(e, start);
        int w = Format_width(e->buf + p, start - p);
        if (ccol + w > cols - 1)
            break;
        ccol += w;
        start = p;
    }
    int used;
    size_t n = Format_prefixFitting(e->buf + start, e->len - start, cols, &used);
    *from = start;
    *to = start + n;
    *cursor_col = ccol;
}
