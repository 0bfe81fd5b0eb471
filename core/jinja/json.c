/* JSON in (the template variables, with content spans) and out (tojson as json.dumps).
 * Separate from the value printer: json.dumps and repr() differ in every detail. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/internal.h"

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
    if (p->e - p->s < 4) jinja_fail(p->j, JE_JSON, "bad JSON: short \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = *p->s++;
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else jinja_fail(p->j, JE_JSON, "bad JSON: bad \\u escape");
    }
    return v;
}

static jv jp_string(jp *p, int mark)
{
    sb b;
    jinja_sb_init(&b, p->j);
    p->s++;
    for (;;) {
        if (p->s >= p->e) jinja_fail(p->j, JE_JSON, "bad JSON: unterminated string");
        char c = *p->s++;
        if (c == '"') break;
        if (c != '\\') { jinja_sb_putc(&b, c); continue; }
        if (p->s >= p->e) jinja_fail(p->j, JE_JSON, "bad JSON: unterminated string");
        c = *p->s++;
        switch (c) {
        case 'n': jinja_sb_putc(&b, '\n'); break;
        case 't': jinja_sb_putc(&b, '\t'); break;
        case 'r': jinja_sb_putc(&b, '\r'); break;
        case 'b': jinja_sb_putc(&b, '\b'); break;
        case 'f': jinja_sb_putc(&b, '\f'); break;
        case '/': case '\\': case '"': jinja_sb_putc(&b, c); break;
        case 'u': {
            unsigned cp = jp_hex4(p);
            if (cp >= 0xD800 && cp < 0xDC00 && p->e - p->s >= 6 && p->s[0] == '\\' && p->s[1] == 'u') {
                const char *save = p->s;
                p->s += 2;
                unsigned lo = jp_hex4(p);
                if (lo >= 0xDC00 && lo < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                else p->s = save;
            }
            jinja_u8_put(&b, cp);
            break;
        }
        default: jinja_fail(p->j, JE_JSON, "bad JSON: bad escape");
        }
    }
    if (mark)
        jinja_sb_span(&b, 0, b.len);
    return jinja_sb_val(&b);
}

static jv jp_value(jp *p, int mark, int content_key)
{
    jp_ws(p);
    if (p->s >= p->e) jinja_fail(p->j, JE_JSON, "bad JSON: unexpected end");
    if (++p->depth > 200) jinja_fail(p->j, JE_RECURSION, "bad JSON: nested too deeply");
    jv r;
    char c = *p->s;
    if (c == '"') {
        r = jp_string(p, mark && content_key);
    } else if (c == '{') {
        jdict *d = jinja_dict_new(p->j);
        p->s++;
        jp_ws(p);
        if (p->s < p->e && *p->s == '}') p->s++;
        else for (;;) {
            jp_ws(p);
            if (p->s >= p->e || *p->s != '"') jinja_fail(p->j, JE_JSON, "bad JSON: expected a key");
            jv k = jp_string(p, 0);
            jp_ws(p);
            if (p->s >= p->e || *p->s != ':') jinja_fail(p->j, JE_JSON, "bad JSON: expected ':'");
            p->s++;
            int ck = k.u.s->len == 7 && !memcmp(k.u.s->p, "content", 7);
            int tk = content_key && k.u.s->len == 4 && !memcmp(k.u.s->p, "text", 4);
            jv v = jp_value(p, mark, ck || tk);
            jinja_dict_set(p->j, d, k, v);
            jp_ws(p);
            if (p->s < p->e && *p->s == ',') { p->s++; continue; }
            if (p->s < p->e && *p->s == '}') { p->s++; break; }
            jinja_fail(p->j, JE_JSON, "bad JSON: expected ',' or '}'");
        }
        r = v_dict(d);
    } else if (c == '[') {
        jlist *l = jinja_list_new(p->j, 4);
        p->s++;
        jp_ws(p);
        if (p->s < p->e && *p->s == ']') p->s++;
        else for (;;) {
            jinja_list_push(p->j, l, jp_value(p, mark, content_key));
            jp_ws(p);
            if (p->s < p->e && *p->s == ',') { p->s++; continue; }
            if (p->s < p->e && *p->s == ']') { p->s++; break; }
            jinja_fail(p->j, JE_JSON, "bad JSON: expected ',' or ']'");
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
        size_t n = (size_t)(p->s - st);
        char *tmp = jinja_strdup(p->j, st, n), *end;
        if (!isf) { /* any size, as Python's json reads it */
            size_t k = tmp[0] == '-';
            if (k == n) jinja_fail(p->j, JE_JSON, "bad JSON: bad number");
            for (; k < n; k++)
                if (!isdigit((unsigned char)tmp[k])) jinja_fail(p->j, JE_JSON, "bad JSON: bad number");
            r = jinja_big_parse(p->j, tmp, n);
        } else {
            double f = strtod(tmp, &end);
            if (*end) jinja_fail(p->j, JE_JSON, "bad JSON: bad number");
            r = v_float(f);
        }
    } else
        jinja_fail(p->j, JE_JSON, "bad JSON: unexpected '%c'", c);
    p->depth--;
    return r;
}

