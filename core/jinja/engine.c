/* A Jinja2 interpreter for chat templates, configured as transformers' apply_chat_template
 * configures Jinja2: trim_blocks, lstrip_blocks, loop controls, an immutable sandbox, default
 * Undefined, tojson as json.dumps(ensure_ascii=False). Everything a render allocates lives in
 * one arena, and errors unwind with longjmp, so a failing render cannot leak. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <limits.h>
#include <locale.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wctype.h>

#include <utf8proc.h>

#include "jinja/jinja.h"

enum {
    MAX_DEPTH = 500,                 /* nested calls/expressions/blocks */
    MAX_PARSE_DEPTH = 200,
};
static const size_t MAX_STRING = 32u << 20;        /* one string or the output */
static const size_t MAX_ARENA = 512u << 20;
static const long long MAX_ITERS = 1000000;         /* loop iterations per render */

/* ---------------------------------------------------------------- arena */

typedef struct ablk {
    struct ablk *next;
    size_t used, cap;
    max_align_t data[];
} ablk;

typedef struct arena {
    ablk *head;
    size_t total;
} arena;

static void arena_free(arena *a)
{
    for (ablk *b = a->head, *n; b; b = n) {
        n = b->next;
        free(b);
    }
    a->head = NULL;
    a->total = 0;
}

/* returns NULL past the limit or when malloc fails */
static void *arena_alloc(arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (!n)
        n = 16;
    if (!a->head || a->head->cap - a->head->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        if (a->total + cap > MAX_ARENA)
            return NULL;
        ablk *b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->cap = cap;
        b->used = 0;
        if (a->head && n > 65536) { /* keep filling the current block */
            b->next = a->head->next;
            a->head->next = b;
            b->used = n;
            a->total += cap;
            return (char *)b->data;
        }
        b->next = a->head;
        a->head = b;
        a->total += cap;
    }
    void *p = (char *)a->head->data + a->head->used;
    a->head->used += n;
    return p;
}

/* ---------------------------------------------------------------- values */

enum { T_UNDEF, T_NONE, T_BOOL, T_INT, T_FLOAT, T_STR, T_LIST, T_DICT, T_NS, T_FUNC };

typedef struct jstr {
    size_t len;
    const char *p;
    size_t nsp;
    tl_span *sp;
} jstr;

struct jlist;
struct jdict;
struct jfunc;

typedef struct jv {
    int t;
    union {
        int b;
        long long i;
        double f;
        jstr *s;
        struct jlist *l;
        struct jdict *d;
        struct jfunc *fn;
        const char *undef; /* the message of the error its use raises */
    } u;
} jv;

typedef struct jlist {
    size_t n, cap;
    jv *it;
    int tuple;
    int gen; /* a lazy filter's result: Jinja2 has a generator there */
} jlist;

typedef struct jdict {
    size_t n, cap;
    jv *k, *v;
} jdict;

struct node;
struct frame;

enum { F_BUILTIN, F_METHOD, F_MACRO, F_CALLER };

typedef struct jfunc {
    int kind;
    const char *name;
    jv self;
    struct node *macro;
    struct frame *closure;
} jfunc;

typedef struct frame {
    struct frame *parent;
    jdict vars;
} frame;

/* ---------------------------------------------------------------- AST */

enum {
    E_CONST, E_NAME, E_ATTR, E_ITEM, E_SLICE, E_CALL, E_FILTER, E_TEST, E_BIN, E_NEG, E_POS,
    E_NOT, E_AND, E_OR, E_CMP, E_COND, E_LIST, E_TUPLE, E_DICT, E_CONCAT, E_BLOCKINPUT,
    S_TEXT, S_OUT, S_IF, S_FOR, S_SET, S_SETBLOCK, S_MACRO, S_CALLBLOCK, S_FILTERBLOCK, S_BREAK,
    S_CONTINUE, S_WITH, S_BODY
};

typedef struct node {
    int k, op, line, col;
    struct node *a, *b, *c, *d, *next;
    struct node **v, **v2;
    int nv, nv2;
    const char *name, *attr;
    const char **names;
    int nnames;
    jv val;
} node;

struct tl_template {
    arena ar;
    node *body;
};

/* ---------------------------------------------------------------- render state */

typedef struct J {
    arena *ar;
    jmp_buf jb;
    tl_error *err;
    int depth;
    long long iters;
    int line;
    frame *root;
    jstr *block_input;
} J;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3), noreturn))
#endif
static void jfail(J *j, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tl_error_set(j->err, "template:%d: %s", j->line, msg);
    longjmp(j->jb, 1);
}

#if defined(__GNUC__)
__attribute__((noreturn))
#endif
static void int_overflow(J *j, long long x, const char *op, long long y)
{
    jfail(j, "integer overflow: %lld %s %lld does not fit in 64 bits (Python's integers have no limit; "
          "tokenloop's are 64-bit)", x, op, y);
}

/* raise_exception: the message alone is the error, as transformers reports it */
static void jraise(J *j, const char *msg, size_t n)
{
    tl_error_set(j->err, "%.*s", (int)(n > 1000 ? 1000 : n), msg);
    longjmp(j->jb, 1);
}

static void *jalloc(J *j, size_t n)
{
    void *p = arena_alloc(j->ar, n);
    if (!p)
        jfail(j, "out of memory (render limit %zu MiB)", MAX_ARENA >> 20);
    return p;
}

static jv v_undef(const char *msg) { jv v = {.t = T_UNDEF}; v.u.undef = msg; return v; }
static jv v_none(void) { jv v = {.t = T_NONE}; return v; }
static jv v_bool(int b) { jv v = {.t = T_BOOL}; v.u.b = !!b; return v; }
static jv v_int(long long i) { jv v = {.t = T_INT}; v.u.i = i; return v; }
static jv v_float(double f) { jv v = {.t = T_FLOAT}; v.u.f = f; return v; }

