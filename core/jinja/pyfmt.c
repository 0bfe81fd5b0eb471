/* How Python writes values: str(), repr(), float repr, printf-style % formatting and
 * str.format. Kept together because they must agree byte for byte with CPython's output. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "jinja/internal.h"

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
    size_t hn = strlen(head), len = hn + jinja_u8_count(body, n);
    size_t pad = width > 0 && (size_t)width > len ? (size_t)width - len : 0;
    if (pad > MAX_STRING) jinja_fail(r->j, JE_LIMIT, "format too wide");
    if (!left && !(zero && hn))
        for (size_t i = 0; i < pad; i++) jinja_sb_putc(r, ' ');
    jinja_sb_puts(r, head);
    if (!left && zero && hn)
        for (size_t i = 0; i < pad; i++) jinja_sb_putc(r, '0');
    jinja_sb_put(r, body, n);
    if (left)
        for (size_t i = 0; i < pad; i++) jinja_sb_putc(r, ' ');
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

/* %d %i %u of an integer past 64 bits: its decimal digits, signed, padded as py_int_format */
static void py_big_format(sb *r, const char *spec, jv x)
{
    int left, zero;
    char sign;
    long width, prec;
    spec_parse(spec, &left, &zero, &sign, &width, &prec);
    const char *d = x.u.s->p;
    size_t n = x.u.s->len;
    char head[2] = {0, 0};
    if (d[0] == '-') { head[0] = '-'; d++; n--; }
    else head[0] = sign;
    size_t digits = prec > 0 && (size_t)prec > n ? (size_t)prec : n, zeros = 0;
    if (zero && !left && !head[0] && width > 0 && (size_t)width > digits) zeros = (size_t)width - digits;
    if (digits + zeros > MAX_STRING) jinja_fail(r->j, JE_LIMIT, "format too wide");
    sb body;
    jinja_sb_init(&body, r->j);
    for (size_t i = n; i < digits + zeros; i++) jinja_sb_putc(&body, '0');
    jinja_sb_put(&body, d, n);
    py_pad(r, spec, body.p, body.len, head);
}

/* repr(float) as Python writes it: the shortest digits that round-trip */
void jinja_fmt_float(char *out, size_t cap, double d)
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
    jinja_sb_putc(b, q);
    for (size_t i = 0; i < s->len;) {
        unsigned cp;
        size_t k = jinja_u8_next(s->p, s->len, i, &cp);
        if (cp == (unsigned char)q || cp == '\\') { jinja_sb_putc(b, '\\'); jinja_sb_putc(b, (char)cp); }
        else if (cp == '\n') jinja_sb_puts(b, "\\n");
        else if (cp == '\r') jinja_sb_puts(b, "\\r");
        else if (cp == '\t') jinja_sb_puts(b, "\\t");
        else if (!py_printable(cp)) {
            char t[16];
            snprintf(t, sizeof t, cp < 0x100 ? "\\x%02x" : cp < 0x10000 ? "\\u%04x" : "\\U%08x", cp);
            jinja_sb_puts(b, t);
        } else
            jinja_sb_put(b, s->p + i, k);
        i += k;
    }
    jinja_sb_putc(b, q);
}

/* str(v) */
void jinja_put_str(sb *b, jv v)
{
    char t[64];
    switch (v.t) {
    case T_UNDEF: return;
    case T_NONE: jinja_sb_puts(b, "None"); return;
    case T_BOOL: jinja_sb_puts(b, v.u.b ? "True" : "False"); return;
    case T_INT: snprintf(t, sizeof t, "%lld", v.u.i); jinja_sb_puts(b, t); return;
    case T_BIG: jinja_sb_put_str(b, v.u.s); return;
    case T_FLOAT: jinja_fmt_float(t, sizeof t, v.u.f); jinja_sb_puts(b, t); return;
    case T_STR: jinja_sb_put_str(b, v.u.s); return;
    case T_NS:
        jinja_sb_puts(b, "<Namespace ");
        { jv d = v; d.t = T_DICT; jinja_put_repr(b, d); }
        jinja_sb_puts(b, ">");
        return;
    case T_FUNC: jinja_sb_puts(b, "<function "); jinja_sb_puts(b, v.u.fn->name ? v.u.fn->name : "?"); jinja_sb_puts(b, ">"); return;
    default: jinja_put_repr(b, v);
    }
}

