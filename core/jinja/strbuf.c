/* The string builder and UTF-8 helpers. A built string carries provenance spans (which of
 * its bytes came from message content), so every copy goes through sb_put_sub. */
#include <string.h>

#include "jinja/internal.h"

void jinja_sb_init(sb *b, J *j)
{
    memset(b, 0, sizeof *b);
    b->j = j;
}

static void sb_reserve(sb *b, size_t more)
{
    if (b->len + more > MAX_STRING)
        jinja_fail(b->j, JE_LIMIT, "output too long (limit %zu MiB)", MAX_STRING >> 20);
    if (b->len + more + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap * 2 : 64;
    while (cap < b->len + more + 1)
        cap *= 2;
    char *p = jinja_alloc(b->j, cap);
    if (b->len)
        memcpy(p, b->p, b->len);
    b->p = p;
    b->cap = cap;
}

void jinja_sb_put(sb *b, const char *s, size_t n)
{
    if (!n)
        return;
    sb_reserve(b, n);
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

void jinja_sb_puts(sb *b, const char *s) { jinja_sb_put(b, s, strlen(s)); }
void jinja_sb_putc(sb *b, char c) { jinja_sb_put(b, &c, 1); }

void jinja_sb_span(sb *b, size_t start, size_t end)
{
    if (start >= end)
        return;
    if (b->nsp && b->sp[b->nsp - 1].end == start) {
        b->sp[b->nsp - 1].end = end;
        return;
    }
    if (b->nsp == b->spcap) {
        size_t cap = b->spcap ? b->spcap * 2 : 8;
        tl_span *n = jinja_alloc(b->j, cap * sizeof *n);
        if (b->nsp)
            memcpy(n, b->sp, b->nsp * sizeof *n);
        b->sp = n;
        b->spcap = cap;
    }
    b->sp[b->nsp].start = start;
    b->sp[b->nsp].end = end;
    b->nsp++;
}

/* bytes [a, e) of s, with their provenance */
void jinja_sb_put_sub(sb *b, const jstr *s, size_t a, size_t e)
{
    size_t at = b->len;
    jinja_sb_put(b, s->p + a, e - a);
    for (size_t i = 0; i < s->nsp; i++) {
        size_t x = s->sp[i].start > a ? s->sp[i].start : a;
        size_t y = s->sp[i].end < e ? s->sp[i].end : e;
        if (x < y)
            jinja_sb_span(b, at + x - a, at + y - a);
    }
}

void jinja_sb_put_str(sb *b, const jstr *s) { jinja_sb_put_sub(b, s, 0, s->len); }

jv jinja_sb_val(sb *b)
{
    jstr *x = jinja_alloc(b->j, sizeof *x);
    if (!b->p) {
        b->p = jinja_alloc(b->j, 1);
        b->cap = 1;
    }
    b->p[b->len] = 0;
    x->p = b->p;
    x->len = b->len;
    x->nsp = b->nsp;
    x->sp = b->sp;
    jv v = {.t = T_STR};
    v.u.s = x;
    return v;
}

jv jinja_v_sub(J *j, const jstr *s, size_t a, size_t e)
{
    if (!s->nsp)
        return jinja_v_str(j, s->p + a, e - a);
    sb b;
    jinja_sb_init(&b, j);
    jinja_sb_put_sub(&b, s, a, e);
    return jinja_sb_val(&b);
}

size_t jinja_u8_next(const char *s, size_t n, size_t i, unsigned *cp)
{
    unsigned char c = (unsigned char)s[i];
    size_t k = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (i + k > n)
        k = 1;
    unsigned v = k == 1 ? c : k == 2 ? c & 0x1F : k == 3 ? c & 0x0F : c & 0x07;
    for (size_t m = 1; m < k; m++)
        v = (v << 6) | ((unsigned char)s[i + m] & 0x3F);
    if (cp)
        *cp = v;
    return k;
}

size_t jinja_u8_count(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            c++;
    return c;
}

/* byte offset of code point index ci (clamped) */
size_t jinja_u8_offset(const char *s, size_t n, size_t ci)
{
    size_t i = 0;
    while (ci > 0 && i < n) {
        i += jinja_u8_next(s, n, i, NULL);
        ci--;
    }
    return i;
}

int jinja_py_isspace(unsigned c)
{
    return (c >= 9 && c <= 13) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
           c == 0x202f || c == 0x205f || c == 0x3000;
}

size_t jinja_ws_fwd(const char *s, size_t i, size_t n)
{
    while (i < n) {
        unsigned cp;
        size_t k = jinja_u8_next(s, n, i, &cp);
        if (!jinja_py_isspace(cp)) break;
        i += k;
    }
    return i;
}

size_t jinja_ws_back(const char *s, size_t lo, size_t e)
{
    while (e > lo) {
        size_t st = e - 1;
        while (st > lo && ((unsigned char)s[st] & 0xC0) == 0x80) st--;
        unsigned cp;
        jinja_u8_next(s, e, st, &cp);
        if (!jinja_py_isspace(cp)) break;
        e = st;
    }
    return e;
}

void jinja_u8_put(sb *b, unsigned cp)
{
    char t[4];
    size_t n;
    if (cp < 0x80) { t[0] = (char)cp; n = 1; }
    else if (cp < 0x800) { t[0] = (char)(0xC0 | cp >> 6); t[1] = (char)(0x80 | (cp & 0x3F)); n = 2; }
    else if (cp < 0x10000) { t[0] = (char)(0xE0 | cp >> 12); t[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); t[2] = (char)(0x80 | (cp & 0x3F)); n = 3; }
    else { t[0] = (char)(0xF0 | cp >> 18); t[1] = (char)(0x80 | ((cp >> 12) & 0x3F)); t[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); t[3] = (char)(0x80 | (cp & 0x3F)); n = 4; }
    jinja_sb_put(b, t, n);
}

int jinja_is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