static char *jstrdup(J *j, const char *s, size_t n)
{
    char *p = jalloc(j, n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

static jv v_str(J *j, const char *s, size_t n)
{
    jstr *x = jalloc(j, sizeof *x);
    x->p = jstrdup(j, s, n);
    x->len = n;
    x->nsp = 0;
    x->sp = NULL;
    jv v = {.t = T_STR};
    v.u.s = x;
    return v;
}

static jv v_cstr(J *j, const char *s) { return v_str(j, s, strlen(s)); }

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static const char *jprintf(J *j, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return jstrdup(j, buf, strlen(buf));
}

static jlist *list_new(J *j, size_t cap)
{
    jlist *l = jalloc(j, sizeof *l);
    l->n = 0;
    l->cap = cap ? cap : 4;
    l->it = jalloc(j, l->cap * sizeof(jv));
    l->tuple = 0;
    l->gen = 0;
    return l;
}

static void list_push(J *j, jlist *l, jv v)
{
    if (l->n == l->cap) {
        jv *n = jalloc(j, 2 * l->cap * sizeof(jv));
        memcpy(n, l->it, l->n * sizeof(jv));
        l->it = n;
        l->cap *= 2;
    }
    l->it[l->n++] = v;
}

static jv v_list(jlist *l) { jv v = {.t = T_LIST}; v.u.l = l; return v; }

static jdict *dict_new(J *j)
{
    jdict *d = jalloc(j, sizeof *d);
    memset(d, 0, sizeof *d);
    return d;
}

static jv v_dict(jdict *d) { jv v = {.t = T_DICT}; v.u.d = d; return v; }

/* ---------------------------------------------------------------- string builder */

typedef struct sb {
    J *j;
    char *p;
    size_t len, cap;
    tl_span *sp;
    size_t nsp, spcap;
} sb;

static void sb_init(sb *b, J *j)
{
    memset(b, 0, sizeof *b);
    b->j = j;
}

static void sb_reserve(sb *b, size_t more)
{
    if (b->len + more > MAX_STRING)
        jfail(b->j, "output too long (limit %zu MiB)", MAX_STRING >> 20);
    if (b->len + more + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap * 2 : 64;
    while (cap < b->len + more + 1)
        cap *= 2;
    char *p = jalloc(b->j, cap);
    if (b->len)
        memcpy(p, b->p, b->len);
    b->p = p;
    b->cap = cap;
}

static void sb_put(sb *b, const char *s, size_t n)
{
    if (!n)
        return;
    sb_reserve(b, n);
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void sb_puts(sb *b, const char *s) { sb_put(b, s, strlen(s)); }
static void sb_putc(sb *b, char c) { sb_put(b, &c, 1); }

static void sb_span(sb *b, size_t start, size_t end)
{
    if (start >= end)
        return;
    if (b->nsp && b->sp[b->nsp - 1].end == start) {
        b->sp[b->nsp - 1].end = end;
        return;
    }
    if (b->nsp == b->spcap) {
        size_t cap = b->spcap ? b->spcap * 2 : 8;
        tl_span *n = jalloc(b->j, cap * sizeof *n);
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
static void sb_put_sub(sb *b, const jstr *s, size_t a, size_t e)
{
    size_t at = b->len;
    sb_put(b, s->p + a, e - a);
    for (size_t i = 0; i < s->nsp; i++) {
        size_t x = s->sp[i].start > a ? s->sp[i].start : a;
        size_t y = s->sp[i].end < e ? s->sp[i].end : e;
        if (x < y)
            sb_span(b, at + x - a, at + y - a);
    }
}

static void sb_put_str(sb *b, const jstr *s) { sb_put_sub(b, s, 0, s->len); }

static jv sb_val(sb *b)
{
    jstr *x = jalloc(b->j, sizeof *x);
    if (!b->p) {
        b->p = jalloc(b->j, 1);
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

static jv v_sub(J *j, const jstr *s, size_t a, size_t e)
{
    if (!s->nsp)
        return v_str(j, s->p + a, e - a);
    sb b;
    sb_init(&b, j);
    sb_put_sub(&b, s, a, e);
    return sb_val(&b);
}

/* ---------------------------------------------------------------- UTF-8 helpers */

static size_t u8_next(const char *s, size_t n, size_t i, unsigned *cp)
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

static size_t u8_count(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            c++;
    return c;
}

/* byte offset of code point index ci (clamped) */
static size_t u8_offset(const char *s, size_t n, size_t ci)
{
    size_t i = 0;
    while (ci > 0 && i < n) {
        i += u8_next(s, n, i, NULL);
        ci--;
    }
    return i;
}

static int py_isspace(unsigned c)
{
    return (c >= 9 && c <= 13) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
           c == 0x202f || c == 0x205f || c == 0x3000;
}

static void u8_put(sb *b, unsigned cp)
{
    char t[4];
    size_t n;
    if (cp < 0x80) { t[0] = (char)cp; n = 1; }
    else if (cp < 0x800) { t[0] = (char)(0xC0 | cp >> 6); t[1] = (char)(0x80 | (cp & 0x3F)); n = 2; }
    else if (cp < 0x10000) { t[0] = (char)(0xE0 | cp >> 12); t[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); t[2] = (char)(0x80 | (cp & 0x3F)); n = 3; }
    else { t[0] = (char)(0xF0 | cp >> 18); t[1] = (char)(0x80 | ((cp >> 12) & 0x3F)); t[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); t[3] = (char)(0x80 | (cp & 0x3F)); n = 4; }
    sb_put(b, t, n);
}

/* ---------------------------------------------------------------- Python formatting */

/* The flags, width and precision of a %-spec ("%-08.3"); width and precision -1 when absent */
static void spec_parse(const char *spec, int *left, int *zero, char *sign, long *width, long *prec)
{
    const char *p = spec + 1;
    *left = *zero = 0;
    *sign = 0;
    for (; *p && strchr("#0- +", *p); p++) {
        if (*p == '-') *left = 1;
        else if (*p == '0') *zero = 1;
        else if (*p == '+') *sign = '+';
        else if (*p == ' ' && *sign != '+') *sign = ' ';
    }
    *width = *p >= '0' && *p <= '9' ? strtol(p, (char **)&p, 10) : -1;
    *prec = *p == '.' ? strtol(p + 1, NULL, 10) : -1;
}

/* head (sign and prefix) + body padded to the spec's width as Python's %-format does: spaces on
 * the left, on the right with '-', zeros between head and body with '0' (numbers only) */
static void py_pad(sb *r, const char *spec, const char *body, size_t n, const char *head)
{
    int left, zero;
    char sign;
    long width, prec;
    spec_parse(spec, &left, &zero, &sign, &width, &prec);
    size_t hn = strlen(head), len = hn + u8_count(body, n);
    size_t pad = width > 0 && (size_t)width > len ? (size_t)width - len : 0;
    if (pad > MAX_STRING) jfail(r->j, "format too wide");
    if (!left && !(zero && hn))
        for (size_t i = 0; i < pad; i++) sb_putc(r, ' ');
    sb_puts(r, head);
    if (!left && zero && hn)
        for (size_t i = 0; i < pad; i++) sb_putc(r, '0');
    sb_put(r, body, n);
    if (left)
        for (size_t i = 0; i < pad; i++) sb_putc(r, ' ');
}

/* %d %i %u %o %x %X of a 64-bit integer as Python formats it: a minus sign, not two's
 * complement, for negative numbers in every base; '#' gives 0o / 0x / 0X; precision is a
 * minimum number of digits */
static void py_int_format(sb *r, const char *spec, char conv, long long v)
{
    int left, zero;
    char sign;
    long width, prec;
    spec_parse(spec, &left, &zero, &sign, &width, &prec);
    unsigned long long m = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    const char *digits = conv == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
    unsigned base = conv == 'o' ? 8 : conv == 'x' || conv == 'X' ? 16 : 10;
    char buf[96];
    size_t n = 0;
    do {
        buf[sizeof buf - 1 - n++] = digits[m % base];
        m /= base;
    } while (m);
    while (prec > 0 && n < (size_t)prec && n < 64) buf[sizeof buf - 1 - n++] = '0';
    char head[8];
    size_t h = 0;
    if (v < 0) head[h++] = '-';
    else if (sign) head[h++] = sign;
    if (strchr(spec, '#') && base != 10) {
        head[h++] = '0';
        head[h++] = conv == 'o' ? 'o' : conv;
    }
    head[h] = 0;
    if (zero && !left && !h) {   /* zeros with no sign or prefix: still numbers, so pad with 0 */
        long len = (long)n;
        while (width > len && n < sizeof buf - 1) buf[sizeof buf - 1 - n++] = '0', len++;
    }
    py_pad(r, spec, buf + sizeof buf - n, n, head);
}

/* repr(float) as Python writes it: the shortest digits that round-trip */
static void fmt_float(char *out, size_t cap, double d)
{
    if (isnan(d)) { snprintf(out, cap, "nan"); return; }
    if (isinf(d)) { snprintf(out, cap, d < 0 ? "-inf" : "inf"); return; }
    char tmp[64];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, d);
        if (strtod(tmp, NULL) == d)
            break;
    }
    char digits[32];
    int nd = 0, neg = 0;
    const char *p = tmp;
    if (*p == '-') { neg = 1; p++; }
    for (; *p && *p != 'e'; p++)
        if (isdigit((unsigned char)*p))
            digits[nd++] = *p;
    int e = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = 0;
    char *o = out;
    size_t left = cap;
#define PUT(...) do { int w_ = snprintf(o, left, __VA_ARGS__); if (w_ < 0 || (size_t)w_ >= left) return; o += w_; left -= (size_t)w_; } while (0)
    if (neg) PUT("-");
    if (e >= -4 && e < 16) {
        if (e >= 0) {
            for (int i = 0; i <= e; i++) PUT("%c", i < nd ? digits[i] : '0');
            PUT(".");
            if (nd > e + 1) PUT("%s", digits + e + 1); else PUT("0");
        } else {
            PUT("0.");
            for (int i = 0; i < -e - 1; i++) PUT("0");
            PUT("%s", digits);
        }
    } else {
        PUT("%c", digits[0]);
        if (nd > 1) PUT(".%s", digits + 1);
        PUT("e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
    }
#undef PUT
}

static const char *type_name(jv v)
{
    switch (v.t) {
    case T_UNDEF: return "Undefined";
    case T_NONE: return "NoneType";
    case T_BOOL: return "bool";
    case T_INT: return "int";
    case T_FLOAT: return "float";
    case T_STR: return "str";
    case T_LIST: return v.u.l->gen ? "generator" : v.u.l->tuple ? "tuple" : "list";
    case T_DICT: return "dict";
    case T_NS: return "Namespace";
    default: return "function";
    }
}

static void put_repr(sb *b, jv v);

/* Python's str.isprintable for one character: not a control, format, surrogate, private-use
 * or unassigned character, and no separator but the ASCII space (utf8proc's Unicode tables) */
static int py_printable(unsigned cp)
{
    if (cp == ' ') return 1;
    switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO: case UTF8PROC_CATEGORY_CN: case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP: case UTF8PROC_CATEGORY_ZS:
        return 0;
    default:
        return 1;
    }
}

/* repr(str) as Python writes it (how a list or dict of strings prints): \xNN, \uNNNN or
 * \UNNNNNNNN for what is not printable */
static void put_str_repr(sb *b, const jstr *s)
{
    int has_sq = memchr(s->p, '\'', s->len) != NULL, has_dq = memchr(s->p, '"', s->len) != NULL;
    char q = has_sq && !has_dq ? '"' : '\'';
    sb_putc(b, q);
    for (size_t i = 0; i < s->len;) {
        unsigned cp;
        size_t k = u8_next(s->p, s->len, i, &cp);
        if (cp == (unsigned char)q || cp == '\\') { sb_putc(b, '\\'); sb_putc(b, (char)cp); }
        else if (cp == '\n') sb_puts(b, "\\n");
        else if (cp == '\r') sb_puts(b, "\\r");
        else if (cp == '\t') sb_puts(b, "\\t");
        else if (!py_printable(cp)) {
            char t[16];
            snprintf(t, sizeof t, cp < 0x100 ? "\\x%02x" : cp < 0x10000 ? "\\u%04x" : "\\U%08x", cp);
            sb_puts(b, t);
        } else
            sb_put(b, s->p + i, k);
        i += k;
    }
    sb_putc(b, q);
}

/* str(v) */
static void put_str(sb *b, jv v)
{
    char t[64];
    switch (v.t) {
    case T_UNDEF: return;
    case T_NONE: sb_puts(b, "None"); return;
    case T_BOOL: sb_puts(b, v.u.b ? "True" : "False"); return;
    case T_INT: snprintf(t, sizeof t, "%lld", v.u.i); sb_puts(b, t); return;
    case T_FLOAT: fmt_float(t, sizeof t, v.u.f); sb_puts(b, t); return;
    case T_STR: sb_put_str(b, v.u.s); return;
    case T_NS:
        sb_puts(b, "<Namespace ");
        { jv d = v; d.t = T_DICT; put_repr(b, d); }
        sb_puts(b, ">");
        return;
    case T_FUNC: sb_puts(b, "<function "); sb_puts(b, v.u.fn->name ? v.u.fn->name : "?"); sb_puts(b, ">"); return;
    default: put_repr(b, v);
    }
}

static void put_repr(sb *b, jv v)
{
    if (++b->j->depth > MAX_DEPTH)
        jfail(b->j, "value nested too deeply");
    switch (v.t) {
    case T_STR: put_str_repr(b, v.u.s); break;
    case T_LIST: {
        jlist *l = v.u.l;
        if (l->gen) { sb_puts(b, "<generator object>"); break; }
        sb_putc(b, l->tuple ? '(' : '[');
        for (size_t i = 0; i < l->n; i++) {
            if (i) sb_puts(b, ", ");
            put_repr(b, l->it[i]);
        }
        if (l->tuple && l->n == 1) sb_putc(b, ',');
        sb_putc(b, l->tuple ? ')' : ']');
        break;
    }
    case T_DICT: {
        jdict *d = v.u.d;
        sb_putc(b, '{');
        for (size_t i = 0; i < d->n; i++) {
            if (i) sb_puts(b, ", ");
            put_repr(b, d->k[i]);
            sb_puts(b, ": ");
            put_repr(b, d->v[i]);
        }
        sb_putc(b, '}');
        break;
    }
    case T_UNDEF: sb_puts(b, "Undefined"); break;
    default: put_str(b, v);
    }
    b->j->depth--;
}

static jv to_str(J *j, jv v)
{
    if (v.t == T_STR)
        return v;
    sb b;
    sb_init(&b, j);
    put_str(&b, v);
    return sb_val(&b);
}

/* ---------------------------------------------------------------- Python semantics */

static int truthy(jv v)
{
    switch (v.t) {
    case T_UNDEF: case T_NONE: return 0;
    case T_BOOL: return v.u.b;
    case T_INT: return v.u.i != 0;
    case T_FLOAT: return v.u.f != 0;
    case T_STR: return v.u.s->len != 0;
    case T_LIST: return v.u.l->gen || v.u.l->n != 0;
    case T_DICT: return v.u.d->n != 0;
    default: return 1;
    }
}

static int is_num(jv v) { return v.t == T_BOOL || v.t == T_INT || v.t == T_FLOAT; }
static double num_f(jv v) { return v.t == T_FLOAT ? v.u.f : v.t == T_INT ? (double)v.u.i : (double)v.u.b; }
static long long num_i(jv v) { return v.t == T_INT ? v.u.i : v.u.b; }

static int py_eq(jv a, jv b)
{
    if (is_num(a) && is_num(b)) {
        if (a.t == T_FLOAT || b.t == T_FLOAT)
            return num_f(a) == num_f(b);
        return num_i(a) == num_i(b);
    }
    if (a.t != b.t) {
        if ((a.t == T_DICT && b.t == T_NS) || (a.t == T_NS && b.t == T_DICT))
            return 0;
        return 0;
    }
    switch (a.t) {
    case T_UNDEF: case T_NONE: return 1;
    case T_STR: return a.u.s->len == b.u.s->len && !memcmp(a.u.s->p, b.u.s->p, a.u.s->len);
    case T_LIST:
        if (a.u.l->gen || b.u.l->gen) return a.u.l == b.u.l;
        if (a.u.l->tuple != b.u.l->tuple || a.u.l->n != b.u.l->n) return 0;
        for (size_t i = 0; i < a.u.l->n; i++)
            if (!py_eq(a.u.l->it[i], b.u.l->it[i])) return 0;
        return 1;
    case T_DICT: {
        if (a.u.d->n != b.u.d->n) return 0;
        for (size_t i = 0; i < a.u.d->n; i++) {
            size_t k;
            for (k = 0; k < b.u.d->n; k++)
                if (py_eq(a.u.d->k[i], b.u.d->k[k])) break;
            if (k == b.u.d->n || !py_eq(a.u.d->v[i], b.u.d->v[k])) return 0;
        }
        return 1;
    }
    case T_NS: return a.u.d == b.u.d;
    case T_FUNC: return a.u.fn == b.u.fn;
    }
    return 0;
}

static const char *undef_msg(jv v) { return v.u.undef ? v.u.undef : "undefined value"; }

/* <0, 0, >0; TypeError where Python has none */
static int py_cmp(J *j, jv a, jv b, const char *op)
{
    if (a.t == T_UNDEF) jfail(j, "%s", undef_msg(a));
    if (b.t == T_UNDEF) jfail(j, "%s", undef_msg(b));
    if (is_num(a) && is_num(b)) {
        if (a.t == T_FLOAT || b.t == T_FLOAT) {
            double x = num_f(a), y = num_f(b);
            return x < y ? -1 : x > y ? 1 : 0;
        }
        long long x = num_i(a), y = num_i(b);
        return x < y ? -1 : x > y ? 1 : 0;
    }
    if (a.t == T_STR && b.t == T_STR) {
        size_t n = a.u.s->len < b.u.s->len ? a.u.s->len : b.u.s->len;
        int c = memcmp(a.u.s->p, b.u.s->p, n);
        if (c) return c;
        return a.u.s->len < b.u.s->len ? -1 : a.u.s->len > b.u.s->len;
    }
    if (a.t == T_LIST && b.t == T_LIST) {
        for (size_t i = 0; i < a.u.l->n && i < b.u.l->n; i++) {
            if (py_eq(a.u.l->it[i], b.u.l->it[i])) continue;
            return py_cmp(j, a.u.l->it[i], b.u.l->it[i], op);
        }
        return a.u.l->n < b.u.l->n ? -1 : a.u.l->n > b.u.l->n;
    }
    jfail(j, "'%s' not supported between instances of '%s' and '%s'", op, type_name(a), type_name(b));
}

/* ---------------------------------------------------------------- dicts */

static long dict_find(jdict *d, jv k)
{
    for (size_t i = 0; i < d->n; i++)
        if (py_eq(d->k[i], k) && (d->k[i].t == T_STR) == (k.t == T_STR))
            return (long)i;
    return -1;
}

static long dict_find_s(jdict *d, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < d->n; i++)
        if (d->k[i].t == T_STR && d->k[i].u.s->len == n && !memcmp(d->k[i].u.s->p, s, n))
            return (long)i;
    return -1;
}

static void dict_set(J *j, jdict *d, jv k, jv v)
{
    long i = dict_find(d, k);
    if (i >= 0) {
        d->v[i] = v;
        return;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 8;
        jv *nk = jalloc(j, cap * sizeof(jv)), *nv = jalloc(j, cap * sizeof(jv));
        if (d->n) {
            memcpy(nk, d->k, d->n * sizeof(jv));
            memcpy(nv, d->v, d->n * sizeof(jv));
        }
        d->k = nk;
        d->v = nv;
        d->cap = cap;
    }
    d->k[d->n] = k;
    d->v[d->n] = v;
    d->n++;
}

static void dict_set_s(J *j, jdict *d, const char *k, jv v) { dict_set(j, d, v_cstr(j, k), v); }

/* ---------------------------------------------------------------- JSON in */

typedef struct jp {
    J *j;
    const char *s, *e;
    int depth;
} jp;

static void jp_ws(jp *p)
{
    while (p->s < p->e && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r'))
        p->s++;
}

static jv jp_value(jp *p, int mark, int content_key);

static unsigned jp_hex4(jp *p)
{
    if (p->e - p->s < 4) jfail(p->j, "bad JSON: short \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = *p->s++;
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else jfail(p->j, "bad JSON: bad \\u escape");
    }
    return v;
}

static jv jp_string(jp *p, int mark)
{
    sb b;
    sb_init(&b, p->j);
    p->s++;
    for (;;) {
        if (p->s >= p->e) jfail(p->j, "bad JSON: unterminated string");
        char c = *p->s++;
        if (c == '"') break;
        if (c != '\\') { sb_putc(&b, c); continue; }
        if (p->s >= p->e) jfail(p->j, "bad JSON: unterminated string");
        c = *p->s++;
        switch (c) {
        case 'n': sb_putc(&b, '\n'); break;
        case 't': sb_putc(&b, '\t'); break;
        case 'r': sb_putc(&b, '\r'); break;
        case 'b': sb_putc(&b, '\b'); break;
        case 'f': sb_putc(&b, '\f'); break;
        case '/': case '\\': case '"': sb_putc(&b, c); break;
        case 'u': {
            unsigned cp = jp_hex4(p);
            if (cp >= 0xD800 && cp < 0xDC00 && p->e - p->s >= 6 && p->s[0] == '\\' && p->s[1] == 'u') {
                const char *save = p->s;
                p->s += 2;
                unsigned lo = jp_hex4(p);
                if (lo >= 0xDC00 && lo < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                else p->s = save;
            }
            u8_put(&b, cp);
            break;
        }
        default: jfail(p->j, "bad JSON: bad escape");
        }
    }
    if (mark)
        sb_span(&b, 0, b.len);
    return sb_val(&b);
}

static jv jp_value(jp *p, int mark, int content_key)
{
    jp_ws(p);
    if (p->s >= p->e) jfail(p->j, "bad JSON: unexpected end");
    if (++p->depth > 200) jfail(p->j, "bad JSON: nested too deeply");
    jv r;
    char c = *p->s;
    if (c == '"') {
        r = jp_string(p, mark && content_key);
    } else if (c == '{') {
        jdict *d = dict_new(p->j);
        p->s++;
        jp_ws(p);
        if (p->s < p->e && *p->s == '}') p->s++;
        else for (;;) {
            jp_ws(p);
            if (p->s >= p->e || *p->s != '"') jfail(p->j, "bad JSON: expected a key");
            jv k = jp_string(p, 0);
            jp_ws(p);
            if (p->s >= p->e || *p->s != ':') jfail(p->j, "bad JSON: expected ':'");
            p->s++;
            int ck = k.u.s->len == 7 && !memcmp(k.u.s->p, "content", 7);
            int tk = content_key && k.u.s->len == 4 && !memcmp(k.u.s->p, "text", 4);
            jv v = jp_value(p, mark, ck || tk);
            dict_set(p->j, d, k, v);
            jp_ws(p);
            if (p->s < p->e && *p->s == ',') { p->s++; continue; }
            if (p->s < p->e && *p->s == '}') { p->s++; break; }
            jfail(p->j, "bad JSON: expected ',' or '}'");
        }
        r = v_dict(d);
    } else if (c == '[') {
        jlist *l = list_new(p->j, 4);
        p->s++;
        jp_ws(p);
        if (p->s < p->e && *p->s == ']') p->s++;
        else for (;;) {
            list_push(p->j, l, jp_value(p, mark, content_key));
            jp_ws(p);
            if (p->s < p->e && *p->s == ',') { p->s++; continue; }
            if (p->s < p->e && *p->s == ']') { p->s++; break; }
            jfail(p->j, "bad JSON: expected ',' or ']'");
        }
        r = v_list(l);
    } else if (p->e - p->s >= 4 && !memcmp(p->s, "true", 4)) { p->s += 4; r = v_bool(1); }
    else if (p->e - p->s >= 5 && !memcmp(p->s, "false", 5)) { p->s += 5; r = v_bool(0); }
    else if (p->e - p->s >= 4 && !memcmp(p->s, "null", 4)) { p->s += 4; r = v_none(); }
    else if (c == '-' || (c >= '0' && c <= '9')) {
        const char *st = p->s;
        int isf = 0;
        if (*p->s == '-') p->s++;
        while (p->s < p->e && (isdigit((unsigned char)*p->s) || *p->s == '.' || *p->s == 'e' || *p->s == 'E' || *p->s == '+' || *p->s == '-')) {
            if (*p->s == '.' || *p->s == 'e' || *p->s == 'E') isf = 1;
            p->s++;
        }
        char tmp[64];
        size_t n = (size_t)(p->s - st);
        if (n >= sizeof tmp) jfail(p->j, "bad JSON: number too long");
        memcpy(tmp, st, n);
        tmp[n] = 0;
        char *end;
        if (!isf) {
            errno = 0;
            long long i = strtoll(tmp, &end, 10);
            if (*end) jfail(p->j, "bad JSON: bad number");
            if (errno) jfail(p->j, "bad JSON: integer %s does not fit in 64 bits (tokenloop's integers are 64-bit)", tmp);
            r = v_int(i);
        } else {
            double f = strtod(tmp, &end);
            if (*end) jfail(p->j, "bad JSON: bad number");
            r = v_float(f);
        }
    } else
        jfail(p->j, "bad JSON: unexpected '%c'", c);
    p->depth--;
    return r;
}

static jv json_parse(J *j, const char *s, int mark)
{
    jp p = {j, s, s + strlen(s), 0};
    jv v = jp_value(&p, mark, 0);
    jp_ws(&p);
    if (p.s != p.e) jfail(j, "bad JSON: trailing text");
    return v;
}

/* ---------------------------------------------------------------- JSON out (json.dumps) */

typedef struct jdump {
    const char *indent; /* NULL: none */
    const char *item_sep, *key_sep;
    int sort_keys, ensure_ascii;
} jdump;

static void json_str_a(sb *b, const char *s, size_t n, int ascii)
{
    sb_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (ascii && (c >= 0x7f)) {
            unsigned cp;
            size_t k = u8_next(s, n, i, &cp);
            char t[16];
            if (cp >= 0x10000)
                snprintf(t, sizeof t, "\\u%04x\\u%04x", 0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF));
            else
                snprintf(t, sizeof t, "\\u%04x", cp);
            sb_puts(b, t);
            i += k - 1;
            continue;
        }
        if (c == '"') sb_puts(b, "\\\"");
        else if (c == '\\') sb_puts(b, "\\\\");
        else if (c == '\n') sb_puts(b, "\\n");
        else if (c == '\r') sb_puts(b, "\\r");
        else if (c == '\t') sb_puts(b, "\\t");
        else if (c == '\b') sb_puts(b, "\\b");
        else if (c == '\f') sb_puts(b, "\\f");
        else if (c < 0x20) { char t[8]; snprintf(t, sizeof t, "\\u%04x", c); sb_puts(b, t); }
        else sb_putc(b, (char)c);
    }
    sb_putc(b, '"');
}

static void json_str(sb *b, const char *s, size_t n) { json_str_a(b, s, n, 0); }

static void json_nl(sb *b, const jdump *o, int level)
{
    sb_putc(b, '\n');
    for (int i = 0; i < level; i++) sb_puts(b, o->indent);
}

static void json_scalar_key(sb *b, jv k, int ascii)
{
    char t[64];
    switch (k.t) {
    case T_STR: json_str_a(b, k.u.s->p, k.u.s->len, ascii); return;
    case T_BOOL: json_str(b, k.u.b ? "true" : "false", k.u.b ? 4 : 5); return;
    case T_NONE: json_str(b, "null", 4); return;
    case T_INT: snprintf(t, sizeof t, "%lld", k.u.i); json_str(b, t, strlen(t)); return;
    case T_FLOAT: fmt_float(t, sizeof t, k.u.f); json_str(b, t, strlen(t)); return;
    default: jfail(b->j, "keys must be str, int, float, bool or None, not %s", type_name(k));
    }
}

static void json_dump(sb *b, jv v, const jdump *o, int level)
{
    J *j = b->j;
    if (++j->depth > MAX_DEPTH) jfail(j, "value nested too deeply for tojson");
    char t[64];
    switch (v.t) {
    case T_NONE: sb_puts(b, "null"); break;
    case T_BOOL: sb_puts(b, v.u.b ? "true" : "false"); break;
    case T_INT: snprintf(t, sizeof t, "%lld", v.u.i); sb_puts(b, t); break;
    case T_FLOAT:
        if (isnan(v.u.f)) sb_puts(b, "NaN");
        else if (isinf(v.u.f)) sb_puts(b, v.u.f < 0 ? "-Infinity" : "Infinity");
        else { fmt_float(t, sizeof t, v.u.f); sb_puts(b, t); }
        break;
    case T_STR: json_str_a(b, v.u.s->p, v.u.s->len, o->ensure_ascii); break;
    case T_LIST: {
        jlist *l = v.u.l;
        if (l->gen) jfail(j, "Object of type generator is not JSON serializable");
        if (!l->n) { sb_puts(b, "[]"); break; }
        sb_putc(b, '[');
        for (size_t i = 0; i < l->n; i++) {
            if (i) sb_puts(b, o->item_sep);
            if (o->indent) json_nl(b, o, level + 1);
            json_dump(b, l->it[i], o, level + 1);
        }
        if (o->indent) json_nl(b, o, level);
        sb_putc(b, ']');
        break;
    }
    case T_DICT: {
        jdict *d = v.u.d;
        if (!d->n) { sb_puts(b, "{}"); break; }
        size_t *ord = jalloc(j, d->n * sizeof *ord);
        for (size_t i = 0; i < d->n; i++) ord[i] = i;
        if (o->sort_keys) /* insertion sort: dicts here are small */
            for (size_t i = 1; i < d->n; i++)
                for (size_t k = i; k > 0 && py_cmp(j, d->k[ord[k - 1]], d->k[ord[k]], "<") > 0; k--) {
                    size_t x = ord[k]; ord[k] = ord[k - 1]; ord[k - 1] = x;
                }
        sb_putc(b, '{');
        for (size_t i = 0; i < d->n; i++) {
            if (i) sb_puts(b, o->item_sep);
            if (o->indent) json_nl(b, o, level + 1);
            json_scalar_key(b, d->k[ord[i]], o->ensure_ascii);
            sb_puts(b, o->key_sep);
            json_dump(b, d->v[ord[i]], o, level + 1);
        }
        if (o->indent) json_nl(b, o, level);
        sb_putc(b, '}');
        break;
    }
    default:
        jfail(j, "Object of type %s is not JSON serializable", type_name(v));
    }
    j->depth--;
}

/* ---------------------------------------------------------------- lexer */

enum { K_DATA, K_VBEGIN, K_VEND, K_BBEGIN, K_BEND, K_NAME, K_STR, K_INT, K_FLOAT, K_OP, K_EOF };

typedef struct tok {
    int t;
    const char *s;
    size_t n;
    int line, col;
    jv val;
} tok;

typedef struct P {
    J j;
    const char *src;
    size_t len;
    tok *toks;
    size_t ntok, cap, i;
    int depth;
    size_t lc_pos; /* line/col tracking: the lexer asks in increasing order, so one pass */
    int lc_line;
    size_t lc_bol;
    size_t lc_col; /* code points from lc_bol to lc_pos */
} P;

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4), noreturn))
#endif
static void pfail(P *p, const tok *t, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (t && t->t != K_EOF) {
        int n = (int)(t->n > 40 ? 40 : t->n);
        while (n > 0 && (size_t)n < t->n && ((unsigned char)t->s[n] & 0xC0) == 0x80)
            n--;   /* do not cut a character in two */
        char txt[48];
        int k = 0;
        for (int i = 0; i < n; i++)
            txt[k++] = t->s[i] == '\n' ? ' ' : t->s[i];
        txt[k] = 0;
        tl_error_set(p->j.err, "template:%d:%d: %s near '%s'", t->line, t->col, msg, txt);
    } else if (t)
        tl_error_set(p->j.err, "template:%d:%d: %s at the end of the template", t->line, t->col, msg);
    else
        tl_error_set(p->j.err, "template: %s", msg);
    longjmp(p->j.jb, 1);
}

static void linecol(P *p, size_t pos, int *line, int *col)
{
    if (pos < p->lc_pos) { /* an error path looking back: count again from the start */
        p->lc_pos = 0;
        p->lc_line = 1;
        p->lc_bol = 0;
        p->lc_col = 0;
    }
    /* counting the column afresh from the line's start for every token made a long
     * one-line template quadratic (1 MB: 21 s) */
    while (p->lc_pos < pos) {
        unsigned char c = (unsigned char)p->src[p->lc_pos];
        if (c == '\n') {
            p->lc_line++;
            p->lc_bol = p->lc_pos + 1;
            p->lc_col = 0;
        } else if ((c & 0xC0) != 0x80) {
            p->lc_col++;
        }
        p->lc_pos++;
    }
    *line = p->lc_line;
    *col = (int)p->lc_col + 1;
}

static tok *emit(P *p, int t, size_t at, size_t n)
{
    if (p->ntok == p->cap) {
        /* the tokens live only until the parse ends: outside the template's arena, which
         * would keep every outgrown copy for the template's life */
        size_t cap = p->cap ? p->cap * 2 : 256;
        tok *nt = cap <= MAX_ARENA / sizeof *nt ? realloc(p->toks, cap * sizeof *nt) : NULL;
        if (!nt)
            pfail(p, NULL, "out of memory for the tokens of the template");
        p->toks = nt;
        p->cap = cap;
    }
    tok *k = &p->toks[p->ntok++];
    memset(k, 0, sizeof *k);
    k->t = t;
    k->s = p->src + at;
    k->n = n;
    linecol(p, at, &k->line, &k->col);
    return k;
}

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

/* Python's \s and str.strip() count Unicode whitespace */
static size_t ws_fwd(const char *s, size_t i, size_t n)
{
    while (i < n) {
        unsigned cp;
        size_t k = u8_next(s, n, i, &cp);
        if (!py_isspace(cp)) break;
        i += k;
    }
    return i;
}

static size_t ws_back(const char *s, size_t lo, size_t e)
{
    while (e > lo) {
        size_t st = e - 1;
        while (st > lo && ((unsigned char)s[st] & 0xC0) == 0x80) st--;
        unsigned cp;
        u8_next(s, e, st, &cp);
        if (!py_isspace(cp)) break;
        e = st;
    }
    return e;
}

static jv decode_string(P *p, const char *s, size_t n, tok *t)
{
    sb b;
    sb_init(&b, &p->j);
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\' || i + 1 >= n) { sb_putc(&b, s[i]); continue; }
        char c = s[++i];
        unsigned cp;
        int digits;
        switch (c) {
        case '\n': break;
        case '\\': sb_putc(&b, '\\'); break;
        case '\'': sb_putc(&b, '\''); break;
        case '"': sb_putc(&b, '"'); break;
        case 'a': sb_putc(&b, '\a'); break;
        case 'b': sb_putc(&b, '\b'); break;
        case 'f': sb_putc(&b, '\f'); break;
        case 'n': sb_putc(&b, '\n'); break;
        case 'r': sb_putc(&b, '\r'); break;
        case 't': sb_putc(&b, '\t'); break;
        case 'v': sb_putc(&b, '\v'); break;
        case 'x': digits = 2; goto hex;
        case 'u': digits = 4; goto hex;
        case 'U': digits = 8;
        hex:
            cp = 0;
            for (int k = 0; k < digits; k++) {
                if (i + 1 >= n || !isxdigit((unsigned char)s[i + 1]))
                    pfail(p, t, "invalid \\%c escape in a string", c);
                char h = s[++i];
                cp = cp * 16 + (unsigned)(isdigit((unsigned char)h) ? h - '0' : (tolower((unsigned char)h) - 'a' + 10));
            }
            if (cp > 0x10FFFF) pfail(p, t, "invalid \\U escape in a string");
            u8_put(&b, cp);
            break;
        default:
            if (c >= '0' && c <= '7') {
                cp = (unsigned)(c - '0');
                for (int k = 0; k < 2 && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '7'; k++)
                    cp = cp * 8 + (unsigned)(s[++i] - '0');
                u8_put(&b, cp);
            } else {
                sb_putc(&b, '\\');
                sb_putc(&b, c);
            }
        }
    }
    return sb_val(&b);
}

static const char *const OPS2[] = {"//", "**", "==", "!=", ">=", "<="};
static const char OPS1[] = "+-/*%~[](){}=><.:|,;";

/* the inside of {{ }} or {% %}; returns the position after the end tag */
static size_t lex_tag(P *p, size_t pos, int block, int *line_starting)
{
    const char *s = p->src;
    size_t n = p->len;
    char stack[256];
    int sp = 0;
    for (;;) {
        pos = ws_fwd(s, pos, n);
        if (pos >= n) {
            tok t = {.t = K_EOF};
            linecol(p, n, &t.line, &t.col);
            pfail(p, &t, "unexpected end of template, expected '%s'", block ? "%}" : "}}");
        }
        if (!sp) {
            const char *end = block ? "%}" : "}}";
            if ((s[pos] == '-' || (block && s[pos] == '+')) && pos + 2 < n + 0 && !memcmp(s + pos + 1, end, 2)) {
                emit(p, block ? K_BEND : K_VEND, pos, 3);
                size_t e = pos + 3;
                *line_starting = 0;
                if (s[pos] == '-') {
                    e = ws_fwd(s, e, n);
                    *line_starting = e > pos + 3 && s[e - 1] == '\n';
                }
                return e;
            }
            if (pos + 1 < n && !memcmp(s + pos, end, 2)) {
                emit(p, block ? K_BEND : K_VEND, pos, 2);
                size_t e = pos + 2;
                *line_starting = 0;
                if (block && e < n && s[e] == '\n') {
                    e++;
                    *line_starting = 1;
                }
                return e;
            }
        }
        char c = s[pos];
        if (isdigit((unsigned char)c)) {
            size_t e = pos;
            int isf = 0;
            while (e < n && (isdigit((unsigned char)s[e]) || (s[e] == '_' && e + 1 < n && isdigit((unsigned char)s[e + 1])))) e++;
            if (e + 1 < n && s[e] == '.' && isdigit((unsigned char)s[e + 1]) && !(pos > 0 && s[pos - 1] == '.')) {
                isf = 1;
                e++;
                while (e < n && (isdigit((unsigned char)s[e]) || (s[e] == '_' && e + 1 < n && isdigit((unsigned char)s[e + 1])))) e++;
            }
            if (e < n && (s[e] == 'e' || s[e] == 'E') && !(pos > 0 && s[pos - 1] == '.')) {
                size_t f = e + 1;
                if (f < n && (s[f] == '+' || s[f] == '-')) f++;
                if (f < n && isdigit((unsigned char)s[f])) {
                    isf = 1;
                    e = f;
                    while (e < n && isdigit((unsigned char)s[e])) e++;
                }
            }
            char tmp[128];
            size_t k = 0;
            for (size_t i = pos; i < e && k + 1 < sizeof tmp; i++)
                if (s[i] != '_') tmp[k++] = s[i];
            tmp[k] = 0;
            tok *t = emit(p, isf ? K_FLOAT : K_INT, pos, e - pos);
            if (isf) t->val = v_float(strtod(tmp, NULL));
            else {
                errno = 0;
                long long v = strtoll(tmp, NULL, 10);
                if (errno) pfail(p, t, "integer too large");
                t->val = v_int(v);
            }
            pos = e;
            continue;
        }
        if (isalpha((unsigned char)c) || c == '_' || (unsigned char)c >= 0x80) {
            size_t e = pos;
            while (e < n && (isalnum((unsigned char)s[e]) || s[e] == '_' || (unsigned char)s[e] >= 0x80)) e++;
            emit(p, K_NAME, pos, e - pos);
            pos = e;
            continue;
        }
        if (c == '\'' || c == '"') {
            size_t e = pos + 1;
            while (e < n && s[e] != c) {
                if (s[e] == '\\') e++;
                e++;
            }
            tok *t = emit(p, K_STR, pos, (e < n ? e + 1 : n) - pos);
            if (e >= n) pfail(p, t, "unexpected char %c (an unterminated string)", c);
            t->val = decode_string(p, s + pos + 1, e - pos - 1, t);
            pos = e + 1;
            continue;
        }
        size_t on = 0;
        for (size_t k = 0; k < sizeof OPS2 / sizeof OPS2[0]; k++)
            if (pos + 1 < n && !memcmp(s + pos, OPS2[k], 2)) on = 2;
        if (!on && strchr(OPS1, c) && c) on = 1;
        tok *t = emit(p, K_OP, pos, on ? on : u8_next(s, n, pos, NULL));
        if (!on) pfail(p, t, "unexpected char");
        if (on == 1 && (c == '(' || c == '[' || c == '{')) {
            if (sp >= (int)sizeof stack) pfail(p, t, "brackets nested too deeply");
            stack[sp++] = c == '(' ? ')' : c == '[' ? ']' : '}';
        } else if (on == 1 && (c == ')' || c == ']' || c == '}')) {
            if (!sp) pfail(p, t, "unexpected '%c'", c);
            if (stack[sp - 1] != c) pfail(p, t, "unexpected '%c', expected '%c'", c, stack[sp - 1]);
            sp--;
        }
        pos += on;
    }
}

static void lex(P *p)
{
    const char *s = p->src;
    size_t n = p->len, pos = 0;
    int line_starting = 1;
    while (pos < n) {
        size_t t = pos;
        while (t + 1 < n && !(s[t] == '{' && (s[t + 1] == '{' || s[t + 1] == '%' || s[t + 1] == '#')))
            t++;
        if (t + 1 >= n) {
            emit(p, K_DATA, pos, n - pos);
            break;
        }
        char kind = s[t + 1];
        char sign = t + 2 < n && (s[t + 2] == '-' || s[t + 2] == '+') ? s[t + 2] : 0;
        size_t text_end = t;
        if (sign == '-') {
            text_end = ws_back(s, pos, text_end);
        } else if (sign != '+' && kind != '{') {
            size_t lp = pos;
            int nl = 0;
            for (size_t i = t; i > pos; i--)
                if (s[i - 1] == '\n') { lp = i; nl = 1; break; }
            if ((nl || line_starting) && lp < t) {
                if (ws_fwd(s, lp, t) == t) text_end = lp;
            }
        }
        if (text_end > pos)
            emit(p, K_DATA, pos, text_end - pos);
        size_t after = t + 2 + (sign ? 1 : 0);
        if (kind == '#') {
            size_t i = after;
            for (; i + 1 < n; i++) {
                if ((s[i] == '+' || s[i] == '-') && i + 2 < n && s[i + 1] == '#' && s[i + 2] == '}') break;
                if (s[i] == '#' && s[i + 1] == '}') break;
            }
            if (i + 1 >= n) {
                tok *k = emit(p, K_OP, t, 2);
                pfail(p, k, "missing end of comment tag");
            }
            size_t e;
            line_starting = 0;
            if (s[i] == '+') e = i + 3;
            else if (s[i] == '-') {
                e = ws_fwd(s, i + 3, n);
                line_starting = e > i + 3 && s[e - 1] == '\n';
            } else {
                e = i + 2;
                if (e < n && s[e] == '\n') { e++; line_starting = 1; }
            }
            pos = e;
            continue;
        }
        if (kind == '%') { /* {% raw %} ... {% endraw %} */
            size_t i = after;
            while (i < n && is_ws(s[i])) i++;
            if (i + 3 <= n && !memcmp(s + i, "raw", 3)) {
                size_t k = i + 3;
                while (k < n && is_ws(s[k])) k++;
                int minus = k < n && s[k] == '-';
                if (k + minus + 1 < n && !memcmp(s + k + minus, "%}", 2)) {
                    k += minus + 2;
                    if (minus) k = ws_fwd(s, k, n);
                    /* find {%[-+]? endraw [-+]?%} */
                    size_t r = k;
                    for (; r + 1 < n; r++) {
                        if (s[r] != '{' || s[r + 1] != '%') continue;
                        size_t q = r + 2;
                        char rs = q < n && (s[q] == '-' || s[q] == '+') ? s[q] : 0;
                        if (rs) q++;
                        while (q < n && is_ws(s[q])) q++;
                        if (q + 6 > n || memcmp(s + q, "endraw", 6)) continue;
                        q += 6;
                        while (q < n && is_ws(s[q])) q++;
                        char es = q < n && (s[q] == '-' || s[q] == '+') ? s[q] : 0;
                        if (q + (es ? 1 : 0) + 1 >= n || memcmp(s + q + (es ? 1 : 0), "%}", 2)) continue;
                        size_t te = r;
                        if (rs == '-')
                            te = ws_back(s, k, te);
                        else if (rs != '+') {
                            size_t lp = k; int nl = 0;
                            for (size_t x = r; x > k; x--)
                                if (s[x - 1] == '\n') { lp = x; nl = 1; break; }
                            if (nl && lp < r) {
                                if (ws_fwd(s, lp, r) == r) te = lp;
                            }
                        }
                        if (te > k) emit(p, K_DATA, k, te - k);
                        size_t e = q + (es ? 1 : 0) + 2;
                        line_starting = 0;
                        if (es == '-') { e = ws_fwd(s, e, n); line_starting = s[e - 1] == '\n'; }
                        else if (!es && e < n && s[e] == '\n') { e++; line_starting = 1; }
                        pos = e;
                        break;
                    }
                    if (r + 1 >= n) {
                        tok *kt = emit(p, K_OP, t, 2);
                        pfail(p, kt, "missing end of raw directive");
                    }
                    continue;
                }
            }
        }
        emit(p, kind == '{' ? K_VBEGIN : K_BBEGIN, t, after - t);
        pos = lex_tag(p, after, kind == '%', &line_starting);
    }
    tok *e = emit(p, K_EOF, n, 0);
    (void)e;
}

/* ---------------------------------------------------------------- parser */

static tok *cur(P *p) { return &p->toks[p->i]; }
static tok *peekt(P *p, int k) { size_t i = p->i + (size_t)k; return &p->toks[i < p->ntok ? i : p->ntok - 1]; }
static tok *adv(P *p) { tok *t = &p->toks[p->i]; if (p->i + 1 < p->ntok) p->i++; return t; }
static int tok_is(const tok *t, int type, const char *s) { return t->t == type && strlen(s) == t->n && !memcmp(t->s, s, t->n); }
static int is_op(P *p, const char *s) { return tok_is(cur(p), K_OP, s); }
static int is_name(P *p, const char *s) { return tok_is(cur(p), K_NAME, s); }

static const char *describe(const tok *t)
{
    switch (t->t) {
    case K_VEND: return "end of print statement";
    case K_BEND: return "end of statement block";
    case K_EOF: return "end of template";
    default: return NULL;
    }
}

static void expect_op(P *p, const char *s)
{
    if (!is_op(p, s)) {
        const char *d = describe(cur(p));
        if (d) pfail(p, cur(p), "expected '%s', got %s", s, d);
        pfail(p, cur(p), "expected '%s'", s);
    }
    adv(p);
}

static const char *tok_str(P *p, const tok *t) { return jstrdup(&p->j, t->s, t->n); }

static const char *expect_name(P *p)
{
    if (cur(p)->t != K_NAME) {
        const char *d = describe(cur(p));
        if (d) pfail(p, cur(p), "expected a name, got %s", d);
        pfail(p, cur(p), "expected a name");
    }
    return tok_str(p, adv(p));
}

static void expect_end(P *p)
{
    if (cur(p)->t != K_BEND) pfail(p, cur(p), "expected end of statement block");
    adv(p);
}

static node *mk(P *p, int k, const tok *t)
{
    node *n = jalloc(&p->j, sizeof *n);
    memset(n, 0, sizeof *n);
    n->k = k;
    n->line = t->line;
    n->col = t->col;
    return n;
}

typedef struct nvec {
    node **v;
    int n, cap;
} nvec;

static void nv_push(P *p, nvec *v, node *x)
{
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 4;
        node **nn = jalloc(&p->j, (size_t)cap * sizeof *nn);
        if (v->n) memcpy(nn, v->v, (size_t)v->n * sizeof *nn);
        v->v = nn;
        v->cap = cap;
    }
    v->v[v->n++] = x;
}

