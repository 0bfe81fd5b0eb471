/* The value model: the render arena, value constructors, lists and dicts, and the Python
 * semantics every other file leans on (truth, ==, ordering, type names). Separate because it
 * is the bottom layer: nothing here knows about templates. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/internal.h"

void jinja_arena_free(arena *a)
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

const char *const jinja_error_names[] = {
    [JE_UNDEFINED] = "UndefinedError", [JE_SYNTAX] = "TemplateSyntaxError",
    [JE_ASSERTION] = "TemplateAssertionError", [JE_SECURITY] = "SecurityError",
    [JE_RUNTIME] = "TemplateRuntimeError", [JE_FILTERARG] = "FilterArgumentError",
    [JE_TEMPLATE] = "TemplateError", [JE_TYPE] = "TypeError", [JE_VALUE] = "ValueError",
    [JE_ATTRIBUTE] = "AttributeError", [JE_KEY] = "KeyError", [JE_INDEX] = "IndexError",
    [JE_ZERODIV] = "ZeroDivisionError", [JE_OVERFLOW] = "OverflowError",
    [JE_RECURSION] = "RecursionError", [JE_MEMORY] = "MemoryError",
    [JE_UNICODE] = "UnicodeEncodeError", [JE_JSON] = "JSONDecodeError",
    [JE_UNSUPPORTED] = "NotImplementedError", [JE_LIMIT] = "tokenloop limit",
    [JE_PYASSERT] = "AssertionError",
};

void jinja_fail(J *j, int cls, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (j->line > 0) tl_error_set(j->err, "template:%d: %s: %s", j->line, jinja_error_names[cls], msg);
    else tl_error_set(j->err, "template: %s: %s", jinja_error_names[cls], msg);   /* before any line ran */
    longjmp(j->jb, 1);
}

void jinja_fail_undef(J *j, jv undef) { jinja_fail(j, undef.xc, "%s", undef_msg(undef)); }

/* raise_exception: transformers raises jinja2's TemplateError with the template's message */
void jinja_raise(J *j, const char *msg, size_t n)
{
    tl_error_set(j->err, "template:%d: %s: %.*s", j->line, jinja_error_names[JE_TEMPLATE], (int)(n > 960 ? 960 : n), msg);
    longjmp(j->jb, 1);
}

void *jinja_alloc(J *j, size_t n)
{
    void *p = arena_alloc(j->ar, n);
    if (!p)
        jinja_fail(j, JE_MEMORY, "out of memory (render limit %zu MiB)", MAX_ARENA >> 20);
    return p;
}