jv jinja_json_parse(J *j, const char *s, int mark)
{
    jp p = {j, s, s + strlen(s), 0};
    jv v = jp_value(&p, mark, 0);
    jp_ws(&p);
    if (p.s != p.e) jinja_fail(j, JE_JSON, "bad JSON: trailing text");
    return v;
}

typedef struct jdump {
    const char *indent; /* NULL: none */
    const char *item_sep, *key_sep;
    int sort_keys, ensure_ascii;
} jdump;

static void json_str_a(sb *b, const char *s, size_t n, int ascii)
{
    jinja_sb_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (ascii && (c >= 0x7f)) {
            unsigned cp;
            size_t k = jinja_u8_next(s, n, i, &cp);
            char t[16];
            if (cp >= 0x10000)
                snprintf(t, sizeof t, "\\u%04x\\u%04x", 0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF));
            else
                snprintf(t, sizeof t, "\\u%04x", cp);
            jinja_sb_puts(b, t);
            i += k - 1;
            continue;
        }
        if (c == '"') jinja_sb_puts(b, "\\\"");
        else if (c == '\\') jinja_sb_puts(b, "\\\\");
        else if (c == '\n') jinja_sb_puts(b, "\\n");
        else if (c == '\r') jinja_sb_puts(b, "\\r");
        else if (c == '\t') jinja_sb_puts(b, "\\t");
        else if (c == '\b') jinja_sb_puts(b, "\\b");
        else if (c == '\f') jinja_sb_puts(b, "\\f");
        else if (c < 0x20) { char t[8]; snprintf(t, sizeof t, "\\u%04x", c); jinja_sb_puts(b, t); }
        else jinja_sb_putc(b, (char)c);
    }
    jinja_sb_putc(b, '"');
}

static void json_str(sb *b, const char *s, size_t n) { json_str_a(b, s, n, 0); }

static void json_nl(sb *b, const jdump *o, int level)
{
    jinja_sb_putc(b, '\n');
    for (int i = 0; i < level; i++) jinja_sb_puts(b, o->indent);
}

static void json_scalar_key(sb *b, jv k, int ascii)
{
    char t[64];
    switch (k.t) {
    case T_STR: json_str_a(b, k.u.s->p, k.u.s->len, ascii); return;
    case T_BOOL: json_str(b, k.u.b ? "true" : "false", k.u.b ? 4 : 5); return;
    case T_NONE: json_str(b, "null", 4); return;
    case T_INT: snprintf(t, sizeof t, "%lld", k.u.i); json_str(b, t, strlen(t)); return;
    case T_BIG: json_str(b, k.u.s->p, k.u.s->len); return;
    case T_FLOAT: jinja_fmt_float(t, sizeof t, k.u.f); json_str(b, t, strlen(t)); return;
    default: jinja_fail(b->j, JE_TYPE, "keys must be str, int, float, bool or None, not %s", jinja_type_name(k));
    }
}