static node *parse_expr(P *p, int with_condexpr);
static node *parse_unary(P *p, int with_filter);
static node *parse_tuple(P *p, int with_condexpr, int explicit_parens, const char *extra_end);
static node *parse_postfix(P *p, node *n);
static node *parse_primary(P *p);

static void enter(P *p)
{
    if (++p->depth > MAX_PARSE_DEPTH) pfail(p, cur(p), "template nested too deeply");
}

static void parse_args(P *p, node *n)
{
    nvec a = {0}, kv = {0};
    nvec kn = {0};
    expect_op(p, "(");
    while (!is_op(p, ")")) {
        if (a.n || kv.n) {
            expect_op(p, ",");
            if (is_op(p, ")")) break;
        }
        if (is_op(p, "*") || is_op(p, "**")) pfail(p, cur(p), "*args and **kwargs are not supported");
        if (cur(p)->t == K_NAME && tok_is(peekt(p, 1), K_OP, "=")) {
            node *k = mk(p, E_CONST, cur(p));
            k->name = tok_str(p, adv(p));
            adv(p);
            nv_push(p, &kn, k);
            nv_push(p, &kv, parse_expr(p, 1));
        } else {
            if (kv.n) pfail(p, cur(p), "invalid syntax for function call expression");
            nv_push(p, &a, parse_expr(p, 1));
        }
    }
    adv(p);
    n->v = a.v;
    n->nv = a.n;
    n->v2 = kv.v;
    n->nv2 = kv.n;
    n->names = jalloc(&p->j, (size_t)(kn.n + 1) * sizeof(char *));
    for (int i = 0; i < kn.n; i++) n->names[i] = kn.v[i]->name;
    n->nnames = kn.n;
}

static node *parse_filter(P *p, node *in, int start_inline)
{
    while (is_op(p, "|") || start_inline) {
        if (!start_inline) adv(p);
        start_inline = 0;
        tok *t = cur(p);
        node *f = mk(p, E_FILTER, t);
        const char *name = expect_name(p);
        while (is_op(p, ".")) {
            adv(p);
            name = jprintf(&p->j, "%s.%s", name, expect_name(p));
        }
        f->name = name;
        f->a = in;
        if (is_op(p, "(")) parse_args(p, f);
        in = f;
    }
    return in;
}

static node *parse_test(P *p, node *in)
{
    tok *t = adv(p); /* is */
    node *n = mk(p, E_TEST, t);
    n->a = in;
    if (is_name(p, "not")) { adv(p); n->op = 1; }
    const char *name = expect_name(p);
    while (is_op(p, ".")) {
        adv(p);
        name = jprintf(&p->j, "%s.%s", name, expect_name(p));
    }
    n->name = name;
    tok *c = cur(p);
    if (is_op(p, "(")) parse_args(p, n);
    else if ((c->t == K_NAME || c->t == K_STR || c->t == K_INT || c->t == K_FLOAT || is_op(p, "[") || is_op(p, "{")) &&
             !is_name(p, "else") && !is_name(p, "or") && !is_name(p, "and")) {
        if (is_name(p, "is")) pfail(p, c, "You cannot chain multiple tests with is");
        node *arg = parse_postfix(p, parse_primary(p));
        n->v = jalloc(&p->j, sizeof(node *));
        n->v[0] = arg;
        n->nv = 1;
    }
    return n;
}

static node *parse_subscript(P *p, node *obj)
{
    tok *t = adv(p); /* [ */
    nvec items = {0};
    node *res = NULL;
    for (;;) {
        if (items.n) {
            if (!is_op(p, ",")) break;
            adv(p);
            if (is_op(p, "]")) break;
        } else if (is_op(p, "]"))
            break; /* x[] subscripts with an empty tuple, as Jinja2 parses it */
        node *start = NULL;
        if (!is_op(p, ":")) start = parse_expr(p, 1);
        if (!is_op(p, ":")) { nv_push(p, &items, start); continue; }
        adv(p);
        node *sl = mk(p, E_SLICE, t);
        sl->b = start;
        if (!is_op(p, "]") && !is_op(p, ",") && !is_op(p, ":")) sl->c = parse_expr(p, 1);
        if (is_op(p, ":")) {
            adv(p);
            if (!is_op(p, "]") && !is_op(p, ",")) sl->d = parse_expr(p, 1);
        }
        nv_push(p, &items, sl);
    }
    expect_op(p, "]");
    if (items.n == 1 && items.v[0]->k == E_SLICE) {
        res = items.v[0];
        res->a = obj;
        return res;
    }
    for (int i = 0; i < items.n; i++)
        if (items.v[i]->k == E_SLICE) pfail(p, t, "a slice inside a tuple subscript is not supported");
    res = mk(p, E_ITEM, t);
    res->a = obj;
    if (items.n == 1) res->b = items.v[0];
    else {
        node *tu = mk(p, E_TUPLE, t);
        tu->v = items.v;
        tu->nv = items.n;
        res->b = tu;
    }
    return res;
}

static node *parse_postfix(P *p, node *n)
{
    for (;;) {
        tok *t = cur(p);
        if (is_op(p, ".")) {
            adv(p);
            if (cur(p)->t == K_NAME) {
                node *a = mk(p, E_ATTR, t);
                a->a = n;
                a->attr = tok_str(p, adv(p));
                n = a;
            } else if (cur(p)->t == K_INT) {
                node *a = mk(p, E_ITEM, t);
                a->a = n;
                a->b = mk(p, E_CONST, cur(p));
                a->b->val = adv(p)->val;
                n = a;
            } else
                pfail(p, cur(p), "expected name or number");
        } else if (is_op(p, "[")) {
            n = parse_subscript(p, n);
        } else if (is_op(p, "(")) {
            node *c = mk(p, E_CALL, t);
            c->a = n;
            parse_args(p, c);
            n = c;
        } else
            return n;
    }
}

static node *parse_filter_expr(P *p, node *n)
{
    for (;;) {
        if (is_op(p, "|")) n = parse_filter(p, n, 0);
        else if (is_name(p, "is")) n = parse_test(p, n);
        else if (is_op(p, "(")) {
            node *c = mk(p, E_CALL, cur(p));
            c->a = n;
            parse_args(p, c);
            n = c;
        } else
            return n;
    }
}

static node *parse_primary(P *p)
{
    tok *t = cur(p);
    node *n;
    enter(p);
    if (t->t == K_NAME) {
        n = mk(p, E_CONST, t);
        if (tok_is(t, K_NAME, "true") || tok_is(t, K_NAME, "True")) n->val = v_bool(1);
        else if (tok_is(t, K_NAME, "false") || tok_is(t, K_NAME, "False")) n->val = v_bool(0);
        else if (tok_is(t, K_NAME, "none") || tok_is(t, K_NAME, "None")) n->val = v_none();
        else { n->k = E_NAME; n->name = tok_str(p, t); }
        adv(p);
    } else if (t->t == K_STR) {
        n = mk(p, E_CONST, t);
        n->val = adv(p)->val;
        if (cur(p)->t == K_STR) {
            sb b;
            sb_init(&b, &p->j);
            sb_put_str(&b, n->val.u.s);
            while (cur(p)->t == K_STR) sb_put_str(&b, adv(p)->val.u.s);
            n->val = sb_val(&b);
        }
    } else if (t->t == K_INT || t->t == K_FLOAT) {
        n = mk(p, E_CONST, t);
        n->val = adv(p)->val;
    } else if (is_op(p, "(")) {
        adv(p);
        n = parse_tuple(p, 1, 1, NULL);
        expect_op(p, ")");
    } else if (is_op(p, "[")) {
        n = mk(p, E_LIST, t);
        adv(p);
        nvec v = {0};
        while (!is_op(p, "]")) {
            if (v.n) expect_op(p, ",");
            if (is_op(p, "]")) break;
            nv_push(p, &v, parse_expr(p, 1));
        }
        adv(p);
        n->v = v.v;
        n->nv = v.n;
    } else if (is_op(p, "{")) {
        n = mk(p, E_DICT, t);
        adv(p);
        nvec k = {0}, v = {0};
        while (!is_op(p, "}")) {
            if (k.n) expect_op(p, ",");
            if (is_op(p, "}")) break;
            nv_push(p, &k, parse_expr(p, 1));
            expect_op(p, ":");
            nv_push(p, &v, parse_expr(p, 1));
        }
        adv(p);
        n->v = k.v;
        n->nv = k.n;
        n->v2 = v.v;
        n->nv2 = v.n;
    } else {
        const char *d = describe(t);
        if (d) pfail(p, t, "unexpected %s", d);
        pfail(p, t, "unexpected '%.*s'", (int)(t->n > 20 ? 20 : t->n), t->s);
    }
    p->depth--;
    return n;
}

static node *parse_unary(P *p, int with_filter)
{
    tok *t = cur(p);
    node *n;
    enter(p);
    if (is_op(p, "-") || is_op(p, "+")) {
        adv(p);
        n = mk(p, tok_is(t, K_OP, "-") ? E_NEG : E_POS, t);
        n->a = parse_unary(p, 0);
    } else
        n = parse_primary(p);
    n = parse_postfix(p, n);
    if (with_filter) n = parse_filter_expr(p, n);
    p->depth--;
    return n;
}

static node *binop(P *p, int op, const tok *t, node *a, node *b)
{
    node *n = mk(p, E_BIN, t);
    n->op = op;
    n->a = a;
    n->b = b;
    return n;
}

static node *parse_pow(P *p)
{
    node *l = parse_unary(p, 1);
    while (is_op(p, "**")) {
        tok *t = adv(p);
        l = binop(p, 'P', t, l, parse_unary(p, 1));
    }
    return l;
}

static node *parse_math2(P *p)
{
    node *l = parse_pow(p);
    for (;;) {
        tok *t = cur(p);
        int op = is_op(p, "*") ? '*' : is_op(p, "/") ? '/' : is_op(p, "//") ? 'F' : is_op(p, "%") ? '%' : 0;
        if (!op) return l;
        adv(p);
        l = binop(p, op, t, l, parse_pow(p));
    }
}

static node *parse_concat(P *p)
{
    node *l = parse_math2(p);
    if (!is_op(p, "~")) return l;
    node *c = mk(p, E_CONCAT, cur(p));
    nvec v = {0};
    nv_push(p, &v, l);
    while (is_op(p, "~")) {
        adv(p);
        nv_push(p, &v, parse_math2(p));
    }
    c->v = v.v;
    c->nv = v.n;
    return c;
}

static node *parse_math1(P *p)
{
    node *l = parse_concat(p);
    for (;;) {
        tok *t = cur(p);
        int op = is_op(p, "+") ? '+' : is_op(p, "-") ? '-' : 0;
        if (!op) return l;
        adv(p);
        l = binop(p, op, t, l, parse_concat(p));
    }
}