char *jinja_strdup(J *j, const char *s, size_t n)
{
    char *p = jinja_alloc(j, n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

jv jinja_v_str(J *j, const char *s, size_t n)
{
    jstr *x = jinja_alloc(j, sizeof *x);
    x->p = jinja_strdup(j, s, n);
    x->len = n;
    x->nsp = 0;
    x->sp = NULL;
    jv v = {.t = T_STR};
    v.u.s = x;
    return v;
}

jv jinja_v_cstr(J *j, const char *s) { return jinja_v_str(j, s, strlen(s)); }

const char *jinja_printf(J *j, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return jinja_strdup(j, buf, strlen(buf));
}

jlist *jinja_list_new(J *j, size_t cap)
{
    jlist *l = jinja_alloc(j, sizeof *l);
    l->n = 0;
    l->cap = cap ? cap : 4;
    l->it = jinja_alloc(j, l->cap * sizeof(jv));
    l->tuple = 0;
    l->gen = 0;
    l->view = 0;
    l->named = 0;
    return l;
}

void jinja_list_push(J *j, jlist *l, jv v)
{
    if (l->n == l->cap) {
        jv *n = jinja_alloc(j, 2 * l->cap * sizeof(jv));
        memcpy(n, l->it, l->n * sizeof(jv));
        l->it = n;
        l->cap *= 2;
    }
    l->it[l->n++] = v;
}

jdict *jinja_dict_new(J *j)
{
    jdict *d = jinja_alloc(j, sizeof *d);
    memset(d, 0, sizeof *d);
    return d;
}

const char *jinja_type_name(jv v)
{
    switch (v.t) {
    case T_UNDEF: return "Undefined";
    case T_NONE: return "NoneType";
    case T_BOOL: return "bool";
    case T_INT: case T_BIG: return "int";
    case T_FLOAT: return "float";
    case T_STR: return "str";
    case T_LIST:
        if (v.u.l->view) return v.u.l->view == 'k' ? "dict_keys" : v.u.l->view == 'v' ? "dict_values" : "dict_items";
        return v.u.l->gen ? "generator" : v.u.l->tuple ? "tuple" : "list";
    case T_DICT: return "dict";
    case T_NS: return "Namespace";
    default: return "function";
    }
}

const char *jinja_obj_repr(jv v)
{
    switch (v.t) {
    case T_NONE: return "None";
    case T_BOOL: return "bool object";
    case T_INT: case T_BIG: return "int object";
    case T_FLOAT: return "float object";
    case T_STR: return "str object";
    case T_LIST: return v.u.l->tuple ? "tuple object" : "list object";
    case T_DICT: return "dict object";
    case T_NS: return "jinja2.utils.Namespace object";
    default: return "function object";
    }
}

jv jinja_mk_func(J *j, int kind, const char *name, jv self)
{
    jfunc *fn = jinja_alloc(j, sizeof *fn);
    memset(fn, 0, sizeof *fn);
    fn->kind = kind;
    fn->name = name;
    fn->self = self;
    jv v = {.t = T_FUNC};
    v.u.fn = fn;
    return v;
}

int jinja_truthy(jv v)
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

int jinja_py_eq(jv a, jv b)
{
    if (a.t == T_BIG || b.t == T_BIG) {
        if (is_int(a) && is_int(b)) return !jinja_big_cmp(a, b);
        if (a.t == T_FLOAT || b.t == T_FLOAT) return !jinja_big_cmp_float(a.t == T_BIG ? a : b, a.t == T_FLOAT ? a.u.f : b.u.f);
        return 0;
    }
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
        if (a.u.l->gen || b.u.l->gen || a.u.l->view == 'v' || b.u.l->view == 'v') return a.u.l == b.u.l;
        if (a.u.l->view || b.u.l->view) { /* keys and items views compare as sets */
            if (a.u.l->view != b.u.l->view || a.u.l->n != b.u.l->n) return 0;
            for (size_t i = 0; i < a.u.l->n; i++) {
                size_t k = 0;
                while (k < b.u.l->n && !jinja_py_eq(a.u.l->it[i], b.u.l->it[k])) k++;
                if (k == b.u.l->n) return 0;
            }
            return 1;
        }
        if (a.u.l->tuple != b.u.l->tuple || a.u.l->n != b.u.l->n) return 0;
        for (size_t i = 0; i < a.u.l->n; i++)
            if (!jinja_py_eq(a.u.l->it[i], b.u.l->it[i])) return 0;
        return 1;
    case T_DICT: {
        if (a.u.d->n != b.u.d->n) return 0;
        for (size_t i = 0; i < a.u.d->n; i++) {
            size_t k;
            for (k = 0; k < b.u.d->n; k++)
                if (jinja_py_eq(a.u.d->k[i], b.u.d->k[k])) break;
            if (k == b.u.d->n || !jinja_py_eq(a.u.d->v[i], b.u.d->v[k])) return 0;
        }
        return 1;
    }
    case T_NS: return a.u.d == b.u.d;
    case T_FUNC: return a.u.fn == b.u.fn;
    }
    return 0;
}

/* <0, 0, >0; TypeError where Python has none */
int jinja_py_cmp(J *j, jv a, jv b, const char *op)
{
    if (a.t == T_UNDEF) jinja_fail_undef(j, a);
    if (b.t == T_UNDEF) jinja_fail_undef(j, b);
    if ((a.t == T_BIG && (is_int(b) || b.t == T_FLOAT)) || (b.t == T_BIG && is_int(a)) || (b.t == T_BIG && a.t == T_FLOAT)) {
        if (is_int(a) && is_int(b)) return jinja_big_cmp(a, b);
        int c = a.t == T_BIG ? jinja_big_cmp_float(a, b.u.f) : jinja_big_cmp_float(b, a.u.f);
        return c == 2 ? 0 : a.t == T_BIG ? c : -c;
    }
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
            if (jinja_py_eq(a.u.l->it[i], b.u.l->it[i])) continue;
            return jinja_py_cmp(j, a.u.l->it[i], b.u.l->it[i], op);
        }
        return a.u.l->n < b.u.l->n ? -1 : a.u.l->n > b.u.l->n;
    }
    jinja_fail(j, JE_TYPE, "'%s' not supported between instances of '%s' and '%s'", op, jinja_type_name(a), jinja_type_name(b));
}

long jinja_dict_find(jdict *d, jv k)
{
    for (size_t i = 0; i < d->n; i++)
        if (jinja_py_eq(d->k[i], k) && (d->k[i].t == T_STR) == (k.t == T_STR))
            return (long)i;
    return -1;
}

long jinja_dict_find_s(jdict *d, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < d->n; i++)
        if (d->k[i].t == T_STR && d->k[i].u.s->len == n && !memcmp(d->k[i].u.s->p, s, n))
            return (long)i;
    return -1;
}

void jinja_dict_set(J *j, jdict *d, jv k, jv v)
{
    long i = jinja_dict_find(d, k);
    if (i >= 0) {
        d->v[i] = v;
        return;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 8;
        jv *nk = jinja_alloc(j, cap * sizeof(jv)), *nv = jinja_alloc(j, cap * sizeof(jv));
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

void jinja_dict_set_s(J *j, jdict *d, const char *k, jv v) { jinja_dict_set(j, d, jinja_v_cstr(j, k), v); }