void jinja_put_repr(sb *b, jv v)
{
    if (++b->j->depth > MAX_DEPTH)
        jinja_fail(b->j, JE_RECURSION, "value nested too deeply");
    switch (v.t) {
    case T_STR:
        if (v.xc) jinja_sb_puts(b, "Markup(");
        put_str_repr(b, v.u.s);
        if (v.xc) jinja_sb_putc(b, ')');
        break;
    case T_LIST: {
        jlist *l = v.u.l;
        if (l->gen) { jinja_sb_puts(b, "<generator object>"); break; }
        if (l->view) { jinja_sb_puts(b, jinja_type_name(v)); jinja_sb_putc(b, '('); }
        jinja_sb_putc(b, l->tuple ? '(' : '[');
        for (size_t i = 0; i < l->n; i++) {
            if (i) jinja_sb_puts(b, ", ");
            jinja_put_repr(b, l->it[i]);
        }
        if (l->tuple && l->n == 1) jinja_sb_putc(b, ',');
        jinja_sb_putc(b, l->tuple ? ')' : ']');
        if (l->view) jinja_sb_putc(b, ')');
        break;
    }
    case T_DICT: {
        jdict *d = v.u.d;
        jinja_sb_putc(b, '{');
        for (size_t i = 0; i < d->n; i++) {
            if (i) jinja_sb_puts(b, ", ");
            jinja_put_repr(b, d->k[i]);
            jinja_sb_puts(b, ": ");
            jinja_put_repr(b, d->v[i]);
        }
        jinja_sb_putc(b, '}');
        break;
    }
    case T_UNDEF: jinja_sb_puts(b, "Undefined"); break;
    default: jinja_put_str(b, v);
    }
    b->j->depth--;
}

jv jinja_to_str(J *j, jv v)
{
    if (v.t == T_STR)
        return v;
    sb b;
    jinja_sb_init(&b, j);
    jinja_put_str(&b, v);
    return jinja_sb_val(&b);
}

/* str % args: printf-style formatting as Python does it */
jv jinja_py_percent(J *j, jstr *f, jv b)
{
    jlist *args = b.t == T_LIST && b.u.l->tuple ? b.u.l : NULL;
    size_t ai = 0;
    int used = 0;
    sb r;
    jinja_sb_init(&r, j);
    for (size_t i = 0; i < f->len; i++) {
        if (f->p[i] != '%' || i + 1 >= f->len) { jinja_sb_putc(&r, f->p[i]); continue; }
        char c = f->p[++i];
        if (c == '%') { jinja_sb_putc(&r, '%'); continue; }
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
        if (i >= f->len) jinja_fail(j, JE_VALUE, "incomplete format");
        c = f->p[i];
        jv x = args ? (ai < args->n ? args->it[ai++] : v_undef(NULL)) : b;
        if (args && x.t == T_UNDEF && !x.u.undef) jinja_fail(j, JE_TYPE, "not enough arguments for format string");
        if (!args && used++) jinja_fail(j, JE_TYPE, "not enough arguments for format string");
        if ((c == 's' || c == 'r') && sl == 1) {
            if (c == 's') jinja_put_str(&r, x);
            else jinja_put_repr(&r, x);
        } else if (c == 's' || c == 'r') {
            sb t;
            jinja_sb_init(&t, j);
            if (c == 's') jinja_put_str(&t, x);
            else jinja_put_repr(&t, x);
            jv tv = jinja_sb_val(&t);
            spec[sl] = 0;
            /* width and precision count characters, as Python's do (C's count bytes) */
            int left, zero;
            char sign;
            long width, prec;
            spec_parse(spec, &left, &zero, &sign, &width, &prec);
            size_t n = tv.u.s->len;
            if (prec >= 0) n = jinja_u8_offset(tv.u.s->p, tv.u.s->len, (size_t)prec);
            py_pad(&r, spec, tv.u.s->p, n, "");
        } else if (c == 'c') {
            /* chr(x), or a one-character string, padded as %s is */
            sb t;
            jinja_sb_init(&t, j);
            if (x.t == T_STR && jinja_u8_count(x.u.s->p, x.u.s->len) == 1) {
                jinja_sb_put(&t, x.u.s->p, x.u.s->len);
            } else if (x.t == T_BIG) {
                jinja_fail(j, JE_OVERFLOW, "%%c arg not in range(0x110000)");
            } else if (x.t == T_INT || x.t == T_BOOL) {
                long long cp = num_i(x);
                if (cp < 0 || cp > 0x10FFFF) jinja_fail(j, JE_OVERFLOW, "%%c arg not in range(0x110000)");
                if (cp >= 0xD800 && cp <= 0xDFFF) jinja_fail(j, JE_UNICODE, "%%c: U+%04llX is a surrogate, no character", cp);
                jinja_u8_put(&t, (unsigned)cp);
            } else
                jinja_fail(j, JE_TYPE, "%%c requires int or char");
            spec[sl] = 0;
            jv tv = jinja_sb_val(&t);
            py_pad(&r, spec, tv.u.s->p, tv.u.s->len, "");
        } else if (strchr("diouxX", c) && c) {
            if ((!is_num(x) && x.t != T_BIG) || (x.t == T_FLOAT && strchr("oxX", c)))
                jinja_fail(j, JE_TYPE, "%%%c format: %s is required, not %s", c, strchr("oxX", c) ? "an integer" : "a real number",
                      jinja_type_name(x));
            if (x.t == T_FLOAT) x = jinja_big_from_double(j, x.u.f); /* int(x), exactly */
            spec[sl] = 0;
            if (x.t != T_BIG) py_int_format(&r, spec, c, num_i(x));
            else if (!strchr("oxX", c)) py_big_format(&r, spec, x);
            else jinja_fail(j, JE_UNSUPPORTED, "%%%c of an integer past 64 bits", c);
        } else if (strchr("eEfFgG", c) && c) {
            if (x.t == T_BIG) x = v_float(jinja_big_to_double(j, x));
            if (!is_num(x)) jinja_fail(j, JE_TYPE, "%%%c format: a real number is required, not %s", c, jinja_type_name(x));
            char o[512];
            {
                spec[sl++] = c;
                spec[sl] = 0;
                snprintf(o, sizeof o, spec, num_f(x));
            }
            jinja_sb_puts(&r, o);
        } else jinja_fail(j, JE_VALUE, "unsupported format character '%c'", c);
    }
    if ((args && ai < args->n) || (!args && !used && b.t != T_DICT && b.t != T_LIST))
        jinja_fail(j, JE_TYPE, "not all arguments converted during string formatting");
    return jinja_sb_val(&r);
}