enum { C_EQ = 1, C_NE, C_LT, C_LE, C_GT, C_GE, C_IN, C_NOTIN };

static node *parse_compare(P *p)
{
    node *l = parse_math1(p);
    nvec ops = {0}, rhs = {0};
    tok *t0 = cur(p);
    for (;;) {
        tok *t = cur(p);
        int op = is_op(p, "==") ? C_EQ : is_op(p, "!=") ? C_NE : is_op(p, "<") ? C_LT : is_op(p, "<=") ? C_LE
                 : is_op(p, ">") ? C_GT : is_op(p, ">=") ? C_GE : is_name(p, "in") ? C_IN : 0;
        if (!op && is_name(p, "not") && tok_is(peekt(p, 1), K_NAME, "in")) {
            adv(p);
            op = C_NOTIN;
        }
        if (!op) break;
        adv(p);
        node *o = mk(p, E_CONST, t);
        o->op = op;
        nv_push(p, &ops, o);
        nv_push(p, &rhs, parse_math1(p));
    }
    if (!ops.n) return l;
    node *c = mk(p, E_CMP, t0);
    c->a = l;
    c->v = rhs.v;
    c->nv = rhs.n;
    c->v2 = ops.v;
    c->nv2 = ops.n;
    return c;
}

static node *parse_not(P *p)
{
    if (is_name(p, "not")) {
        tok *t = adv(p);
        enter(p);
        node *n = mk(p, E_NOT, t);
        n->a = parse_not(p);
        p->depth--;
        return n;
    }
    return parse_compare(p);
}

static node *parse_and(P *p)
{
    node *l = parse_not(p);
    while (is_name(p, "and")) {
        tok *t = adv(p);
        node *n = mk(p, E_AND, t);
        n->a = l;
        n->b = parse_not(p);
        l = n;
    }
    return l;
}

static node *parse_or(P *p)
{
    node *l = parse_and(p);
    while (is_name(p, "or")) {
        tok *t = adv(p);
        node *n = mk(p, E_OR, t);
        n->a = l;
        n->b = parse_and(p);
        l = n;
    }
    return l;
}

static node *parse_expr(P *p, int with_condexpr)
{
    enter(p);
    node *e = parse_or(p);
    if (with_condexpr)
        while (is_name(p, "if")) {
            tok *t = adv(p);
            node *c = mk(p, E_COND, t);
            c->b = e;
            c->a = parse_or(p);
            if (is_name(p, "else")) {
                adv(p);
                c->c = parse_expr(p, 1);
            }
            e = c;
        }
    p->depth--;
    return e;
}

static int tuple_end(P *p, const char *extra)
{
    tok *t = cur(p);
    return t->t == K_VEND || t->t == K_BEND || t->t == K_EOF || is_op(p, ")") || (extra && is_name(p, extra));
}

static node *parse_tuple(P *p, int with_condexpr, int explicit_parens, const char *extra_end)
{
    tok *t0 = cur(p);
    nvec v = {0};
    int is_tuple = 0;
    for (;;) {
        if (v.n) expect_op(p, ",");
        if (tuple_end(p, extra_end)) break;
        nv_push(p, &v, parse_expr(p, with_condexpr));
        if (is_op(p, ",")) is_tuple = 1;
        else break;
    }
    if (!is_tuple) {
        if (v.n) return v.v[0];
        if (!explicit_parens) {
            const char *d = describe(cur(p));
            if (d) pfail(p, cur(p), "Expected an expression, got '%s'", d);
            pfail(p, cur(p), "Expected an expression");
        }
    }
    node *n = mk(p, E_TUPLE, t0);
    n->v = v.v;
    n->nv = v.n;
    return n;
}

/* for-targets and set-targets: names, possibly a tuple of names */
static node *parse_target(P *p, const char *extra_end, int allow_attr)
{
    tok *t0 = cur(p);
    nvec v = {0};
    int paren = 0;
    if (is_op(p, "(")) { adv(p); paren = 1; }
    for (;;) {
        if (v.n) {
            if (!is_op(p, ",")) break;
            adv(p);
        }
        if (cur(p)->t != K_NAME || (extra_end && is_name(p, extra_end))) break;
        tok *t = cur(p);
        node *n = mk(p, E_NAME, t);
        n->name = expect_name(p);
        if (allow_attr && !v.n && is_op(p, ".")) {
            adv(p);
            n->k = E_ATTR;
            n->attr = expect_name(p);
            return n;
        }
        nv_push(p, &v, n);
    }
    if (paren) expect_op(p, ")");
    if (!v.n) pfail(p, cur(p), "expected a name to assign to");
    if (v.n == 1 && !tok_is(&p->toks[p->i - 1], K_OP, ",")) return v.v[0];
    node *tu = mk(p, E_TUPLE, t0);
    tu->v = v.v;
    tu->nv = v.n;
    return tu;
}

static void parse_params(P *p, node *n)
{
    nvec names = {0}, defs = {0};
    expect_op(p, "(");
    while (!is_op(p, ")")) {
        if (names.n) expect_op(p, ",");
        if (is_op(p, ")")) break;
        tok *t = cur(p);
        node *nm = mk(p, E_NAME, t);
        nm->name = expect_name(p);
        nv_push(p, &names, nm);
        if (is_op(p, "=")) {
            adv(p);
            nv_push(p, &defs, parse_expr(p, 1));
        } else {
            if (defs.n && defs.v[defs.n - 1]) pfail(p, t, "non-default argument follows default argument");
            nv_push(p, &defs, NULL);
        }
    }
    adv(p);
    n->names = jalloc(&p->j, (size_t)(names.n + 1) * sizeof(char *));
    for (int i = 0; i < names.n; i++) n->names[i] = names.v[i]->name;
    n->nnames = names.n;
    n->v2 = defs.v;
    n->nv2 = defs.n;
}

static node *parse_body(P *p, const char *const *ends, const char *what);

static node *parse_stmt(P *p)
{
    tok *t = cur(p);
    if (t->t != K_NAME) pfail(p, t, "tag name expected");
    enter(p);
    node *n;
    static const char *const if_ends[] = {"elif", "else", "endif", NULL};
    static const char *const endif[] = {"endif", NULL};
    static const char *const for_ends[] = {"endfor", "else", NULL};
    static const char *const endfor[] = {"endfor", NULL};
    if (is_name(p, "if")) {
        adv(p);
        n = mk(p, S_IF, t);
        node *c = n;
        c->a = parse_tuple(p, 0, 0, NULL);
        expect_end(p);
        for (;;) {
            c->b = parse_body(p, if_ends, "endif");
            if (is_name(p, "elif")) {
                tok *et = adv(p);
                node *e = mk(p, S_IF, et);
                e->a = parse_tuple(p, 0, 0, NULL);
                expect_end(p);
                c->c = e;
                c = e;
                continue;
            }
            if (is_name(p, "else")) {
                adv(p);
                expect_end(p);
                c->c = parse_body(p, endif, "endif");
            }
            break;
        }
        adv(p); /* endif */
        expect_end(p);
    } else if (is_name(p, "for")) {
        adv(p);
        n = mk(p, S_FOR, t);
        n->d = parse_target(p, "in", 0);
        if (!is_name(p, "in")) pfail(p, cur(p), "expected 'in'");
        adv(p);
        n->a = parse_tuple(p, 0, 0, "recursive");
        if (is_name(p, "if")) {
            adv(p);
            n->b = parse_expr(p, 1);
        }
        if (is_name(p, "recursive")) pfail(p, cur(p), "recursive loops are not supported");
        expect_end(p);
        n->c = parse_body(p, for_ends, "endfor");
        if (is_name(p, "else")) {
            adv(p);
            expect_end(p);
            n->v = jalloc(&p->j, sizeof(node *));
            n->v[0] = parse_body(p, endfor, "endfor");
            n->nv = 1;
        }
        adv(p);
        expect_end(p);
    } else if (is_name(p, "set")) {
        adv(p);
        n = mk(p, S_SET, t);
        n->d = parse_target(p, NULL, 1);
        if (is_op(p, "=")) {
            adv(p);
            n->a = parse_tuple(p, 1, 0, NULL);
            expect_end(p);
        } else {
            static const char *const endset[] = {"endset", NULL};
            if (n->d->k != E_NAME && n->d->k != E_ATTR) pfail(p, t, "a block set needs a single name");
            n->k = S_SETBLOCK;
            if (is_op(p, "|")) {
                node *in = mk(p, E_BLOCKINPUT, t);
                n->a = parse_filter(p, in, 0);
            }
            expect_end(p);
            n->b = parse_body(p, endset, "endset");
            adv(p);
            expect_end(p);
        }
    } else if (is_name(p, "macro")) {
        static const char *const endm[] = {"endmacro", NULL};
        adv(p);
        n = mk(p, S_MACRO, t);
        n->name = expect_name(p);
        parse_params(p, n);
        expect_end(p);
        n->b = parse_body(p, endm, "endmacro");
        adv(p);
        expect_end(p);
    } else if (is_name(p, "call")) {
        static const char *const endc[] = {"endcall", NULL};
        adv(p);
        n = mk(p, S_CALLBLOCK, t);
        if (is_op(p, "(")) parse_params(p, n);
        n->a = parse_expr(p, 1);
        if (n->a->k != E_CALL) pfail(p, t, "expected call");
        expect_end(p);
        n->b = parse_body(p, endc, "endcall");
        adv(p);
        expect_end(p);
    } else if (is_name(p, "filter")) {
        static const char *const endf[] = {"endfilter", NULL};
        adv(p);
        n = mk(p, S_FILTERBLOCK, t);
        node *in = mk(p, E_BLOCKINPUT, t);
        n->a = parse_filter(p, in, 1);
        expect_end(p);
        n->b = parse_body(p, endf, "endfilter");
        adv(p);
        expect_end(p);
    } else if (is_name(p, "break") || is_name(p, "continue")) {
        n = mk(p, is_name(p, "break") ? S_BREAK : S_CONTINUE, t);
        adv(p);
        expect_end(p);
    } else if (is_name(p, "generation")) {
        static const char *const endg[] = {"endgeneration", NULL};
        adv(p);
        expect_end(p);
        n = parse_body(p, endg, "endgeneration");
        adv(p);
        expect_end(p);
    } else if (is_name(p, "with")) {
        static const char *const endw[] = {"endwith", NULL};
        adv(p);
        n = mk(p, S_WITH, t);
        nvec names = {0}, vals = {0};
        while (cur(p)->t != K_BEND) {
            if (names.n) expect_op(p, ",");
            tok *nt = cur(p);
            node *nm = mk(p, E_NAME, nt);
            nm->name = expect_name(p);
            expect_op(p, "=");
            nv_push(p, &names, nm);
            nv_push(p, &vals, parse_expr(p, 1));
        }
        expect_end(p);
        n->v = names.v;
        n->nv = names.n;
        n->v2 = vals.v;
        n->nv2 = vals.n;
        n->b = parse_body(p, endw, "endwith");
        adv(p);
        expect_end(p);
    } else {
        pfail(p, t, "Encountered unknown tag '%.*s'", (int)(t->n > 40 ? 40 : t->n), t->s);
    }
    p->depth--;
    return n;
}

static node *parse_body(P *p, const char *const *ends, const char *what)
{
    node *body = mk(p, S_BODY, cur(p));
    node **tail = &body->a;
    enter(p);
    for (;;) {
        tok *t = cur(p);
        node *n = NULL;
        if (t->t == K_EOF) {
            if (ends) pfail(p, t, "Unexpected end of template. Jinja was looking for '%s'", what);
            break;
        }
        if (t->t == K_DATA) {
            n = mk(p, S_TEXT, t);
            n->val = v_str(&p->j, t->s, t->n);
            adv(p);
        } else if (t->t == K_VBEGIN) {
            adv(p);
            n = mk(p, S_OUT, t);
            n->a = parse_tuple(p, 1, 0, NULL);
            if (cur(p)->t != K_VEND) pfail(p, cur(p), "expected end of print statement");
            adv(p);
        } else if (t->t == K_BBEGIN) {
            tok *nt = peekt(p, 1);
            if (ends && nt->t == K_NAME)
                for (int i = 0; ends[i]; i++)
                    if (tok_is(nt, K_NAME, ends[i])) {
                        adv(p);
                        p->depth--;
                        return body;
                    }
            if (nt->t == K_NAME) {
                static const char *const closers[] = {"endif", "endfor", "else", "elif", "endset", "endmacro", "endcall", "endfilter", "endwith", "endgeneration", "endraw", NULL};
                for (int i = 0; closers[i]; i++)
                    if (tok_is(nt, K_NAME, closers[i])) {
                        if (ends) pfail(p, nt, "Encountered unknown tag '%s'. Jinja was looking for '%s'", closers[i], what);
                        pfail(p, nt, "Encountered unknown tag '%s'", closers[i]);
                    }
            }
            adv(p);
            n = parse_stmt(p);
        } else
            pfail(p, t, "unexpected token");
        *tail = n;
        tail = &n->next;
    }
    p->depth--;
    return body;
}


/* ---------------------------------------------------------------- scope analysis */

/* Jinja2 decides at compile time which names a scope owns. A name whose first use in a scope is
 * an unconditional assignment, and that no enclosing scope uses, starts out undefined in that
 * scope, even when the context has it: a nested loop or macro that reads it before the
 * assignment sees undefined. Each scope body records those names (in its names/nnames). */
typedef struct nset {
    const char **v;
    int n, cap;
} nset;

static int nset_has(const nset *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->v[i], name)) return 1;
    return 0;
}

static void nset_add(P *p, nset *s, const char *name)
{
    if (nset_has(s, name)) return;
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 8;
        const char **nv = jalloc(&p->j, (size_t)cap * sizeof *nv);
        if (s->n) memcpy(nv, s->v, (size_t)s->n * sizeof *nv);
        s->v = nv;
        s->cap = cap;
    }
    s->v[s->n++] = name;
}

typedef struct scope {
    const struct scope *parent;
    nset refs, seen, undef_start;
    nvec children; /* scope bodies nested here, with their pre-bound names in pre */
    nvec pre;      /* per child: a node whose names/nnames are bound on entry (or NULL) */
} scope;

static void an_expr(P *p, scope *sc, node *e)
{
    if (!e) return;
    if (e->k == E_NAME) {
        nset_add(p, &sc->refs, e->name);
        nset_add(p, &sc->seen, e->name);
        return;
    }
    an_expr(p, sc, e->a);
    an_expr(p, sc, e->b);
    an_expr(p, sc, e->c);
    an_expr(p, sc, e->d);
    for (int i = 0; i < e->nv; i++) an_expr(p, sc, e->v[i]);
    if (e->k != E_CMP)
        for (int i = 0; i < e->nv2; i++) an_expr(p, sc, e->v2[i]);
}

static int anc_has(const scope *sc, const char *name)
{
    for (const scope *a = sc->parent; a; a = a->parent)
        if (nset_has(&a->refs, name)) return 1;
    return 0;
}

static void an_store(P *p, scope *sc, const char *name, int conditional)
{
    if (!nset_has(&sc->seen, name) && !conditional) nset_add(p, &sc->undef_start, name);
    nset_add(p, &sc->seen, name);
    nset_add(p, &sc->refs, name);
}

static void an_target(P *p, scope *sc, node *t, int conditional)
{
    if (t->k == E_NAME) an_store(p, sc, t->name, conditional);
    else if (t->k == E_ATTR) { nset_add(p, &sc->refs, t->name); nset_add(p, &sc->seen, t->name); }
    else for (int i = 0; i < t->nv; i++) an_target(p, sc, t->v[i], conditional);
}

static void an_child(P *p, scope *sc, node *body, node *pre)
{
    nv_push(p, &sc->children, body);
    nv_push(p, &sc->pre, pre);
}

static void an_body(P *p, scope *sc, node *body, int conditional)
{
    for (node *n = body ? body->a : NULL; n; n = n->next) {
        switch (n->k) {
        case S_OUT: an_expr(p, sc, n->a); break;
        case S_IF: an_expr(p, sc, n->a); an_body(p, sc, n->b, 1); if (n->c) { if (n->c->k == S_IF) { node tmp = *n->c; tmp.next = NULL; node wrap = {.k = S_BODY, .a = &tmp}; an_body(p, sc, &wrap, 1); } else an_body(p, sc, n->c, 1); } break;
        case S_FOR: an_expr(p, sc, n->a); an_child(p, sc, n->c, n); break;
        case S_SET: an_expr(p, sc, n->a); an_target(p, sc, n->d, conditional); break;
        case S_SETBLOCK: an_child(p, sc, n->b, NULL); an_expr(p, sc, n->a); an_target(p, sc, n->d, conditional); break;
        case S_MACRO: an_store(p, sc, n->name, conditional); an_child(p, sc, n->b, n); break;
        case S_CALLBLOCK: an_expr(p, sc, n->a); an_child(p, sc, n->b, n); break;
        case S_FILTERBLOCK: an_expr(p, sc, n->a); an_child(p, sc, n->b, NULL); break;
        case S_WITH: for (int i = 0; i < n->nv2; i++) an_expr(p, sc, n->v2[i]); an_child(p, sc, n->b, n); break;
        case S_BODY: an_body(p, sc, n, conditional); break;
        default: break;
        }
    }
}

static void analyze(P *p, node *body, const scope *parent, node *pre)
{
    scope sc;
    memset(&sc, 0, sizeof sc);
    sc.parent = parent;
    if (pre) { /* names bound on entry: loop targets and 'loop', parameters, with-names */
        if (pre->k == S_FOR) {
            nset tmp = {0};
            scope dummy;
            memset(&dummy, 0, sizeof dummy);
            an_target(p, &dummy, pre->d, 1);
            tmp = dummy.seen;
            for (int i = 0; i < tmp.n; i++) { nset_add(p, &sc.seen, tmp.v[i]); nset_add(p, &sc.refs, tmp.v[i]); }
            nset_add(p, &sc.seen, "loop");
            nset_add(p, &sc.refs, "loop");
            an_expr(p, &sc, pre->b);
        } else if (pre->k == S_WITH) {
            for (int i = 0; i < pre->nv; i++) { nset_add(p, &sc.seen, pre->v[i]->name); nset_add(p, &sc.refs, pre->v[i]->name); }
        } else {
            for (int i = 0; i < pre->nnames; i++) { nset_add(p, &sc.seen, pre->names[i]); nset_add(p, &sc.refs, pre->names[i]); }
            if (pre->k == S_MACRO) { nset_add(p, &sc.seen, "caller"); nset_add(p, &sc.refs, "caller"); }
            for (int i = 0; i < pre->nv2; i++) an_expr(p, &sc, pre->v2[i]); /* defaults */
        }
    }
    an_body(p, &sc, body, 0);
    int k = 0;
    const char **names = jalloc(&p->j, (size_t)(sc.undef_start.n + 1) * sizeof *names);
    for (int i = 0; i < sc.undef_start.n; i++)
        if (!anc_has(&sc, sc.undef_start.v[i])) names[k++] = sc.undef_start.v[i];
    body->names = names;
    body->nnames = k;
    for (int i = 0; i < sc.children.n; i++) analyze(p, sc.children.v[i], &sc, sc.pre.v[i]);
}

void tl_template_free(tl_template *tpl)
{
    if (!tpl) return;
    arena_free(&tpl->ar);
    free(tpl);
}

int tl_template_compile(const char *src, tl_template **out, tl_error *err)
{
    *out = NULL;
    if (!src) return tl_error_set(err, "template: no source");
    tl_template *tpl = calloc(1, sizeof *tpl);
    if (!tpl) return tl_error_set(err, "template: out of memory");
    P *p = calloc(1, sizeof *p);
    if (!p) { free(tpl); return tl_error_set(err, "template: out of memory"); }
    p->j.ar = &tpl->ar;
    p->j.err = err;
    p->lc_line = 1;
    if (setjmp(p->j.jb)) {
        free(p->toks);
        free(p);
        tl_template_free(tpl);
        return -1;
    }
    /* newlines normalized to \n; one trailing newline dropped (keep_trailing_newline=False) */
    size_t n = strlen(src);
    char *s = jalloc(&p->j, n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (src[i] == '\r') {
            s[k++] = '\n';
            if (i + 1 < n && src[i + 1] == '\n') i++;
        } else
            s[k++] = src[i];
    }
    if (k && s[k - 1] == '\n') k--;
    s[k] = 0;
    p->src = s;
    p->len = k;
    lex(p);
    p->i = 0;
    tpl->body = parse_body(p, NULL, NULL);
    analyze(p, tpl->body, NULL, NULL);
    free(p->toks);
    free(p);
    *out = tpl;
    return 0;
}

/* ---------------------------------------------------------------- evaluation helpers */

typedef struct jargs {
    jv *a;
    int n;
    const char **kn;
    jv *kv;
    int nk;
} jargs;

static jv arg(jargs *A, int pos, const char *name, jv def)
{
    for (int i = 0; i < A->nk; i++)
        if (!strcmp(A->kn[i], name)) return A->kv[i];
    if (pos >= 0 && pos < A->n) return A->a[pos];
    return def;
}

static int has_arg(jargs *A, int pos, const char *name)
{
    for (int i = 0; i < A->nk; i++)
        if (!strcmp(A->kn[i], name)) return 1;
    return pos >= 0 && pos < A->n;
}

static frame *frame_new(J *j, frame *parent)
{
    frame *f = jalloc(j, sizeof *f);
    memset(f, 0, sizeof *f);
    f->parent = parent;
    return f;
}