static void json_dump(sb *b, jv v, const jdump *o, int level)
{
    J *j = b->j;
    if (++j->depth > MAX_DEPTH) jinja_fail(j, JE_RECURSION, "value nested too deeply for tojson");
    char t[64];
    switch (v.t) {
    case T_NONE: jinja_sb_puts(b, "null"); break;
    case T_BOOL: jinja_sb_puts(b, v.u.b ? "true" : "false"); break;
    case T_INT: snprintf(t, sizeof t, "%lld", v.u.i); jinja_sb_puts(b, t); break;
    case T_BIG: jinja_sb_put_str(b, v.u.s); break;
    case T_FLOAT:
        if (isnan(v.u.f)) jinja_sb_puts(b, "NaN");
        else if (isinf(v.u.f)) jinja_sb_puts(b, v.u.f < 0 ? "-Infinity" : "Infinity");
        else { jinja_fmt_float(t, sizeof t, v.u.f); jinja_sb_puts(b, t); }
        break;
    case T_STR: json_str_a(b, v.u.s->p, v.u.s->len, o->ensure_ascii); break;
    case T_LIST: {
        jlist *l = v.u.l;
        if (!is_seq(l)) jinja_fail(j, JE_TYPE, "Object of type %s is not JSON serializable", jinja_type_name(v));
        if (!l->n) { jinja_sb_puts(b, "[]"); break; }
        jinja_sb_putc(b, '[');
        for (size_t i = 0; i < l->n; i++) {
            if (i) jinja_sb_puts(b, o->item_sep);
            if (o->indent) json_nl(b, o, level + 1);
            json_dump(b, l->it[i], o, level + 1);
        }
        if (o->indent) json_nl(b, o, level);
        jinja_sb_putc(b, ']');
        break;
    }
    case T_DICT: {
        jdict *d = v.u.d;
        if (!d->n) { jinja_sb_puts(b, "{}"); break; }
        size_t *ord = jinja_alloc(j, d->n * sizeof *ord);
        for (size_t i = 0; i < d->n; i++) ord[i] = i;
        if (o->sort_keys) /* insertion sort: dicts here are small */
            for (size_t i = 1; i < d->n; i++)
                for (size_t k = i; k > 0 && jinja_py_cmp(j, d->k[ord[k - 1]], d->k[ord[k]], "<") > 0; k--) {
                    size_t x = ord[k]; ord[k] = ord[k - 1]; ord[k - 1] = x;
                }
        jinja_sb_putc(b, '{');
        for (size_t i = 0; i < d->n; i++) {
            if (i) jinja_sb_puts(b, o->item_sep);
            if (o->indent) json_nl(b, o, level + 1);
            json_scalar_key(b, d->k[ord[i]], o->ensure_ascii);
            jinja_sb_puts(b, o->key_sep);
            json_dump(b, d->v[ord[i]], o, level + 1);
        }
        if (o->indent) json_nl(b, o, level);
        jinja_sb_putc(b, '}');
        break;
    }
    default:
        jinja_fail(j, JE_TYPE, "Object of type %s is not JSON serializable", jinja_type_name(v));
    }
    j->depth--;
}

/* transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False) */
jv jinja_tojson(J *j, jv v, jargs *A)
{
    jv ea = jinja_arg(A, 0, "ensure_ascii", v_bool(0));
    jv ind = jinja_arg(A, 1, "indent", v_none());
    jv seps = jinja_arg(A, 2, "separators", v_none());
    jv sk = jinja_arg(A, 3, "sort_keys", v_bool(0));
    jdump o = {NULL, ", ", ": ", jinja_truthy(sk), jinja_truthy(ea)};
    if (ind.t == T_INT || ind.t == T_BOOL) {
        long long n = num_i(ind);
        if (n < 0) n = 0;
        if (n > 64) n = 64;
        char *s = jinja_alloc(j, (size_t)n + 1);
        memset(s, ' ', (size_t)n);
        s[n] = 0;
        o.indent = s;
        o.item_sep = ",";
    } else if (ind.t == T_STR) {
        o.indent = ind.u.s->p;
        o.item_sep = ",";
    } else if (ind.t != T_NONE)
        jinja_fail(j, JE_TYPE, "tojson: bad indent");
    if (seps.t == T_LIST && seps.u.l->n == 2 && seps.u.l->it[0].t == T_STR && seps.u.l->it[1].t == T_STR) {
        o.item_sep = seps.u.l->it[0].u.s->p;
        o.key_sep = seps.u.l->it[1].u.s->p;
    } else if (seps.t != T_NONE)
        jinja_fail(j, JE_TYPE, "tojson: separators must be a pair of strings");
    sb r;
    jinja_sb_init(&r, j);
    json_dump(&r, v, &o, 0);
    return jinja_sb_val(&r);
}