void jinja_put_format(J *j, sb *r, jstr *f, jargs *A)
{
    int auto_i = 0;
    for (size_t i = 0; i < f->len; i++) {
        char c = f->p[i];
        if (c == '{' && i + 1 < f->len && f->p[i + 1] == '{') { jinja_sb_putc(r, '{'); i++; continue; }
        if (c == '}' && i + 1 < f->len && f->p[i + 1] == '}') { jinja_sb_putc(r, '}'); i++; continue; }
        if (c != '{') { jinja_sb_putc(r, c); continue; }
        size_t e = i + 1;
        while (e < f->len && f->p[e] != '}') e++;
        if (e >= f->len) jinja_fail(j, JE_VALUE, "Single '{' encountered in format string");
        const char *field = f->p + i + 1;
        size_t fl = e - i - 1, fn = 0;
        while (fn < fl && !strchr(".[!:", field[fn])) fn++;   /* the argument's name or index */
        jv x;
        if (!fn || isdigit((unsigned char)field[0])) {
            int k = fn ? atoi(field) : auto_i++;
            if (k >= A->n) jinja_fail(j, JE_INDEX, "Replacement index %d out of range for positional args tuple", k);
            x = A->a[k];
        } else {
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)(fn < 63 ? fn : 63), field);
            x = jinja_arg(A, -1, name, v_undef(NULL));
            if (x.t == T_UNDEF && !x.u.undef) { /* KeyError's text is the key's repr */
                sb k;
                jinja_sb_init(&k, j);
                jinja_put_repr(&k, jinja_v_cstr(j, name));
                jinja_fail(j, JE_KEY, "%s", jinja_sb_val(&k).u.s->p);
            }
        }
        if (fn + 1 < fl || (fn < fl && field[fn] != ':'))
            jinja_fail(j, JE_UNSUPPORTED, "str.format: format specs, conversions and field access ('%.*s') are not supported",
                  (int)fl, field);
        jinja_put_str(r, x);
        i = e;
    }
}

/* pprint's order for a dict's items: by key, then value; values of kinds that do not compare
 * go by their type's name, as pprint's _safe_key does */
static int safe_cmp(J *j, jv a, jv b)
{
    int na = is_num(a) || a.t == T_BIG, nb = is_num(b) || b.t == T_BIG;
    if ((na && nb) || (a.t == T_STR && b.t == T_STR) || (a.t == T_LIST && b.t == T_LIST)) return jinja_py_cmp(j, a, b, "<");
    return strcmp(jinja_type_name(a), jinja_type_name(b));
}