static const char *const BUILTINS[] = {"range", "namespace", "raise_exception", "strftime_now", "dict", NULL};

static jv mk_func(J *j, int kind, const char *name, jv self)
{
    jfunc *fn = jalloc(j, sizeof *fn);
    memset(fn, 0, sizeof *fn);
    fn->kind = kind;
    fn->name = name;
    fn->self = self;
    jv v = {.t = T_FUNC};
    v.u.fn = fn;
    return v;
}

static jv lookup(J *j, frame *f, const char *name)
{
    for (frame *fr = f; fr; fr = fr->parent) {
        long i = dict_find_s(&fr->vars, name);
        if (i >= 0) return fr->vars.v[i];
    }
    for (int i = 0; BUILTINS[i]; i++)
        if (!strcmp(BUILTINS[i], name)) return mk_func(j, F_BUILTIN, BUILTINS[i], v_none());
    return v_undef(jprintf(j, "'%s' is undefined", name));
}

static const char *obj_repr(jv v)
{
    switch (v.t) {
    case T_NONE: return "None";
    case T_BOOL: return "bool object";
    case T_INT: return "int object";
    case T_FLOAT: return "float object";
    case T_STR: return "str object";
    case T_LIST: return v.u.l->tuple ? "tuple object" : "list object";
    case T_DICT: return "dict object";
    case T_NS: return "jinja2.utils.Namespace object";
    default: return "function object";
    }
}

static const char *const STR_METHODS[] = {"strip", "lstrip", "rstrip", "split", "rsplit", "startswith", "endswith", "upper", "lower", "title", "capitalize", "replace", "format", "find", "rfind", "index", "count", "join", "splitlines", "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper", "swapcase", "center", "ljust", "rjust", "zfill", NULL};
static const char *const DICT_METHODS[] = {"get", "items", "keys", "values", "copy", NULL};
static const char *const DICT_UNSAFE[] = {"pop", "popitem", "update", "clear", "setdefault", NULL};
static const char *const LIST_METHODS[] = {"count", "index", "copy", NULL};
static const char *const LIST_UNSAFE[] = {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear", NULL};

static int in_list(const char *const *l, const char *s)
{
    for (int i = 0; l[i]; i++)
        if (!strcmp(l[i], s)) return 1;
    return 0;
}

/* getattr(obj, name) as a method, or 0 */
static int method_of(J *j, jv obj, const char *name, jv *out)
{
    const char *const *ok = obj.t == T_STR ? STR_METHODS : obj.t == T_DICT ? DICT_METHODS : obj.t == T_LIST ? LIST_METHODS : NULL;
    const char *const *bad = obj.t == T_DICT ? DICT_UNSAFE : obj.t == T_LIST ? LIST_UNSAFE : NULL;
    if (ok && in_list(ok, name)) { *out = mk_func(j, F_METHOD, jstrdup(j, name, strlen(name)), obj); return 1; }
    if (bad && in_list(bad, name)) {
        *out = v_undef(jprintf(j, "access to attribute '%s' of '%s' object is unsafe.", name, type_name(obj)));
        return 1;
    }
    return 0;
}

static jv get_attr(J *j, jv obj, const char *name)
{
    jv m;
    if (obj.t == T_UNDEF) jfail(j, "%s", undef_msg(obj));
    if (obj.t == T_DICT && method_of(j, obj, name, &m)) return m;
    if (obj.t == T_DICT || obj.t == T_NS) {
        long i = dict_find_s(obj.u.d, name);
        if (i >= 0) return obj.u.d->v[i];
    } else if (method_of(j, obj, name, &m))
        return m;
    return v_undef(jprintf(j, "'%s' has no attribute '%s'", obj_repr(obj), name));
}

static jv str_char(J *j, jstr *s, long long idx)
{
    long long n = (long long)u8_count(s->p, s->len);
    if (idx < 0) idx += n;
    if (idx < 0 || idx >= n) return v_undef(jprintf(j, "str object has no element %lld", idx));
    size_t a = u8_offset(s->p, s->len, (size_t)idx);
    size_t k = u8_next(s->p, s->len, a, NULL);
    return v_sub(j, s, a, a + k);
}

static jv get_item(J *j, jv obj, jv key)
{
    if (obj.t == T_UNDEF) jfail(j, "%s", undef_msg(obj));
    if (obj.t == T_DICT) {
        long i = dict_find(obj.u.d, key);
        if (i >= 0) return obj.u.d->v[i];
    } else if (obj.t == T_LIST && obj.u.l->gen) {
        return v_undef("'generator' object is not subscriptable"); /* getitem's TypeError: undefined */
    } else if ((obj.t == T_LIST || obj.t == T_STR) && (key.t == T_INT || key.t == T_BOOL)) {
        long long idx = num_i(key);
        if (obj.t == T_STR) return str_char(j, obj.u.s, idx);
        long long n = (long long)obj.u.l->n;
        if (idx < 0) idx += n;
        if (idx >= 0 && idx < n) return obj.u.l->it[idx];
    }
    if (key.t == T_STR) {
        jv m;
        const char *name = key.u.s->p;
        if (obj.t != T_NS && method_of(j, obj, name, &m)) return m;
        if (obj.t == T_NS) return get_attr(j, obj, name);
        return v_undef(jprintf(j, "'%s' has no attribute '%s'", obj_repr(obj), name));
    }
    sb b;
    sb_init(&b, j);
    put_repr(&b, key);
    jv r = sb_val(&b);
    return v_undef(jprintf(j, "%s has no element %s", obj_repr(obj), r.u.s->p));
}

/* Python's slice.indices */
static void slice_idx(long long n, jv st, jv sp, jv se, long long *start, long long *stop, long long *step, J *j)
{
    *step = se.t == T_NONE || se.t == T_UNDEF ? 1 : num_i(se);
    if (*step == 0) jfail(j, "slice step cannot be zero");
    long long lo = *step < 0 ? -1 : 0, hi = *step < 0 ? n - 1 : n;
    if (st.t == T_NONE || st.t == T_UNDEF) *start = *step < 0 ? hi : lo;
    else {
        *start = num_i(st);
        if (*start < 0) { *start += n; if (*start < lo) *start = lo; }
        else if (*start > hi) *start = hi;
    }
    if (sp.t == T_NONE || sp.t == T_UNDEF) *stop = *step < 0 ? lo : hi;
    else {
        *stop = num_i(sp);
        if (*stop < 0) { *stop += n; if (*stop < lo) *stop = lo; }
        else if (*stop > hi) *stop = hi;
    }
}

static jv do_slice(J *j, jv obj, jv st, jv sp, jv se)
{
    jv parts[3] = {st, sp, se};
    for (int i = 0; i < 3; i++)
        if (parts[i].t != T_NONE && parts[i].t != T_UNDEF && parts[i].t != T_INT && parts[i].t != T_BOOL)
            jfail(j, "slice indices must be integers or None");
    if (obj.t == T_UNDEF) jfail(j, "%s", undef_msg(obj));
    long long a, b, s;
    if (obj.t == T_LIST && obj.u.l->gen) jfail(j, "'generator' object is not subscriptable");
    if (obj.t == T_LIST) {
        jlist *l = obj.u.l, *r = list_new(j, l->n);
        slice_idx((long long)l->n, st, sp, se, &a, &b, &s, j);
        for (long long i = a; s > 0 ? i < b : i > b; i += s) list_push(j, r, l->it[i]);
        r->tuple = l->tuple;
        return v_list(r);
    }
    if (obj.t == T_STR) {
        jstr *str = obj.u.s;
        long long n = (long long)u8_count(str->p, str->len);
        slice_idx(n, st, sp, se, &a, &b, &s, j);
        if (s == 1) {
            if (b <= a) return v_str(j, "", 0);
            size_t x = u8_offset(str->p, str->len, (size_t)a);
            size_t y = x + u8_offset(str->p + x, str->len - x, (size_t)(b - a));
            return v_sub(j, str, x, y);
        }
        size_t *off = jalloc(j, ((size_t)n + 1) * sizeof *off);
        size_t o = 0;
        for (long long i = 0; i < n; i++) { off[i] = o; o += u8_next(str->p, str->len, o, NULL); }
        off[n] = o;
        sb r;
        sb_init(&r, j);
        for (long long i = a; s > 0 ? i < b : i > b; i += s) sb_put_sub(&r, str, off[i], off[i + 1]);
        return sb_val(&r);
    }
    /* Jinja2 slices with Python's own [] (not through getitem): anything else fails */
    if (obj.t == T_DICT) jfail(j, "unhashable type: 'slice'");
    jfail(j, "'%s' object is not subscriptable", type_name(obj));
}

/* the items a for loop (or list()) walks */
static jlist *iter_list(J *j, jv v)
{
    switch (v.t) {
    case T_UNDEF: return list_new(j, 1);
    case T_LIST: return v.u.l;
    case T_DICT: {
        jlist *l = list_new(j, v.u.d->n);
        for (size_t i = 0; i < v.u.d->n; i++) list_push(j, l, v.u.d->k[i]);
        return l;
    }
    case T_STR: {
        jstr *s = v.u.s;
        jlist *l = list_new(j, s->len);
        for (size_t i = 0; i < s->len;) {
            size_t k = u8_next(s->p, s->len, i, NULL);
            list_push(j, l, v_sub(j, s, i, i + k));
            i += k;
        }
        return l;
    }
    default: jfail(j, "'%s' object is not iterable", type_name(v));
    }
}

static size_t py_len(J *j, jv v)
{
    switch (v.t) {
    case T_UNDEF: return 0;
    case T_STR: return u8_count(v.u.s->p, v.u.s->len);
    case T_LIST:
        if (v.u.l->gen) jfail(j, "object of type 'generator' has no len()");
        return v.u.l->n;
    case T_DICT: case T_NS: return v.u.d->n;
    default: jfail(j, "object of type '%s' has no len()", type_name(v));
    }
}

static int contains(J *j, jv container, jv item)
{
    switch (container.t) {
    case T_UNDEF: return 0;
    case T_STR: {
        if (item.t != T_STR) jfail(j, "'in <string>' requires string as left operand, not %s", type_name(item));
        jstr *h = container.u.s, *n = item.u.s;
        if (!n->len) return 1;
        for (size_t i = 0; i + n->len <= h->len; i++)
            if (!memcmp(h->p + i, n->p, n->len)) return 1;
        return 0;
    }
    case T_LIST:
        for (size_t i = 0; i < container.u.l->n; i++)
            if (py_eq(container.u.l->it[i], item)) return 1;
        return 0;
    case T_DICT:
        if ((item.t == T_LIST && !item.u.l->tuple) || item.t == T_DICT || item.t == T_NS)
            jfail(j, "unhashable type: '%s'", type_name(item));
        return dict_find(container.u.d, item) >= 0;
    default: jfail(j, "argument of type '%s' is not iterable", type_name(container));
    }
}

/* Unicode simple case mappings from glibc's C.UTF-8 (ASCII only where that locale is missing) */
static locale_t utf8_locale;
static pthread_once_t utf8_once = PTHREAD_ONCE_INIT;
static void utf8_init(void) { utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0); }

static unsigned cp_case(unsigned c, int up)
{
    if (c < 0x80) return (unsigned)(up ? toupper((int)c) : tolower((int)c));
    pthread_once(&utf8_once, utf8_init);
    if (!utf8_locale) return c;
    return (unsigned)(up ? towupper_l((wint_t)c, utf8_locale) : towlower_l((wint_t)c, utf8_locale));
}

static int cp_alpha(unsigned c)
{
    if (c < 0x80) return isalpha((int)c);
    pthread_once(&utf8_once, utf8_init);
    return utf8_locale ? iswalpha_l((wint_t)c, utf8_locale) != 0 : 1;
}

/* mode: 0 lower, 1 upper, 2 capitalize, 3 str.title, 4 Jinja's title filter */
static jv str_case(J *j, jstr *s, int mode)
{
    sb r;
    sb_init(&r, j);
    int prev = 0;
    size_t idx = 0;
    for (size_t i = 0; i < s->len; idx++) {
        unsigned cp;
        size_t k = u8_next(s->p, s->len, i, &cp);
        int up;
        if (mode < 2) up = mode;
        else if (mode == 2) up = idx == 0;
        else if (mode == 3) { int a = cp_alpha(cp); up = !prev; if (!a) { prev = 0; u8_put(&r, cp); i += k; continue; } prev = 1; }
        else {
            int sepc = cp == '-' || py_isspace(cp) || cp == '(' || cp == '{' || cp == '[' || cp == '<';
            if (sepc) { prev = 0; u8_put(&r, cp); i += k; continue; }
            up = !prev;
            prev = 1;
        }
        u8_put(&r, cp_case(cp, up));
        i += k;
    }
    if (r.len == s->len) /* same length: the bytes stay where they were */
        for (size_t i = 0; i < s->nsp; i++) sb_span(&r, s->sp[i].start, s->sp[i].end);
    return sb_val(&r);
}

static jv str_lower_upper(J *j, jv v, int up) { return str_case(j, to_str(j, v).u.s, up); }

static jv arith(J *j, int op, jv a, jv b)
{
    if (a.t == T_UNDEF) jfail(j, "%s", undef_msg(a));
    if (b.t == T_UNDEF) jfail(j, "%s", undef_msg(b));
    if (op == '+' && a.t == T_STR && b.t == T_STR) {
        sb r;
        sb_init(&r, j);
        sb_put_str(&r, a.u.s);
        sb_put_str(&r, b.u.s);
        return sb_val(&r);
    }
    if (op == '+' && a.t == T_LIST && b.t == T_LIST && a.u.l->tuple == b.u.l->tuple) {
        jlist *l = list_new(j, a.u.l->n + b.u.l->n);
        for (size_t i = 0; i < a.u.l->n; i++) list_push(j, l, a.u.l->it[i]);
        for (size_t i = 0; i < b.u.l->n; i++) list_push(j, l, b.u.l->it[i]);
        l->tuple = a.u.l->tuple;
        return v_list(l);
    }
    if (op == '*' && ((a.t == T_STR || a.t == T_LIST) && (b.t == T_INT || b.t == T_BOOL)))
        { jv t = a; a = b; b = t; }
    if (op == '*' && (a.t == T_INT || a.t == T_BOOL) && (b.t == T_STR || b.t == T_LIST)) {
        long long n = num_i(a);
        if (b.t == T_STR) {
            sb r;
            sb_init(&r, j);
            if (n > 0 && b.u.s->len && (size_t)n > MAX_STRING / b.u.s->len) jfail(j, "output too long");
            for (long long i = 0; i < n; i++) sb_put_str(&r, b.u.s);
            return sb_val(&r);
        }
        if (n > 0 && b.u.l->n && (size_t)n > (1u << 20) / b.u.l->n) jfail(j, "list too long");
        if (b.u.l->gen) jfail(j, "unsupported operand type(s) for *: 'int' and 'generator'");
        jlist *l = list_new(j, 4);
        for (long long i = 0; i < n; i++)
            for (size_t k = 0; k < b.u.l->n; k++) list_push(j, l, b.u.l->it[k]);
        l->tuple = b.u.l->tuple;
        return v_list(l);
    }
    if (op == '%' && a.t == T_STR) { /* printf-style formatting */
        jlist *args = b.t == T_LIST && b.u.l->tuple ? b.u.l : NULL;
        size_t ai = 0;
        int used = 0;
        sb r;
        sb_init(&r, j);
        jstr *f = a.u.s;
        for (size_t i = 0; i < f->len; i++) {
            if (f->p[i] != '%' || i + 1 >= f->len) { sb_putc(&r, f->p[i]); continue; }
            char c = f->p[++i];
            if (c == '%') { sb_putc(&r, '%'); continue; }
            /* %[flags][width][.precision]conversion, as C's printf for numbers */
            char spec[32];
            size_t sl = 0;
            spec[sl++] = '%';
            while (i < f->len && strchr("#0- +", f->p[i]) && sl < 8) spec[sl++] = f->p[i++];
            while (i < f->len && isdigit((unsigned char)f->p[i]) && sl < 16) spec[sl++] = f->p[i++];
            if (i < f->len && f->p[i] == '.') {
                spec[sl++] = f->p[i++];
                while (i < f->len && isdigit((unsigned char)f->p[i]) && sl < 24) spec[sl++] = f->p[i++];
            }
            if (i >= f->len) jfail(j, "incomplete format");
            c = f->p[i];
            jv x = args ? (ai < args->n ? args->it[ai++] : v_undef(NULL)) : b;
            if (args && x.t == T_UNDEF && !x.u.undef) jfail(j, "not enough arguments for format string");
            if (!args && used++) jfail(j, "not enough arguments for format string");
            if ((c == 's' || c == 'r') && sl == 1) {
                if (c == 's') put_str(&r, x);
                else put_repr(&r, x);
            } else if (c == 's' || c == 'r') {
                sb t;
                sb_init(&t, j);
                if (c == 's') put_str(&t, x);
                else put_repr(&t, x);
                jv tv = sb_val(&t);
                spec[sl] = 0;
                /* width and precision count characters, as Python's do (C's count bytes) */
                int left, zero;
                char sign;
                long width, prec;
                spec_parse(spec, &left, &zero, &sign, &width, &prec);
                size_t n = tv.u.s->len;
                if (prec >= 0) n = u8_offset(tv.u.s->p, tv.u.s->len, (size_t)prec);
                py_pad(&r, spec, tv.u.s->p, n, "");
            } else if (c == 'c') {
                /* chr(x), or a one-character string, padded as %s is */
                sb t;
                sb_init(&t, j);
                if (x.t == T_STR && u8_count(x.u.s->p, x.u.s->len) == 1) {
                    sb_put(&t, x.u.s->p, x.u.s->len);
                } else if (x.t == T_INT || x.t == T_BOOL) {
                    long long cp = num_i(x);
                    if (cp < 0 || cp > 0x10FFFF) jfail(j, "%%c arg not in range(0x110000)");
                    if (cp >= 0xD800 && cp <= 0xDFFF) jfail(j, "%%c: U+%04llX is a surrogate, no character", cp);
                    u8_put(&t, (unsigned)cp);
                } else
                    jfail(j, "%%c requires int or char");
                spec[sl] = 0;
                jv tv = sb_val(&t);
                py_pad(&r, spec, tv.u.s->p, tv.u.s->len, "");
            } else if (strchr("diouxX", c) && c) {
                if (!is_num(x) || (x.t == T_FLOAT && strchr("oxX", c)))
                    jfail(j, "%%%c format: %s is required, not %s", c, strchr("oxX", c) ? "an integer" : "a real number",
                          type_name(x));
                long long v;
                if (x.t == T_FLOAT) {
                    /* int(x): a float past 64 bits cannot be converted (a C cast would be undefined) */
                    if (!(x.u.f >= -9223372036854775808.0 && x.u.f < 9223372036854775808.0))
                        jfail(j, "%%%c format: %g does not fit in 64 bits (tokenloop's integers are 64-bit)", c, x.u.f);
                    v = (long long)x.u.f;
                } else
                    v = num_i(x);
                spec[sl] = 0;
                py_int_format(&r, spec, c, v);
            } else if (strchr("eEfFgG", c) && c) {
                if (!is_num(x)) jfail(j, "%%%c format: a real number is required, not %s", c, type_name(x));
                char o[512];
                {
                    spec[sl++] = c;
                    spec[sl] = 0;
                    snprintf(o, sizeof o, spec, num_f(x));
                }
                sb_puts(&r, o);
            } else jfail(j, "unsupported format character '%c'", c);
        }
        if ((args && ai < args->n) || (!args && !used && b.t != T_DICT && b.t != T_LIST))
            jfail(j, "not all arguments converted during string formatting");
        return sb_val(&r);
    }
    if (!is_num(a) || !is_num(b))
        jfail(j, "unsupported operand type(s) for %s: '%s' and '%s'",
              op == 'P' ? "**" : op == 'F' ? "//" : (const char[]){(char)op, 0}, type_name(a), type_name(b));
    int isf = a.t == T_FLOAT || b.t == T_FLOAT;
    if (op == '/') {
        if (num_f(b) == 0) jfail(j, "division by zero");
        return v_float(num_f(a) / num_f(b));
    }
    if (!isf) {
        long long x = num_i(a), y = num_i(b), r;
        switch (op) {
        /* Python's ints never overflow; turning the result into a float would print a
         * different number than transformers does, so say it instead */
        case '+': if (__builtin_add_overflow(x, y, &r)) int_overflow(j, x, "+", y); return v_int(r);
        case '-': if (__builtin_sub_overflow(x, y, &r)) int_overflow(j, x, "-", y); return v_int(r);
        case '*': if (__builtin_mul_overflow(x, y, &r)) int_overflow(j, x, "*", y); return v_int(r);
        case 'F': case '%':
            if (!y) jfail(j, "integer division or modulo by zero");
            if (x == LLONG_MIN && y == -1) {
                if (op == 'F') int_overflow(j, x, "//", y);
                return v_int(0);
            }
            r = x / y;
            if ((x % y) && ((x < 0) != (y < 0))) r--;
            return op == 'F' ? v_int(r) : v_int(x - r * y);
        case 'P':
            if (y >= 0) {
                long long acc = 1;
                for (long long k = 0; k < y; k++) {
                    if (__builtin_mul_overflow(acc, x, &acc)) int_overflow(j, x, "**", y);
                    if (acc == 0 || acc == 1) break;
                }
                return v_int(acc);
            }
            return v_float(pow((double)x, (double)y));
        }
    }
    double x = num_f(a), y = num_f(b);
    switch (op) {
    case '+': return v_float(x + y);
    case '-': return v_float(x - y);
    case '*': return v_float(x * y);
    case 'F': if (y == 0) jfail(j, "float floor division by zero"); return v_float(floor(x / y));
    case '%': {
        if (y == 0) jfail(j, "float modulo");
        double m = fmod(x, y);
        if (m && ((m < 0) != (y < 0))) m += y;
        return v_float(m);
    }
    default: return v_float(pow(x, y));
    }
}

/* ---------------------------------------------------------------- strings */

static int cp_in(const jstr *chars, unsigned cp)
{
    for (size_t i = 0; i < chars->len;) {
        unsigned c;
        i += u8_next(chars->p, chars->len, i, &c);
        if (c == cp) return 1;
    }
    return 0;
}

/* strip: which 1 = left, 2 = right, 3 = both; chars NULL = whitespace */
static jv str_strip(J *j, jv v, const jstr *chars, int which)
{
    jstr *s = v.u.s;
    size_t a = 0, e = s->len;
    if (which & 1)
        while (a < e) {
            unsigned cp;
            size_t k = u8_next(s->p, s->len, a, &cp);
            if (chars ? !cp_in(chars, cp) : !py_isspace(cp)) break;
            a += k;
        }
    if (which & 2)
        while (e > a) {
            size_t st = e - 1;
            while (st > a && ((unsigned char)s->p[st] & 0xC0) == 0x80) st--;
            unsigned cp;
            u8_next(s->p, s->len, st, &cp);
            if (chars ? !cp_in(chars, cp) : !py_isspace(cp)) break;
            e = st;
        }
    return v_sub(j, s, a, e);
}

static const char *find_sub(const char *h, size_t hn, const char *n, size_t nn)
{
    if (!nn) return h;
    for (size_t i = 0; i + nn <= hn; i++)
        if (!memcmp(h + i, n, nn)) return h + i;
    return NULL;
}

static jv str_replace(J *j, jstr *s, jstr *old, jstr *new_, long long count)
{
    sb r;
    sb_init(&r, j);
    size_t i = 0;
    long long done = 0;
    if (!old->len) {
        for (; i <= s->len && (count < 0 || done < count); done++) {
            sb_put_str(&r, new_);
            if (i == s->len) { i++; break; }
            size_t k = u8_next(s->p, s->len, i, NULL);
            sb_put_sub(&r, s, i, i + k);
            i += k;
        }
        if (i < s->len) sb_put_sub(&r, s, i, s->len);
        return sb_val(&r);
    }
    while (count < 0 || done < count) {
        const char *f = find_sub(s->p + i, s->len - i, old->p, old->len);
        if (!f) break;
        size_t at = (size_t)(f - s->p);
        sb_put_sub(&r, s, i, at);
        sb_put_str(&r, new_);
        i = at + old->len;
        done++;
    }
    sb_put_sub(&r, s, i, s->len);
    return sb_val(&r);
}

static jv str_split(J *j, jstr *s, jv sep, long long maxsplit)
{
    jlist *l = list_new(j, 4);
    size_t i = 0;
    if (sep.t == T_NONE || sep.t == T_UNDEF) {
        for (;;) {
            while (i < s->len) {
                unsigned cp;
                size_t k = u8_next(s->p, s->len, i, &cp);
                if (!py_isspace(cp)) break;
                i += k;
            }
            if (i >= s->len) break;
            if (maxsplit >= 0 && (long long)l->n >= maxsplit) { /* the rest, trailing space kept */
                list_push(j, l, v_sub(j, s, i, s->len));
                break;
            }
            size_t st = i;
            while (i < s->len) {
                unsigned cp;
                size_t k = u8_next(s->p, s->len, i, &cp);
                if (py_isspace(cp)) break;
                i += k;
            }
            list_push(j, l, v_sub(j, s, st, i));
        }
        return v_list(l);
    }
    if (sep.t != T_STR) jfail(j, "must be str or None, not %s", type_name(sep));
    jstr *d = sep.u.s;
    if (!d->len) jfail(j, "empty separator");
    for (;;) {
        const char *f = maxsplit >= 0 && (long long)l->n >= maxsplit ? NULL : find_sub(s->p + i, s->len - i, d->p, d->len);
        if (!f) { list_push(j, l, v_sub(j, s, i, s->len)); break; }
        size_t at = (size_t)(f - s->p);
        list_push(j, l, v_sub(j, s, i, at));
        i = at + d->len;
    }
    return v_list(l);
}

static jv str_title(J *j, jstr *s, int jinja_filter) { return str_case(j, s, jinja_filter ? 4 : 3); }

static void put_format(J *j, sb *r, jstr *f, jargs *A)
{
    int auto_i = 0;
    for (size_t i = 0; i < f->len; i++) {
        char c = f->p[i];
        if (c == '{' && i + 1 < f->len && f->p[i + 1] == '{') { sb_putc(r, '{'); i++; continue; }
        if (c == '}' && i + 1 < f->len && f->p[i + 1] == '}') { sb_putc(r, '}'); i++; continue; }
        if (c != '{') { sb_putc(r, c); continue; }
        size_t e = i + 1;
        while (e < f->len && f->p[e] != '}') e++;
        if (e >= f->len) jfail(j, "Single '{' encountered in format string");
        const char *field = f->p + i + 1;
        size_t fn = e - i - 1;
        const char *colon = memchr(field, ':', fn);
        if (colon && colon + 1 < field + fn) jfail(j, "str.format: format specs ('%.*s') are not supported", (int)fn, field);
        if (colon) fn = (size_t)(colon - field);
        if (memchr(field, '!', fn) || memchr(field, '.', fn) || memchr(field, '[', fn))
            jfail(j, "str.format: conversions and field access ('%.*s') are not supported", (int)fn, field);
        jv x;
        if (!fn) x = auto_i < A->n ? A->a[auto_i++] : v_undef(NULL);
        else if (isdigit((unsigned char)field[0])) { int k = atoi(field); x = k < A->n ? A->a[k] : v_undef(NULL); }
        else {
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)(fn < 63 ? fn : 63), field);
            x = arg(A, -1, name, v_undef(NULL));
        }
        if (x.t == T_UNDEF && !x.u.undef) jfail(j, "Replacement index out of range for format()");
        put_str(r, x);
        i = e;
    }
}

/* ---------------------------------------------------------------- sorting */

typedef struct sortctx {
    int case_insensitive, reverse;
    const char *attr;
} sortctx;

static jv attr_path(J *j, jv v, const char *path)
{
    if (!path) return v;
    const char *p = path;
    while (*p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        jv key;
        if (n && isdigit((unsigned char)p[0])) key = v_int(atoll(p));
        else key = v_str(j, p, n);
        v = get_item(j, v, key);
        p += n;
        if (*p == '.') p++;
    }
    return v;
}

static jv sort_key(J *j, jv v, sortctx *c)
{
    v = attr_path(j, v, c->attr);
    if (c->case_insensitive && v.t == T_STR) return str_lower_upper(j, v, 0);
    return v;
}

static void msort(J *j, jv *keys, jv *vals, size_t n, int reverse)
{
    if (n < 2) return;
    jv *tk = jalloc(j, n * sizeof(jv)), *tv = jalloc(j, n * sizeof(jv));
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi) {
                int c = py_cmp(j, keys[b], keys[a], "<");
                if (reverse) c = -c;
                if (c < 0) { tk[o] = keys[b]; tv[o++] = vals[b++]; }
                else { tk[o] = keys[a]; tv[o++] = vals[a++]; }
            }
            while (a < mid) { tk[o] = keys[a]; tv[o++] = vals[a++]; }
            while (b < hi) { tk[o] = keys[b]; tv[o++] = vals[b++]; }
        }
        memcpy(keys, tk, n * sizeof(jv));
        memcpy(vals, tv, n * sizeof(jv));
    }
}

/* ---------------------------------------------------------------- tests */

static int apply_test(J *j, const char *name, jv v, jargs *A);
static jv apply_filter(J *j, const char *name, jv v, jargs *A, frame *f);

static int apply_test(J *j, const char *name, jv v, jargs *A)
{
    jv a0 = arg(A, 0, "value", v_undef(NULL));
    if (!strcmp(name, "defined")) return v.t != T_UNDEF;
    if (!strcmp(name, "undefined")) return v.t == T_UNDEF;
    if (!strcmp(name, "none")) return v.t == T_NONE;
    if (!strcmp(name, "string")) return v.t == T_STR;
    if (!strcmp(name, "number")) return is_num(v);
    if (!strcmp(name, "integer")) return v.t == T_INT;
    if (!strcmp(name, "float")) return v.t == T_FLOAT;
    if (!strcmp(name, "mapping")) return v.t == T_DICT;
    if (!strcmp(name, "iterable")) return v.t == T_STR || v.t == T_LIST || v.t == T_DICT || v.t == T_UNDEF;
    if (!strcmp(name, "sequence")) return v.t == T_STR || (v.t == T_LIST && !v.u.l->gen) || v.t == T_DICT || v.t == T_UNDEF;
    if (!strcmp(name, "boolean")) return v.t == T_BOOL;
    if (!strcmp(name, "true")) return v.t == T_BOOL && v.u.b;
    if (!strcmp(name, "false")) return v.t == T_BOOL && !v.u.b;
    if (!strcmp(name, "callable")) return v.t == T_FUNC;
    if (!strcmp(name, "even") || !strcmp(name, "odd")) {
        jv m = arith(j, '%', v, v_int(2));
        return !strcmp(name, "even") ? !truthy(m) : py_eq(m, v_int(1));
    }
    if (!strcmp(name, "divisibleby")) {
        jv m = arith(j, '%', v, arg(A, 0, "num", v_undef("divisibleby needs an argument")));
        return !truthy(m);
    }
    if (!strcmp(name, "equalto") || !strcmp(name, "eq") || !strcmp(name, "==")) return py_eq(v, a0);
    if (!strcmp(name, "ne") || !strcmp(name, "!=")) return !py_eq(v, a0);
    if (!strcmp(name, "lt") || !strcmp(name, "lessthan") || !strcmp(name, "<")) return py_cmp(j, v, a0, "<") < 0;
    if (!strcmp(name, "le") || !strcmp(name, "<=")) return py_cmp(j, v, a0, "<=") <= 0;
    if (!strcmp(name, "gt") || !strcmp(name, "greaterthan") || !strcmp(name, ">")) return py_cmp(j, v, a0, ">") > 0;
    if (!strcmp(name, "ge") || !strcmp(name, ">=")) return py_cmp(j, v, a0, ">=") >= 0;
    if (!strcmp(name, "in")) return contains(j, arg(A, 0, "seq", v_undef(NULL)), v);
    if (!strcmp(name, "sameas")) {
        jv o = arg(A, 0, "other", v_undef(NULL));
        if (v.t != o.t) return 0;
        if (v.t == T_NONE || v.t == T_UNDEF) return v.t == T_NONE;
        if (v.t == T_BOOL) return v.u.b == o.u.b;
        if (v.t == T_INT) return v.u.i == o.u.i && v.u.i >= -5 && v.u.i <= 256;
        return memcmp(&v.u, &o.u, sizeof v.u) == 0;
    }
    if (!strcmp(name, "lower") || !strcmp(name, "upper")) {
        jv s = to_str(j, v);
        int lower = !strcmp(name, "lower"), cased = 0;
        for (size_t i = 0; i < s.u.s->len; i++) {
            unsigned char c = (unsigned char)s.u.s->p[i];
            if (isalpha(c)) { cased = 1; if (lower ? isupper(c) : islower(c)) return 0; }
        }
        return cased;
    }
    if (!strcmp(name, "filter") || !strcmp(name, "test")) return v.t == T_STR;
    jfail(j, "No test named '%s'.", name);
}

/* ---------------------------------------------------------------- filters */

/* transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False) */
static jv tojson(J *j, jv v, jargs *A)
{
    jv ea = arg(A, 0, "ensure_ascii", v_bool(0));
    jv ind = arg(A, 1, "indent", v_none());
    jv seps = arg(A, 2, "separators", v_none());
    jv sk = arg(A, 3, "sort_keys", v_bool(0));
    jdump o = {NULL, ", ", ": ", truthy(sk), truthy(ea)};
    if (ind.t == T_INT || ind.t == T_BOOL) {
        long long n = num_i(ind);
        if (n < 0) n = 0;
        if (n > 64) n = 64;
        char *s = jalloc(j, (size_t)n + 1);
        memset(s, ' ', (size_t)n);
        s[n] = 0;
        o.indent = s;
        o.item_sep = ",";
    } else if (ind.t == T_STR) {
        o.indent = ind.u.s->p;
        o.item_sep = ",";
    } else if (ind.t != T_NONE)
        jfail(j, "tojson: bad indent");
    if (seps.t == T_LIST && seps.u.l->n == 2 && seps.u.l->it[0].t == T_STR && seps.u.l->it[1].t == T_STR) {
        o.item_sep = seps.u.l->it[0].u.s->p;
        o.key_sep = seps.u.l->it[1].u.s->p;
    } else if (seps.t != T_NONE)
        jfail(j, "tojson: separators must be a pair of strings");
    sb r;
    sb_init(&r, j);
    json_dump(&r, v, &o, 0);
    return sb_val(&r);
}

static jv lit_undef(J *j, const char *msg) { return v_undef(jstrdup(j, msg, strlen(msg))); }

/* Jinja2's select, map, unique, batch, items and reverse return iterators: true whatever they
 * hold, without len() or [] */
static jv v_gen(jlist *l)
{
    l->gen = 1;
    return v_list(l);
}

static jv filter_select(J *j, jv v, jargs *A, int attr_mode, int reject, frame *f)
{
    (void)f;
    if (!truthy(v)) return v_gen(list_new(j, 1)); /* Jinja2 iterates only a true value */
    jlist *in = iter_list(j, v), *out = list_new(j, in->n);
    const char *attr = NULL;
    int first = 0;
    if (attr_mode) {
        jv a = arg(A, 0, "attr", v_undef(NULL));
        if (a.t != T_STR) jfail(j, "selectattr: an attribute name is needed");
        attr = a.u.s->p;
        first = 1;
    }
    const char *test = NULL;
    if (A->n > first) {
        if (A->a[first].t != T_STR) jfail(j, "select: a test name is needed");
        test = A->a[first].u.s->p;
    }
    jargs TA = {A->n > first + 1 ? A->a + first + 1 : NULL, A->n > first + 1 ? A->n - first - 1 : 0, A->kn, A->kv, A->nk};
    for (size_t i = 0; i < in->n; i++) {
        jv x = attr ? attr_path(j, in->it[i], attr) : in->it[i];
        int ok = test ? apply_test(j, test, x, &TA) : truthy(x);
        if (ok != reject) list_push(j, out, in->it[i]);
    }
    return v_gen(out);
}