static size_t *sorted_items(J *j, jdict *d)
{
    size_t *ord = jinja_alloc(j, (d->n + 1) * sizeof *ord);
    for (size_t i = 0; i < d->n; i++) ord[i] = i;
    for (size_t i = 1; i < d->n; i++)   /* insertion sort: stable, and dicts here are small */
        for (size_t k = i; k > 0; k--) {
            int c = safe_cmp(j, d->k[ord[k]], d->k[ord[k - 1]]);
            if (!c) c = safe_cmp(j, d->v[ord[k]], d->v[ord[k - 1]]);
            if (c >= 0) break;
            size_t x = ord[k]; ord[k] = ord[k - 1]; ord[k - 1] = x;
        }
    return ord;
}

/* pprint's _safe_repr: repr with every dict's items sorted */
static void pf_repr(sb *b, jv v)
{
    if (++b->j->depth > MAX_DEPTH) jinja_fail(b->j, JE_RECURSION, "value nested too deeply");
    if (v.t == T_DICT) {
        size_t *ord = sorted_items(b->j, v.u.d);
        jinja_sb_putc(b, '{');
        for (size_t i = 0; i < v.u.d->n; i++) {
            if (i) jinja_sb_puts(b, ", ");
            pf_repr(b, v.u.d->k[ord[i]]);
            jinja_sb_puts(b, ": ");
            pf_repr(b, v.u.d->v[ord[i]]);
        }
        jinja_sb_putc(b, '}');
    } else if (v.t == T_LIST && is_seq(v.u.l)) {
        jlist *l = v.u.l;
        jinja_sb_putc(b, l->tuple ? '(' : '[');
        for (size_t i = 0; i < l->n; i++) {
            if (i) jinja_sb_puts(b, ", ");
            pf_repr(b, l->it[i]);
        }
        jinja_sb_puts(b, l->tuple ? (l->n == 1 ? ",)" : ")") : "]");
    } else
        jinja_put_repr(b, v);
    b->j->depth--;
}

static void pf_format(sb *b, jv v, long indent, long allowance);

static void pf_nl(sb *b, long indent)
{
    jinja_sb_puts(b, ",\n");
    for (long i = 0; i < indent; i++) jinja_sb_putc(b, ' ');
}

/* PrettyPrinter._format with width 80 and indent 1: what does not fit on the line is a list,
 * tuple or dict written one item a line (long strings are not split into pieces) */
static void pf_format(sb *b, jv v, long indent, long allowance)
{
    J *j = b->j;
    sb t;
    jinja_sb_init(&t, j);
    pf_repr(&t, v);
    long len = (long)jinja_u8_count(t.p ? t.p : "", t.len);
    int seq = v.t == T_LIST && is_seq(v.u.l);
    if (len <= 80 - indent - allowance || (!seq && v.t != T_DICT) || (seq && !v.u.l->n) || (v.t == T_DICT && !v.u.d->n)) {
        jinja_sb_put(b, t.p, t.len);
        return;
    }
    if (++j->depth > MAX_DEPTH) jinja_fail(j, JE_RECURSION, "value nested too deeply");
    if (v.t == T_DICT) {
        size_t *ord = sorted_items(j, v.u.d);
        jinja_sb_putc(b, '{');
        for (size_t i = 0; i < v.u.d->n; i++) {
            int last = i + 1 == v.u.d->n;
            sb k;
            jinja_sb_init(&k, j);
            pf_repr(&k, v.u.d->k[ord[i]]);
            jinja_sb_put(b, k.p, k.len);
            jinja_sb_puts(b, ": ");
            pf_format(b, v.u.d->v[ord[i]], indent + 1 + (long)jinja_u8_count(k.p, k.len) + 2, last ? allowance + 1 : 1);
            if (!last) pf_nl(b, indent + 1);
        }
        jinja_sb_putc(b, '}');
    } else {
        jlist *l = v.u.l;
        const char *end = l->tuple ? (l->n == 1 ? ",)" : ")") : "]";
        jinja_sb_putc(b, l->tuple ? '(' : '[');
        for (size_t i = 0; i < l->n; i++) {
            if (i) pf_nl(b, indent + 1);
            pf_format(b, l->it[i], indent + 1, i + 1 == l->n ? allowance + (long)strlen(end) : 1);
        }
        jinja_sb_puts(b, end);
    }
    j->depth--;
}

void jinja_put_pformat(sb *b, jv v) { pf_format(b, v, 0, 0); }