static jv apply_filter(J *j, const char *name, jv v, jargs *A, frame *f)
{
    if (!strcmp(name, "safe") || !strcmp(name, "string")) return !strcmp(name, "safe") ? v : to_str(j, v);
    if (!strcmp(name, "trim")) {
        jv c = arg(A, 0, "chars", v_none());
        return str_strip(j, to_str(j, v), c.t == T_STR ? c.u.s : NULL, 3);
    }
    if (!strcmp(name, "upper") || !strcmp(name, "lower")) return str_lower_upper(j, v, name[0] == 'u');
    if (!strcmp(name, "title")) return str_title(j, to_str(j, v).u.s, 1);
    if (!strcmp(name, "capitalize")) return str_case(j, to_str(j, v).u.s, 2);
    if (!strcmp(name, "length") || !strcmp(name, "count")) return v_int((long long)py_len(j, v));
    if (!strcmp(name, "replace")) {
        jv o = to_str(j, arg(A, 0, "old", v_undef(NULL))), n = to_str(j, arg(A, 1, "new", v_undef(NULL)));
        jv c = arg(A, 2, "count", v_none());
        return str_replace(j, to_str(j, v).u.s, o.u.s, n.u.s, c.t == T_NONE ? -1 : num_i(c));
    }
    if (!strcmp(name, "join")) {
        jv d = arg(A, 0, "d", v_str(j, "", 0));
        jv at = arg(A, 1, "attribute", v_none());
        jlist *l = iter_list(j, v);
        jv ds = to_str(j, d);
        sb r;
        sb_init(&r, j);
        for (size_t i = 0; i < l->n; i++) {
            if (i) sb_put_str(&r, ds.u.s);
            put_str(&r, at.t == T_NONE ? l->it[i] : attr_path(j, l->it[i], to_str(j, at).u.s->p));
        }
        return sb_val(&r);
    }
    if (!strcmp(name, "default") || !strcmp(name, "d")) {
        jv dv = arg(A, 0, "default_value", v_str(j, "", 0));
        int boolean = truthy(arg(A, 1, "boolean", v_bool(0)));
        if (v.t == T_UNDEF || (boolean && !truthy(v))) return dv;
        return v;
    }
    if (!strcmp(name, "first") || !strcmp(name, "last")) {
        if (v.t == T_STR || v.t == T_LIST || v.t == T_DICT || v.t == T_UNDEF) {
            if (name[0] == 'l' && v.t == T_LIST && v.u.l->gen) jfail(j, "'generator' object is not reversible");
            jlist *l = iter_list(j, v);
            if (!l->n) return lit_undef(j, name[0] == 'f' ? "No first item, sequence was empty." : "No last item, sequence was empty.");
            return l->it[name[0] == 'f' ? 0 : l->n - 1];
        }
        jfail(j, "'%s' object is not iterable", type_name(v));
    }
    if (!strcmp(name, "list")) {
        jlist *l = iter_list(j, v), *r = list_new(j, l->n);
        for (size_t i = 0; i < l->n; i++) list_push(j, r, l->it[i]);
        return v_list(r);
    }
    if (!strcmp(name, "items")) {
        if (v.t == T_UNDEF) return v_gen(list_new(j, 1));
        if (v.t != T_DICT) jfail(j, "Can only get item pairs from a mapping.");
        jlist *r = list_new(j, v.u.d->n);
        for (size_t i = 0; i < v.u.d->n; i++) {
            jlist *t = list_new(j, 2);
            t->tuple = 1;
            list_push(j, t, v.u.d->k[i]);
            list_push(j, t, v.u.d->v[i]);
            list_push(j, r, v_list(t));
        }
        return v_gen(r);
    }
    if (!strcmp(name, "map")) {
        if (!truthy(v)) return v_gen(list_new(j, 1));
        jlist *l = iter_list(j, v), *r = list_new(j, l->n);
        if (has_arg(A, -1, "attribute")) {
            jv at = to_str(j, arg(A, -1, "attribute", v_none()));
            jv dflt = arg(A, -1, "default", v_undef(NULL));
            for (size_t i = 0; i < l->n; i++) {
                jv x = attr_path(j, l->it[i], at.u.s->p);
                if (x.t == T_UNDEF && has_arg(A, -1, "default")) x = dflt;
                list_push(j, r, x);
            }
            return v_gen(r);
        }
        if (A->n < 1 || A->a[0].t != T_STR) jfail(j, "map: a filter name or attribute= is needed");
        jargs FA = {A->a + 1, A->n - 1, A->kn, A->kv, A->nk};
        for (size_t i = 0; i < l->n; i++) list_push(j, r, apply_filter(j, A->a[0].u.s->p, l->it[i], &FA, f));
        return v_gen(r);
    }
    if (!strcmp(name, "select")) return filter_select(j, v, A, 0, 0, f);
    if (!strcmp(name, "reject")) return filter_select(j, v, A, 0, 1, f);
    if (!strcmp(name, "selectattr")) return filter_select(j, v, A, 1, 0, f);
    if (!strcmp(name, "rejectattr")) return filter_select(j, v, A, 1, 1, f);
    if (!strcmp(name, "dictsort")) {
        if (v.t != T_DICT) jfail(j, "You can only sort by either \"key\" or \"value\"");
        int cs = truthy(arg(A, 0, "case_sensitive", v_bool(0)));
        jv by = arg(A, 1, "by", v_cstr(j, "key"));
        int rev = truthy(arg(A, 2, "reverse", v_bool(0)));
        int byv = by.t == T_STR && !strcmp(by.u.s->p, "value");
        size_t n = v.u.d->n;
        jv *keys = jalloc(j, (n + 1) * sizeof(jv)), *vals = jalloc(j, (n + 1) * sizeof(jv));
        sortctx c = {!cs, rev, NULL};
        for (size_t i = 0; i < n; i++) {
            jlist *t = list_new(j, 2);
            t->tuple = 1;
            list_push(j, t, v.u.d->k[i]);
            list_push(j, t, v.u.d->v[i]);
            vals[i] = v_list(t);
            keys[i] = sort_key(j, byv ? v.u.d->v[i] : v.u.d->k[i], &c);
        }
        msort(j, keys, vals, n, rev);
        jlist *r = list_new(j, n);
        for (size_t i = 0; i < n; i++) list_push(j, r, vals[i]);
        return v_list(r);
    }
    if (!strcmp(name, "sort")) {
        int rev = truthy(arg(A, 0, "reverse", v_bool(0)));
        int cs = truthy(arg(A, 1, "case_sensitive", v_bool(0)));
        jv at = arg(A, 2, "attribute", v_none());
        sortctx c = {!cs, rev, at.t == T_STR ? at.u.s->p : NULL};
        jlist *l = iter_list(j, v);
        size_t n = l->n;
        jv *keys = jalloc(j, (n + 1) * sizeof(jv)), *vals = jalloc(j, (n + 1) * sizeof(jv));
        for (size_t i = 0; i < n; i++) { vals[i] = l->it[i]; keys[i] = sort_key(j, l->it[i], &c); }
        msort(j, keys, vals, n, rev);
        jlist *r = list_new(j, n);
        for (size_t i = 0; i < n; i++) list_push(j, r, vals[i]);
        return v_list(r);
    }
    if (!strcmp(name, "unique")) {
        int cs = truthy(arg(A, 0, "case_sensitive", v_bool(0)));
        jv at = arg(A, 1, "attribute", v_none());
        sortctx c = {!cs, 0, at.t == T_STR ? at.u.s->p : NULL};
        jlist *l = iter_list(j, v), *r = list_new(j, l->n), *seen = list_new(j, l->n);
        for (size_t i = 0; i < l->n; i++) {
            jv k = sort_key(j, l->it[i], &c);
            if ((k.t == T_LIST && !k.u.l->tuple) || k.t == T_DICT || k.t == T_NS)
                jfail(j, "unhashable type: '%s'", type_name(k));
            if (contains(j, v_list(seen), k)) continue;
            list_push(j, seen, k);
            list_push(j, r, l->it[i]);
        }
        return v_gen(r);
    }
    if (!strcmp(name, "reverse")) {
        if (v.t == T_STR) return do_slice(j, v, v_none(), v_none(), v_int(-1));
        jlist *l = iter_list(j, v), *r = list_new(j, l->n);
        for (size_t i = l->n; i > 0; i--) list_push(j, r, l->it[i - 1]);
        if (v.t == T_LIST && v.u.l->gen) return v_list(r); /* reversed() failed: a list */
        return v_gen(r);
    }
    if (!strcmp(name, "int")) {
        jv d = arg(A, 0, "default", v_int(0));
        if (v.t == T_UNDEF) jfail(j, "%s", undef_msg(v));
        if (v.t == T_INT) return v;
        if (v.t == T_BOOL) return v_int(v.u.b);
        if (v.t == T_FLOAT) return isfinite(v.u.f) ? v_int((long long)v.u.f) : d;
        if (v.t == T_STR) {
            jv s = str_strip(j, v, NULL, 3);
            char *e;
            errno = 0;
            long long i = strtoll(s.u.s->p, &e, 10);
            if (s.u.s->len && !*e && !errno) return v_int(i);
            double x = strtod(s.u.s->p, &e);
            if (s.u.s->len && !*e && isfinite(x)) return v_int((long long)x);
        }
        return d;
    }
    if (!strcmp(name, "float")) {
        jv d = arg(A, 0, "default", v_float(0));
        if (v.t == T_UNDEF) jfail(j, "%s", undef_msg(v));
        if (is_num(v)) return v_float(num_f(v));
        if (v.t == T_STR) {
            jv s = str_strip(j, v, NULL, 3);
            char *e;
            double x = strtod(s.u.s->p, &e);
            if (s.u.s->len && !*e) return v_float(x);
        }
        return d;
    }
    if (!strcmp(name, "abs")) {
        if (v.t == T_FLOAT) return v_float(fabs(v.u.f));
        if (is_num(v)) return v_int(llabs(num_i(v)));
        jfail(j, "bad operand type for abs(): '%s'", type_name(v));
    }
    if (!strcmp(name, "round")) {
        long long prec = num_i(arg(A, 0, "precision", v_int(0)));
        jv m = arg(A, 1, "method", v_cstr(j, "common"));
        if (!is_num(v)) jfail(j, "type %s doesn't define __round__ method", type_name(v));
        double x = num_f(v), s = pow(10, (double)prec);
        const char *ms = m.t == T_STR ? m.u.s->p : "common";
        if (!strcmp(ms, "common")) {
            if (v.t != T_FLOAT && prec >= 0) return v_int(num_i(v)); /* round(int, n) is that int */
            if (prec < 0 || prec > 300) return v_float(nearbyint(x * s) / s);
            char buf[400]; /* Python rounds the exact binary value, as printf does */
            snprintf(buf, sizeof buf, "%.*f", (int)prec, x);
            return v_float(strtod(buf, NULL));
        }
        if (!strcmp(ms, "ceil")) return v_float(ceil(x * s) / s);
        if (!strcmp(ms, "floor")) return v_float(floor(x * s) / s);
        jfail(j, "method must be common, ceil or floor");
    }
    if (!strcmp(name, "indent")) {
        if (v.t == T_UNDEF) jfail(j, "%s", undef_msg(v));
        if (v.t != T_STR) jfail(j, "unsupported operand type(s) for +=: '%s' and 'str'", type_name(v));
        jv w = arg(A, 0, "width", v_int(4));
        int first = truthy(arg(A, 1, "first", v_bool(0))), blank = truthy(arg(A, 2, "blank", v_bool(0)));
        sb ind;
        sb_init(&ind, j);
        if (w.t == T_STR) sb_put_str(&ind, w.u.s);
        else for (long long i = 0; i < num_i(w) && i < 256; i++) sb_putc(&ind, ' ');
        jv indv = sb_val(&ind);
        jv s = to_str(j, v);
        /* s + "\n", splitlines */
        jstr *str = s.u.s;
        sb r;
        sb_init(&r, j);
        if (first) sb_put_str(&r, indv.u.s);
        size_t i = 0;
        int lineno = 0;
        while (i < str->len || (i == str->len && lineno == 0)) {
            size_t e = i;
            while (e < str->len && str->p[e] != '\n' && str->p[e] != '\r') e++;
            int empty = e == i;
            if (lineno) {
                sb_putc(&r, '\n');
                if (blank || !empty) sb_put_str(&r, indv.u.s);
            }
            sb_put_sub(&r, str, i, e);
            lineno++;
            if (e >= str->len) break;
            i = e + (str->p[e] == '\r' && e + 1 < str->len && str->p[e + 1] == '\n' ? 2 : 1);
            if (i >= str->len) break;
        }
        return sb_val(&r);
    }
    if (!strcmp(name, "tojson")) return tojson(j, v, A);
    if (!strcmp(name, "escape") || !strcmp(name, "e") || !strcmp(name, "forceescape")) {
        jv s = to_str(j, v);
        sb r;
        sb_init(&r, j);
        for (size_t i = 0; i < s.u.s->len; i++) {
            char c = s.u.s->p[i];
            if (c == '&') sb_puts(&r, "&amp;");
            else if (c == '<') sb_puts(&r, "&lt;");
            else if (c == '>') sb_puts(&r, "&gt;");
            else if (c == '"') sb_puts(&r, "&#34;");
            else if (c == '\'') sb_puts(&r, "&#39;");
            else sb_putc(&r, c);
        }
        return sb_val(&r);
    }
    if (!strcmp(name, "wordcount")) {
        jv s = to_str(j, v);
        long long n = 0;
        int in = 0;
        for (size_t i = 0; i < s.u.s->len; i++) {
            unsigned char c = (unsigned char)s.u.s->p[i];
            int w = isalnum(c) || c == '_' || c >= 0x80;
            if (w && !in) n++;
            in = w;
        }
        return v_int(n);
    }
    if (!strcmp(name, "batch")) {
        long long n = num_i(arg(A, 0, "linecount", v_int(1)));
        if (n <= 0) jfail(j, "batch: linecount must be positive");
        int fill = has_arg(A, 1, "fill_with");
        jv fw = arg(A, 1, "fill_with", v_none());
        jlist *l = iter_list(j, v), *r = list_new(j, 4), *cur = NULL;
        for (size_t i = 0; i < l->n; i++) {
            if (!cur || (long long)cur->n == n) { cur = list_new(j, (size_t)(n < 64 ? n : 64)); list_push(j, r, v_list(cur)); }
            list_push(j, cur, l->it[i]);
        }
        if (cur && fill) while ((long long)cur->n < n) list_push(j, cur, fw);
        return v_gen(r);
    }
    if (!strcmp(name, "sum")) {
        jv at = arg(A, 0, "attribute", v_none());
        jv acc = arg(A, 1, "start", v_int(0));
        jlist *l = iter_list(j, v);
        for (size_t i = 0; i < l->n; i++)
            acc = arith(j, '+', acc, at.t == T_STR ? attr_path(j, l->it[i], at.u.s->p) : l->it[i]);
        return acc;
    }
    if (!strcmp(name, "min") || !strcmp(name, "max")) {
        int cs = truthy(arg(A, 0, "case_sensitive", v_bool(0)));
        jv at = arg(A, 1, "attribute", v_none());
        sortctx c = {!cs, 0, at.t == T_STR ? at.u.s->p : NULL};
        jlist *l = iter_list(j, v);
        if (!l->n) return lit_undef(j, name[1] == 'i' ? "No smallest item, sequence was empty." : "No largest item, sequence was empty.");
        size_t best = 0;
        jv bk = sort_key(j, l->it[0], &c);
        for (size_t i = 1; i < l->n; i++) {
            jv k = sort_key(j, l->it[i], &c);
            int cmp = py_cmp(j, k, bk, "<");
            if (name[1] == 'i' ? cmp < 0 : cmp > 0) { best = i; bk = k; }
        }
        return l->it[best];
    }
    if (!strcmp(name, "attr")) {
        /* getattr only: a dict's keys are not attributes */
        const char *nm = to_str(j, arg(A, 0, "name", v_undef(NULL))).u.s->p;
        jv m;
        if (v.t == T_UNDEF) jfail(j, "%s", undef_msg(v));
        if (v.t == T_NS) return get_attr(j, v, nm);
        if (method_of(j, v, nm, &m)) return m;
        return v_undef(jprintf(j, "'%s' has no attribute '%s'", obj_repr(v), nm));
    }
    if (!strcmp(name, "format")) {
        jlist *t = list_new(j, (size_t)A->n + 1);
        t->tuple = 1;
        for (int i = 0; i < A->n; i++) list_push(j, t, A->a[i]);
        return arith(j, '%', to_str(j, v), v_list(t));
    }
    if (!strcmp(name, "center")) {
        long long w = num_i(arg(A, 0, "width", v_int(80)));
        jv s = to_str(j, v);
        long long n = (long long)u8_count(s.u.s->p, s.u.s->len);
        if (w <= n) return s;
        long long pad = w - n, left = pad / 2 + (pad & w & 1);
        sb r;
        sb_init(&r, j);
        for (long long i = 0; i < left; i++) sb_putc(&r, ' ');
        sb_put_str(&r, s.u.s);
        for (long long i = 0; i < pad - left; i++) sb_putc(&r, ' ');
        return sb_val(&r);
    }
    jfail(j, "No filter named '%s'.", name);
}

/* ---------------------------------------------------------------- methods and globals */

static jv strftime_now(J *j, jv fmt)
{
    if (fmt.t != T_STR) jfail(j, "strftime_now: the format must be a string");
    time_t t;
    struct tm tm;
    const char *env = getenv("TOKENLOOP_NOW");
    if (env && *env) {
        t = (time_t)strtoll(env, NULL, 10);
        gmtime_r(&t, &tm);
    } else {
        t = time(NULL);
        localtime_r(&t, &tm);
    }
    static const char *const mon[] = {"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"};
    static const char *const day[] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};
    sb r;
    sb_init(&r, j);
    jstr *f = fmt.u.s;
    char buf[64];
    for (size_t i = 0; i < f->len; i++) {
        if (f->p[i] != '%' || i + 1 >= f->len) { sb_putc(&r, f->p[i]); continue; }
        char c = f->p[++i];
        switch (c) {
        case 'd': snprintf(buf, sizeof buf, "%02d", tm.tm_mday); break;
        case 'e': snprintf(buf, sizeof buf, "%2d", tm.tm_mday); break;
        case 'm': snprintf(buf, sizeof buf, "%02d", tm.tm_mon + 1); break;
        case 'Y': snprintf(buf, sizeof buf, "%d", tm.tm_year + 1900); break;
        case 'y': snprintf(buf, sizeof buf, "%02d", tm.tm_year % 100); break;
        case 'b': case 'h': snprintf(buf, sizeof buf, "%.3s", mon[tm.tm_mon]); break;
        case 'B': snprintf(buf, sizeof buf, "%s", mon[tm.tm_mon]); break;
        case 'a': snprintf(buf, sizeof buf, "%.3s", day[tm.tm_wday]); break;
        case 'A': snprintf(buf, sizeof buf, "%s", day[tm.tm_wday]); break;
        case 'H': snprintf(buf, sizeof buf, "%02d", tm.tm_hour); break;
        case 'I': snprintf(buf, sizeof buf, "%02d", tm.tm_hour % 12 ? tm.tm_hour % 12 : 12); break;
        case 'M': snprintf(buf, sizeof buf, "%02d", tm.tm_min); break;
        case 'S': snprintf(buf, sizeof buf, "%02d", tm.tm_sec); break;
        case 'p': snprintf(buf, sizeof buf, "%s", tm.tm_hour < 12 ? "AM" : "PM"); break;
        case 'j': snprintf(buf, sizeof buf, "%03d", tm.tm_yday + 1); break;
        case '%': snprintf(buf, sizeof buf, "%%"); break;
        case '-':
            if (i + 1 < f->len) {
                char d = f->p[++i];
                int x = d == 'd' ? tm.tm_mday : d == 'm' ? tm.tm_mon + 1 : d == 'H' ? tm.tm_hour : d == 'M' ? tm.tm_min : d == 'j' ? tm.tm_yday + 1 : -1;
                if (x < 0) { snprintf(buf, sizeof buf, "%%-%c", d); break; }
                snprintf(buf, sizeof buf, "%d", x);
                break;
            }
            /* fall through */
        default: {
            char one[4] = {'%', c, 0, 0};
            if (!strftime(buf, sizeof buf, one, &tm)) buf[0] = 0;
        }
        }
        sb_puts(&r, buf);
    }
    return sb_val(&r);
}

static jv call_method(J *j, jv self, const char *name, jargs *A)
{
    if (self.t == T_DICT) {
        jdict *d = self.u.d;
        if (!strcmp(name, "get")) {
            jv k = arg(A, 0, "key", v_undef(NULL));
            long i = dict_find(d, k);
            return i >= 0 ? d->v[i] : arg(A, 1, "default", v_none());
        }
        if (!strcmp(name, "items")) {
            jargs none = {0};
            jv r = apply_filter(j, "items", self, &none, NULL);
            r.u.l->gen = 0;
            return r;
        }
        if (!strcmp(name, "keys") || !strcmp(name, "values")) {
            jlist *l = list_new(j, d->n);
            for (size_t i = 0; i < d->n; i++) list_push(j, l, name[0] == 'k' ? d->k[i] : d->v[i]);
            return v_list(l);
        }
        if (!strcmp(name, "copy")) {
            jdict *n = dict_new(j);
            for (size_t i = 0; i < d->n; i++) dict_set(j, n, d->k[i], d->v[i]);
            return v_dict(n);
        }
    }
    if (self.t == T_LIST) {
        jv x = arg(A, 0, "value", v_undef(NULL));
        if (!strcmp(name, "count")) {
            long long c = 0;
            for (size_t i = 0; i < self.u.l->n; i++) c += py_eq(self.u.l->it[i], x);
            return v_int(c);
        }
        if (!strcmp(name, "index")) {
            for (size_t i = 0; i < self.u.l->n; i++)
                if (py_eq(self.u.l->it[i], x)) return v_int((long long)i);
            jfail(j, "value is not in list");
        }
        if (!strcmp(name, "copy")) return apply_filter(j, "list", self, &(jargs){0}, NULL);
    }
    if (self.t == T_STR) {
        jstr *s = self.u.s;
        jv a0 = arg(A, 0, "", v_none());
        if (!strcmp(name, "strip") || !strcmp(name, "lstrip") || !strcmp(name, "rstrip")) {
            if (a0.t != T_NONE && a0.t != T_STR) jfail(j, "%s arg must be None or str", name);
            return str_strip(j, self, a0.t == T_STR ? a0.u.s : NULL, name[0] == 's' ? 3 : name[0] == 'l' ? 1 : 2);
        }
        if (!strcmp(name, "split") || !strcmp(name, "rsplit")) {
            jv sep = arg(A, 0, "sep", v_none());
            jv ms = arg(A, 1, "maxsplit", v_int(-1));
            if (name[0] == 'r' && num_i(ms) >= 0) {
                if (sep.t != T_STR || !sep.u.s->len) jfail(j, "rsplit with maxsplit needs a separator");
                /* split from the right at most maxsplit times */
                jstr *d = sep.u.s;
                size_t cuts[64], nc = 0, e = s->len;
                long long want = num_i(ms);
                while ((long long)nc < want && nc < 64 && e >= d->len) {
                    size_t k = e - d->len;
                    for (;; k--) {
                        if (!memcmp(s->p + k, d->p, d->len)) break;
                        if (!k) { k = (size_t)-1; break; }
                    }
                    if (k == (size_t)-1) break;
                    cuts[nc++] = k;
                    e = k;
                }
                jlist *l = list_new(j, nc + 1);
                size_t start = 0;
                for (size_t c = nc; c > 0; c--) {
                    list_push(j, l, v_sub(j, s, start, cuts[c - 1]));
                    start = cuts[c - 1] + d->len;
                }
                list_push(j, l, v_sub(j, s, start, s->len));
                return v_list(l);
            }
            return str_split(j, s, sep, num_i(ms));
        }
        if (!strcmp(name, "startswith") || !strcmp(name, "endswith")) {
            jlist *opts;
            if (a0.t == T_STR) { opts = list_new(j, 1); list_push(j, opts, a0); }
            else if (a0.t == T_LIST && a0.u.l->tuple) opts = a0.u.l;
            else jfail(j, "%s first arg must be str or a tuple of str, not %s", name, type_name(a0));
            for (size_t i = 0; i < opts->n; i++) {
                jv o = opts->it[i];
                if (o.t != T_STR) jfail(j, "tuple for %s must only contain str", name);
                if (o.u.s->len > s->len) continue;
                const char *at = name[0] == 's' ? s->p : s->p + s->len - o.u.s->len;
                if (!memcmp(at, o.u.s->p, o.u.s->len)) return v_bool(1);
            }
            return v_bool(0);
        }
        if (!strcmp(name, "upper") || !strcmp(name, "lower")) return str_lower_upper(j, self, name[0] == 'u');
        if (!strcmp(name, "title")) return str_title(j, s, 0);
        if (!strcmp(name, "capitalize")) return apply_filter(j, "capitalize", self, &(jargs){0}, NULL);
        if (!strcmp(name, "swapcase")) {
            jv r = v_sub(j, s, 0, s->len);
            char *p = (char *)r.u.s->p;
            for (size_t i = 0; i < s->len; i++)
                p[i] = (char)(isupper((unsigned char)p[i]) ? tolower((unsigned char)p[i]) : toupper((unsigned char)p[i]));
            return r;
        }
        if (!strcmp(name, "replace")) {
            jv o = arg(A, 0, "old", v_undef(NULL)), n = arg(A, 1, "new", v_undef(NULL));
            if (o.t != T_STR || n.t != T_STR) jfail(j, "replace() arguments must be str");
            return str_replace(j, s, o.u.s, n.u.s, num_i(arg(A, 2, "count", v_int(-1))));
        }
        if (!strcmp(name, "format")) {
            sb r;
            sb_init(&r, j);
            put_format(j, &r, s, A);
            return sb_val(&r);
        }
        if (!strcmp(name, "find") || !strcmp(name, "rfind") || !strcmp(name, "index") || !strcmp(name, "count")) {
            if (a0.t != T_STR) jfail(j, "must be str, not %s", type_name(a0));
            jstr *n = a0.u.s;
            if (!strcmp(name, "count")) {
                if (!n->len) return v_int((long long)u8_count(s->p, s->len) + 1);
                long long c = 0;
                for (size_t i = 0; i + n->len <= s->len;)
                    if (!memcmp(s->p + i, n->p, n->len)) { c++; i += n->len; }
                    else i++;
                return v_int(c);
            }
            long long pos = -1;
            for (size_t i = 0; i + n->len <= s->len; i++)
                if (!memcmp(s->p + i, n->p, n->len)) {
                    pos = (long long)i;
                    if (name[0] != 'r') break;
                }
            if (pos < 0 && name[0] == 'i') jfail(j, "substring not found");
            return v_int(pos < 0 ? -1 : (long long)u8_count(s->p, (size_t)pos));
        }
        if (!strcmp(name, "join")) {
            jlist *l = iter_list(j, a0);
            sb r;
            sb_init(&r, j);
            for (size_t i = 0; i < l->n; i++) {
                if (l->it[i].t != T_STR) jfail(j, "sequence item %zu: expected str instance, %s found", i, type_name(l->it[i]));
                if (i) sb_put_str(&r, s);
                sb_put_str(&r, l->it[i].u.s);
            }
            return sb_val(&r);
        }
        if (!strcmp(name, "splitlines")) {
            jlist *l = list_new(j, 4);
            size_t i = 0;
            while (i < s->len) {
                size_t e = i;
                while (e < s->len && s->p[e] != '\n' && s->p[e] != '\r') e++;
                list_push(j, l, v_sub(j, s, i, e));
                i = e + (e < s->len && s->p[e] == '\r' && e + 1 < s->len && s->p[e + 1] == '\n' ? 2 : 1);
            }
            return v_list(l);
        }
        if (!strncmp(name, "is", 2)) {
            if (!s->len) return v_bool(0);
            int cased = 0;
            for (size_t i = 0; i < s->len; i++) {
                unsigned char c = (unsigned char)s->p[i];
                if (!strcmp(name, "isdigit") && !isdigit(c)) return v_bool(0);
                if (!strcmp(name, "isalpha") && !isalpha(c)) return v_bool(0);
                if (!strcmp(name, "isalnum") && !isalnum(c)) return v_bool(0);
                if (!strcmp(name, "isspace") && !is_ws((char)c)) return v_bool(0);
                if (!strcmp(name, "islower") && isupper(c)) return v_bool(0);
                if (!strcmp(name, "isupper") && islower(c)) return v_bool(0);
                if (isalpha(c)) cased = 1;
            }
            return v_bool(strcmp(name, "islower") && strcmp(name, "isupper") ? 1 : cased);
        }
        if (!strcmp(name, "center") || !strcmp(name, "ljust") || !strcmp(name, "rjust") || !strcmp(name, "zfill")) {
            long long w = num_i(arg(A, 0, "width", v_int(0)));
            long long n = (long long)u8_count(s->p, s->len);
            if (w <= n) return self;
            if (w > 1 << 20) jfail(j, "width too large");
            sb r;
            sb_init(&r, j);
            long long pad = w - n, left = name[0] == 'c' ? pad / 2 + (pad & w & 1) : name[0] == 'l' ? 0 : pad;
            char fill = name[0] == 'z' ? '0' : ' ';
            for (long long i = 0; i < left; i++) sb_putc(&r, fill);
            sb_put_str(&r, s);
            for (long long i = 0; i < pad - left; i++) sb_putc(&r, fill);
            return sb_val(&r);
        }
    }
    jfail(j, "'%s' object has no method '%s'", type_name(self), name);
}

/* ---------------------------------------------------------------- evaluation */

static jv eval(J *j, node *n, frame *f);
static int exec(J *j, node *n, frame *f, sb *out);
static void bind_undef_start(J *j, frame *f, const node *body);

static void eval_args(J *j, node *n, frame *f, jargs *A)
{
    A->n = n->nv;
    A->a = n->nv ? jalloc(j, (size_t)n->nv * sizeof(jv)) : NULL;
    for (int i = 0; i < n->nv; i++) A->a[i] = eval(j, n->v[i], f);
    A->nk = n->nv2;
    A->kn = n->names;
    A->kv = n->nv2 ? jalloc(j, (size_t)n->nv2 * sizeof(jv)) : NULL;
    for (int i = 0; i < n->nv2; i++) A->kv[i] = eval(j, n->v2[i], f);
}

static void bind(J *j, frame *f, node *target, jv v)
{
    if (target->k == E_NAME) {
        dict_set_s(j, &f->vars, target->name, v);
        return;
    }
    jlist *l;
    if (v.t == T_LIST) l = v.u.l;
    else if (v.t == T_STR || v.t == T_DICT) l = iter_list(j, v);
    else jfail(j, "cannot unpack non-iterable %s object", type_name(v));
    if ((int)l->n < target->nv) jfail(j, "not enough values to unpack (expected %d, got %zu)", target->nv, l->n);
    if ((int)l->n > target->nv) jfail(j, "too many values to unpack (expected %d)", target->nv);
    for (int i = 0; i < target->nv; i++) bind(j, f, target->v[i], l->it[i]);
}

static jv call_macro(J *j, jfunc *fn, jargs *A, jv caller)
{
    node *m = fn->macro;
    frame *mf = frame_new(j, fn->closure);
    if (A->n > m->nnames)
        jfail(j, "macro '%s' takes not more than %d argument(s)", m->name ? m->name : "caller", m->nnames);
    for (int i = 0; i < A->nk; i++) {
        int k;
        for (k = 0; k < m->nnames; k++)
            if (!strcmp(m->names[k], A->kn[i])) break;
        if (k == m->nnames) jfail(j, "macro '%s' takes no keyword argument '%s'", m->name ? m->name : "caller", A->kn[i]);
    }
    for (int k = 0; k < m->nnames; k++) {
        jv v;
        if (k < A->n) v = A->a[k];
        else if (has_arg(A, -1, m->names[k])) v = arg(A, -1, m->names[k], v_none());
        else if (m->v2[k]) v = eval(j, m->v2[k], mf);
        else v = v_undef(jprintf(j, "parameter '%s' was not provided", m->names[k]));
        dict_set_s(j, &mf->vars, m->names[k], v);
    }
    if (caller.t == T_FUNC) dict_set_s(j, &mf->vars, "caller", caller);
    bind_undef_start(j, mf, m->b);
    sb out;
    sb_init(&out, j);
    exec(j, m->b, mf, &out);
    return sb_val(&out);
}

static jv call_value(J *j, jv fnv, jargs *A, jv caller)
{
    if (fnv.t == T_UNDEF) jfail(j, "%s", undef_msg(fnv));
    if (fnv.t != T_FUNC) jfail(j, "'%s' object is not callable", type_name(fnv));
    jfunc *fn = fnv.u.fn;
    if (fn->kind == F_MACRO || fn->kind == F_CALLER) return call_macro(j, fn, A, caller);
    if (fn->kind == F_METHOD) return call_method(j, fn->self, fn->name, A);
    const char *name = fn->name;
    if (!strcmp(name, "raise_exception")) {
        jv m = to_str(j, arg(A, 0, "message", v_str(j, "", 0)));
        jraise(j, m.u.s->p, m.u.s->len);
    }
    if (!strcmp(name, "strftime_now")) return strftime_now(j, arg(A, 0, "format", v_undef(NULL)));
    if (!strcmp(name, "range")) {
        long long a = 0, b, s = 1;
        for (int i = 0; i < A->n; i++)
            if (A->a[i].t != T_INT && A->a[i].t != T_BOOL) jfail(j, "'%s' object cannot be interpreted as an integer", type_name(A->a[i]));
        if (A->n == 1) b = num_i(A->a[0]);
        else if (A->n >= 2) { a = num_i(A->a[0]); b = num_i(A->a[1]); if (A->n > 2) s = num_i(A->a[2]); }
        else jfail(j, "range expected at least 1 argument, got 0");
        if (!s) jfail(j, "range() arg 3 must not be zero");
        long long cnt = s > 0 ? (b > a ? (b - a + s - 1) / s : 0) : (a > b ? (a - b - s - 1) / -s : 0);
        if (cnt > 100000) jfail(j, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
        jlist *l = list_new(j, (size_t)cnt + 1);
        for (long long i = 0; i < cnt; i++) list_push(j, l, v_int(a + i * s));
        return v_list(l);
    }
    if (!strcmp(name, "namespace") || !strcmp(name, "dict")) {
        jdict *d = dict_new(j);
        if (A->n == 1 && A->a[0].t == T_DICT)
            for (size_t i = 0; i < A->a[0].u.d->n; i++) dict_set(j, d, A->a[0].u.d->k[i], A->a[0].u.d->v[i]);
        else if (A->n) jfail(j, "%s() takes keyword arguments", name);
        for (int i = 0; i < A->nk; i++) dict_set_s(j, d, A->kn[i], A->kv[i]);
        jv v = v_dict(d);
        if (name[0] == 'n') v.t = T_NS;
        return v;
    }
    if (!strcmp(name, "cycle")) {
        if (!A->n) jfail(j, "no items for cycling given");
        return A->a[num_i(fn->self.u.d->v[1]) % A->n]; /* self: the loop; v[1]: index0 */
    }
    jfail(j, "'%s' is not callable", name);
}

static jv eval(J *j, node *n, frame *f)
{
    if (++j->depth > MAX_DEPTH) jfail(j, "maximum recursion depth exceeded");
    int saved_line = j->line;
    j->line = n->line;
    jv r;
    switch (n->k) {
    case E_CONST: r = n->val; break;
    case E_NAME: r = lookup(j, f, n->name); break;
    case E_BLOCKINPUT: { jv v = {.t = T_STR}; v.u.s = j->block_input; r = v; break; }
    case E_ATTR: r = get_attr(j, eval(j, n->a, f), n->attr); break;
    case E_ITEM: { jv o = eval(j, n->a, f); r = get_item(j, o, eval(j, n->b, f)); break; }
    case E_SLICE: {
        jv o = eval(j, n->a, f);
        jv a = n->b ? eval(j, n->b, f) : v_none(), b = n->c ? eval(j, n->c, f) : v_none(), c = n->d ? eval(j, n->d, f) : v_none();
        r = do_slice(j, o, a, b, c);
        break;
    }
    case E_CALL: {
        jv fnv = eval(j, n->a, f);
        jargs A;
        eval_args(j, n, f, &A);
        r = call_value(j, fnv, &A, v_none());
        break;
    }
    case E_FILTER: {
        jv in = eval(j, n->a, f);
        jargs A;
        eval_args(j, n, f, &A);
        r = apply_filter(j, n->name, in, &A, f);
        break;
    }
    case E_TEST: {
        jv in = eval(j, n->a, f);
        jargs A;
        eval_args(j, n, f, &A);
        r = v_bool(apply_test(j, n->name, in, &A) != n->op);
        break;
    }
    case E_BIN: { jv a = eval(j, n->a, f); r = arith(j, n->op, a, eval(j, n->b, f)); break; }
    case E_NEG: case E_POS: {
        jv a = eval(j, n->a, f);
        if (a.t == T_UNDEF) jfail(j, "%s", undef_msg(a));
        if (!is_num(a)) jfail(j, "bad operand type for unary %c: '%s'", n->k == E_NEG ? '-' : '+', type_name(a));
        if (n->k == E_POS) r = a.t == T_BOOL ? v_int(a.u.b) : a;
        else if (a.t != T_FLOAT && num_i(a) == LLONG_MIN)
            jfail(j, "integer overflow: -(%lld) does not fit in 64 bits (Python's integers have no limit; "
                  "tokenloop's are 64-bit)", LLONG_MIN);
        else r = a.t == T_FLOAT ? v_float(-a.u.f) : v_int(-num_i(a));
        break;
    }
    case E_NOT: r = v_bool(!truthy(eval(j, n->a, f))); break;
    case E_AND: { jv a = eval(j, n->a, f); r = truthy(a) ? eval(j, n->b, f) : a; break; }
    case E_OR: { jv a = eval(j, n->a, f); r = truthy(a) ? a : eval(j, n->b, f); break; }
    case E_CMP: {
        jv a = eval(j, n->a, f);
        r = v_bool(1);
        for (int i = 0; i < n->nv; i++) {
            jv b = eval(j, n->v[i], f);
            int ok;
            switch (n->v2[i]->op) {
            case C_EQ: ok = py_eq(a, b); break;
            case C_NE: ok = !py_eq(a, b); break;
            case C_LT: ok = py_cmp(j, a, b, "<") < 0; break;
            case C_LE: ok = py_cmp(j, a, b, "<=") <= 0; break;
            case C_GT: ok = py_cmp(j, a, b, ">") > 0; break;
            case C_GE: ok = py_cmp(j, a, b, ">=") >= 0; break;
            case C_IN: ok = contains(j, b, a); break;
            default: ok = !contains(j, b, a); break;
            }
            if (!ok) { r = v_bool(0); break; }
            a = b;
        }
        break;
    }
    case E_COND:
        if (truthy(eval(j, n->a, f))) r = eval(j, n->b, f);
        else r = n->c ? eval(j, n->c, f) : v_undef("the inline if-expression evaluated to false and no else section was defined.");
        break;
    case E_LIST: case E_TUPLE: {
        jlist *l = list_new(j, (size_t)n->nv + 1);
        for (int i = 0; i < n->nv; i++) list_push(j, l, eval(j, n->v[i], f));
        l->tuple = n->k == E_TUPLE;
        r = v_list(l);
        break;
    }
    case E_DICT: {
        jdict *d = dict_new(j);
        for (int i = 0; i < n->nv; i++) {
            jv k = eval(j, n->v[i], f);
            if (k.t == T_LIST && !k.u.l->tuple) jfail(j, "unhashable type: 'list'");
            if (k.t == T_DICT) jfail(j, "unhashable type: 'dict'");
            dict_set(j, d, k, eval(j, n->v2[i], f));
        }
        r = v_dict(d);
        break;
    }
    case E_CONCAT: {
        sb b;
        sb_init(&b, j);
        for (int i = 0; i < n->nv; i++) put_str(&b, eval(j, n->v[i], f));
        r = sb_val(&b);
        break;
    }
    default: jfail(j, "internal error: bad expression node %d", n->k);
    }
    j->line = saved_line;
    j->depth--;
    return r;
}

enum { X_NORMAL, X_BREAK, X_CONTINUE };

/* names the scope analysis found to start out undefined in this scope */
static void bind_undef_start(J *j, frame *f, const node *body)
{
    for (int i = 0; body && i < body->nnames; i++)
        dict_set_s(j, &f->vars, body->names[i], v_undef(jprintf(j, "'%s' is undefined", body->names[i])));
}

static int exec_for(J *j, node *n, frame *f, sb *out)
{
    jv seq = eval(j, n->a, f);
    jlist *items = iter_list(j, seq);
    frame *lf = frame_new(j, f);
    if (n->b) {
        jlist *kept = list_new(j, items->n + 1);
        for (size_t i = 0; i < items->n; i++) {
            if (++j->iters > MAX_ITERS) jfail(j, "too many loop iterations (limit %lld)", MAX_ITERS);
            bind(j, lf, n->d, items->it[i]);
            if (truthy(eval(j, n->b, lf))) list_push(j, kept, items->it[i]);
        }
        items = kept;
    }
    size_t cnt = items->n;
    /* Jinja2 runs the else block unless some iteration reached the end of the body: a loop
     * whose iterations all break or continue gets it too */
    int completed = 0;
    static const char *const K[] = {"index", "index0", "revindex", "revindex0", "first", "last", "length", "depth", "depth0", "previtem", "nextitem", "cycle"};
    jdict *loop = dict_new(j);
    for (size_t k = 0; k < 12; k++) dict_set_s(j, loop, K[k], v_none());
    loop->v[11] = mk_func(j, F_BUILTIN, "cycle", v_dict(loop));
    jv loop_key = v_cstr(j, "loop");
    jv target_key = n->d->k == E_NAME ? v_cstr(j, n->d->name) : v_none();
    lf = frame_new(j, f);
    for (size_t i = 0; i < cnt; i++) {
        if (++j->iters > MAX_ITERS) jfail(j, "too many loop iterations (limit %lld)", MAX_ITERS);
        /* as Jinja2: what the body sets lasts for one iteration only (nothing can hold on to
         * the iteration's frame past it, so it is emptied and reused) */
        lf->vars.n = 0;
        if (n->d->k == E_NAME) dict_set(j, &lf->vars, target_key, items->it[i]);
        else bind(j, lf, n->d, items->it[i]);
        bind_undef_start(j, lf, n->c);
        jv *v = loop->v;
        v[0] = v_int((long long)i + 1);
        v[1] = v_int((long long)i);
        v[2] = v_int((long long)(cnt - i));
        v[3] = v_int((long long)(cnt - i - 1));
        v[4] = v_bool(i == 0);
        v[5] = v_bool(i == cnt - 1);
        v[6] = v_int((long long)cnt);
        v[7] = v_int(1);
        v[8] = v_int(0);
        v[9] = i ? items->it[i - 1] : v_undef("there is no previous item");
        v[10] = i + 1 < cnt ? items->it[i + 1] : v_undef("there is no next item");
        dict_set(j, &lf->vars, loop_key, v_dict(loop));
        int x = exec(j, n->c, lf, out);
        if (x == X_BREAK) break;
        if (x == X_NORMAL) completed = 1;
    }
    if (!completed && n->nv) {
        lf->vars.n = 0;
        return exec(j, n->v[0], lf, out);
    }
    return X_NORMAL;
}

static int exec(J *j, node *n, frame *f, sb *out)
{
    if (++j->depth > MAX_DEPTH) jfail(j, "maximum recursion depth exceeded");
    int r = X_NORMAL;
    j->line = n->line;
    switch (n->k) {
    case S_BODY:
        for (node *c = n->a; c; c = c->next) {
            r = exec(j, c, f, out);
            if (r != X_NORMAL) break;
        }
        break;
    case S_TEXT: sb_put_str(out, n->val.u.s); break;
    case S_OUT: put_str(out, eval(j, n->a, f)); break;
    case S_IF:
        if (truthy(eval(j, n->a, f))) r = exec(j, n->b, f, out);
        else if (n->c) r = exec(j, n->c, f, out);
        break;
    case S_FOR: r = exec_for(j, n, f, out); break;
    case S_BREAK: r = X_BREAK; break;
    case S_CONTINUE: r = X_CONTINUE; break;
    case S_SET: case S_SETBLOCK: {
        jv v;
        if (n->k == S_SET) v = eval(j, n->a, f);
        else {
            sb cap;
            sb_init(&cap, j);
            frame *bf = frame_new(j, f); /* the block is a scope of its own */
            bind_undef_start(j, bf, n->b);
            exec(j, n->b, bf, &cap);
            v = sb_val(&cap);
            if (n->a) {
                jstr *saved = j->block_input;
                j->block_input = v.u.s;
                v = eval(j, n->a, f);
                j->block_input = saved;
            }
        }
        if (n->d->k == E_ATTR) {
            jv ns = lookup(j, f, n->d->name);
            if (ns.t != T_NS) jfail(j, "cannot assign attribute on non-namespace object");
            dict_set_s(j, ns.u.d, n->d->attr, v);
        } else
            bind(j, f, n->d, v);
        break;
    }
    case S_MACRO: {
        jv m = mk_func(j, F_MACRO, n->name, v_none());
        m.u.fn->macro = n;
        m.u.fn->closure = f;
        dict_set_s(j, &f->vars, n->name, m);
        break;
    }
    case S_CALLBLOCK: {
        jv caller = mk_func(j, F_CALLER, "caller", v_none());
        caller.u.fn->macro = n;
        caller.u.fn->closure = f;
        node *c = n->a;
        jv fnv = eval(j, c->a, f);
        jargs A;
        eval_args(j, c, f, &A);
        if (fnv.t == T_FUNC && fnv.u.fn->kind == F_MACRO) put_str(out, call_macro(j, fnv.u.fn, &A, caller));
        else put_str(out, call_value(j, fnv, &A, caller));
        break;
    }
    case S_FILTERBLOCK: {
        sb cap;
        sb_init(&cap, j);
        frame *bf = frame_new(j, f); /* the block is a scope of its own */
        bind_undef_start(j, bf, n->b);
        exec(j, n->b, bf, &cap);
        jv v = sb_val(&cap);
        jstr *saved = j->block_input;
        j->block_input = v.u.s;
        put_str(out, eval(j, n->a, f));
        j->block_input = saved;
        break;
    }
    case S_WITH: {
        frame *wf = frame_new(j, f);
        for (int i = 0; i < n->nv; i++) dict_set_s(j, &wf->vars, n->v[i]->name, eval(j, n->v2[i], f));
        bind_undef_start(j, wf, n->b);
        r = exec(j, n->b, wf, out);
        break;
    }
    default: jfail(j, "internal error: bad statement node %d", n->k);
    }
    j->depth--;
    return r;
}

/* ---------------------------------------------------------------- entry points */

int tl_jinja_render_vars(const tl_template *tpl, const tl_jinja_var *vars, size_t n_vars,
                         char **out, size_t *out_len, tl_span **spans, size_t *n_spans,
                         tl_error *err)
{
    *out = NULL;
    if (out_len) *out_len = 0;
    if (spans) *spans = NULL;
    if (n_spans) *n_spans = 0;
    arena ar = {0};
    J *j = calloc(1, sizeof *j);
    if (!j) return tl_error_set(err, "template: out of memory");
    j->ar = &ar;
    j->err = err;
    if (setjmp(j->jb)) {
        free(*out);
        *out = NULL;
        if (spans) { free(*spans); *spans = NULL; }
        if (n_spans) *n_spans = 0;
        arena_free(&ar);
        free(j);
        return -1;
    }
    j->root = frame_new(j, NULL);
    for (size_t i = 0; i < n_vars; i++) {
        jv v = json_parse(j, vars[i].json ? vars[i].json : "null", vars[i].mark_content);
        dict_set_s(j, &j->root->vars, vars[i].name, v);
    }
    bind_undef_start(j, j->root, tpl->body);
    sb o;
    sb_init(&o, j);
    exec(j, tpl->body, j->root, &o);
    char *text = malloc(o.len + 1);
    tl_span *sp = spans && o.nsp ? malloc(o.nsp * sizeof *sp) : NULL;
    if (!text || (spans && o.nsp && !sp)) {
        free(text);
        free(sp);
        jfail(j, "out of memory");
    }
    if (o.len) memcpy(text, o.p, o.len);
    text[o.len] = 0;
    if (sp) memcpy(sp, o.sp, o.nsp * sizeof *sp);
    *out = text;
    if (out_len) *out_len = o.len;
    if (spans) *spans = sp;
    if (n_spans) *n_spans = spans ? o.nsp : 0;
    arena_free(&ar);
    free(j);
    return 0;
}

int tl_template_render(const tl_template *tpl, const cJSON *context, char **out, size_t *out_len,
                       tl_error *err)
{
    size_t n = 0;
    const cJSON *it;
    if (context && !cJSON_IsObject(context)) return tl_error_set(err, "template: the context must be a JSON object");
    if (context) cJSON_ArrayForEach(it, context) n++;
    tl_jinja_var *vars = calloc(n + 1, sizeof *vars);
    if (!vars) return tl_error_set(err, "template: out of memory");
    size_t k = 0;
    int rc = 0;
    if (context) cJSON_ArrayForEach(it, context) {
        vars[k].name = it->string;
        vars[k].json = cJSON_PrintUnformatted(it);
        if (!vars[k].json) rc = tl_error_set(err, "template: out of memory");
        k++;
    }
    if (!rc) rc = tl_jinja_render_vars(tpl, vars, n, out, out_len, NULL, NULL, err);
    for (size_t i = 0; i < k; i++) cJSON_free((void *)vars[i].json);
    free(vars);
    return rc;
}
