/* Jinja2's filters (x | trim, x | map(...), ...), and the sorting they share. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jinja/internal.h"

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
        else key = jinja_v_str(j, p, n);
        v = jinja_get_item(j, v, key);
        p += n;
        if (*p == '.') p++;
    }
    return v;
}

/* groupby's key: getitem along the attribute's parts (digits as ints), the default for an
 * undefined step when one is given, lowered when case-insensitive */
static jv group_key(J *j, jv v, jv attr, jv dflt, int lower)
{
    if (attr.t == T_STR) {
        const char *p = attr.u.s->p;
        for (;;) {
            const char *dot = strchr(p, '.');
            size_t n = dot ? (size_t)(dot - p) : strlen(p), k = 0;
            while (k < n && isdigit((unsigned char)p[k])) k++;
            v = jinja_get_item(j, v, n && k == n ? jinja_big_parse(j, p, n) : jinja_v_str(j, p, n));
            if (dflt.t != T_NONE && v.t == T_UNDEF) v = dflt;
            if (!dot) break;
            p = dot + 1;
        }
    } else {
        v = jinja_get_item(j, v, attr);
        if (dflt.t != T_NONE && v.t == T_UNDEF) v = dflt;
    }
    return lower && v.t == T_STR ? jinja_str_lower_upper(j, v, 0) : v;
}

static void msort(J *j, jv *keys, jv *vals, size_t n, int reverse);

/* groupby(attribute, default=None, case_sensitive=False): sorted by the key, then one
 * (grouper, list) per run of equal keys; case-insensitive groups show their first item's key */
static jv groupby(J *j, jv v, jargs *A)
{
    jv at = jinja_arg(A, 0, "attribute", v_undef(NULL)), dflt = jinja_arg(A, 1, "default", v_none());
    if (at.t == T_UNDEF && !at.u.undef)
        jinja_fail(j, JE_TYPE, "sync_do_groupby() missing 1 required positional argument: 'attribute'");
    int cs = jinja_truthy(jinja_arg(A, 2, "case_sensitive", v_bool(0)));
    jlist *l = jinja_iter_list(j, v), *r = jinja_list_new(j, 4);
    size_t n = l->n;
    jv *keys = jinja_alloc(j, (n + 1) * sizeof(jv)), *vals = jinja_alloc(j, (n + 1) * sizeof(jv));
    for (size_t i = 0; i < n; i++) { vals[i] = l->it[i]; keys[i] = group_key(j, l->it[i], at, dflt, !cs); }
    msort(j, keys, vals, n, 0);
    jlist *cur = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!cur || !jinja_py_eq(keys[i], keys[i - 1])) {
            jlist *g = jinja_list_new(j, 2);
            g->tuple = 1;
            g->named = 'g';
            cur = jinja_list_new(j, 4);
            jinja_list_push(j, g, cs ? keys[i] : group_key(j, vals[i], at, dflt, 0));
            jinja_list_push(j, g, v_list(cur));
            jinja_list_push(j, r, v_list(g));
        }
        jinja_list_push(j, cur, vals[i]);
    }
    return v_list(r);
}

static jv sort_key(J *j, jv v, sortctx *c)
{
    v = attr_path(j, v, c->attr);
    if (c->case_insensitive && v.t == T_STR) return jinja_str_lower_upper(j, v, 0);
    return v;
}

static void msort(J *j, jv *keys, jv *vals, size_t n, int reverse)
{
    if (n < 2) return;
    jv *tk = jinja_alloc(j, n * sizeof(jv)), *tv = jinja_alloc(j, n * sizeof(jv));
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi) {
                int c = jinja_py_cmp(j, keys[b], keys[a], "<");
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

/* vals ordered by keys (stable; reversed when rev), as a new list. */
static jv sorted_list(J *j, jv *keys, jv *vals, size_t n, int rev)
{
    msort(j, keys, vals, n, rev);
    jlist *r = jinja_list_new(j, n);
    for (size_t i = 0; i < n; i++) jinja_list_push(j, r, vals[i]);
    return v_list(r);
}

static jv lit_undef(J *j, const char *msg) { return v_undef(jinja_strdup(j, msg, strlen(msg))); }

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
    if (!jinja_truthy(v)) return v_gen(jinja_list_new(j, 1)); /* Jinja2 iterates only a true value */
    jlist *in = jinja_iter_list(j, v), *out = jinja_list_new(j, in->n);
    const char *attr = NULL;
    int first = 0;
    if (attr_mode) {
        jv a = jinja_arg(A, 0, "attr", v_undef(NULL));
        if (a.t != T_STR) jinja_fail(j, JE_TYPE, "selectattr: an attribute name is needed");
        attr = a.u.s->p;
        first = 1;
    }
    const char *test = NULL;
    if (A->n > first) {
        if (A->a[first].t != T_STR) jinja_fail(j, JE_TYPE, "select: a test name is needed");
        test = A->a[first].u.s->p;
    }
    jargs TA = {A->n > first + 1 ? A->a + first + 1 : NULL, A->n > first + 1 ? A->n - first - 1 : 0, A->kn, A->kv, A->nk};
    for (size_t i = 0; i < in->n; i++) {
        jv x = attr ? attr_path(j, in->it[i], attr) : in->it[i];
        int ok = test ? jinja_apply_test(j, test, x, &TA) : jinja_truthy(x);
        if (ok != reject) jinja_list_push(j, out, in->it[i]);
    }
    return v_gen(out);
}

static jv filter_safe(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)A, (void)f;
    jv s = jinja_to_str(j, v);
    if (name[1] == 'a') s.xc = 1;   /* Markup(str(value)) */
    return s;
}

static jv filter_trim(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)f;
    jv c = jinja_arg(A, 0, "chars", v_none());
    return jinja_str_strip(j, jinja_to_str(j, v), c.t == T_STR ? c.u.s : NULL, 3);
}

static jv filter_upper(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)A, (void)f;
    return jinja_str_lower_upper(j, v, name[0] == 'u');
}

static jv filter_title(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)A, (void)f;
    return jinja_str_title(j, jinja_to_str(j, v).u.s, 1);
}

static jv filter_capitalize(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)A, (void)f;
    return jinja_str_case(j, jinja_to_str(j, v).u.s, 2);
}

static jv filter_length(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)A, (void)f;
    return v_int((long long)jinja_py_len(j, v));
}

static jv filter_replace(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)f;
    jv o = jinja_to_str(j, jinja_arg(A, 0, "old", v_undef(NULL))), n = jinja_to_str(j, jinja_arg(A, 1, "new", v_undef(NULL)));
    jv c = jinja_arg(A, 2, "count", v_none());
    return jinja_str_replace(j, jinja_to_str(j, v).u.s, o.u.s, n.u.s, c.t == T_NONE ? -1 : num_i(c));
}

static jv filter_join(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)f;
    jv d = jinja_arg(A, 0, "d", jinja_v_str(j, "", 0));
    jv at = jinja_arg(A, 1, "attribute", v_none());
    jlist *l = jinja_iter_list(j, v);
    jv ds = jinja_to_str(j, d);
    sb r;
    jinja_sb_init(&r, j);
    for (size_t i = 0; i < l->n; i++) {
        if (i) jinja_sb_put_str(&r, ds.u.s);
        jinja_put_str(&r, at.t == T_NONE ? l->it[i] : attr_path(j, l->it[i], jinja_to_str(j, at).u.s->p));
    }
    return jinja_sb_val(&r);
}

static jv filter_default(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)f;
    jv dv = jinja_arg(A, 0, "default_value", jinja_v_str(j, "", 0));
    int boolean = jinja_truthy(jinja_arg(A, 1, "boolean", v_bool(0)));
    if (v.t == T_UNDEF || (boolean && !jinja_truthy(v))) return dv;
    return v;
}

static jv filter_first(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)A, (void)f;
    if (v.t == T_STR || v.t == T_LIST || v.t == T_DICT || v.t == T_UNDEF) {
        if (name[0] == 'l' && v.t == T_LIST && v.u.l->gen) jinja_fail(j, JE_TYPE, "'generator' object is not reversible");
        jlist *l = jinja_iter_list(j, v);
        if (!l->n) return lit_undef(j, name[0] == 'f' ? "No first item, sequence was empty." : "No last item, sequence was empty.");
        return l->it[name[0] == 'f' ? 0 : l->n - 1];
    }
    jinja_fail(j, JE_TYPE, "'%s' object is not %s", jinja_type_name(v), name[0] == 'f' ? "iterable" : "reversible");
}

static jv filter_list(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)A, (void)f;
    jlist *l = jinja_iter_list(j, v), *r = jinja_list_new(j, l->n);
    for (size_t i = 0; i < l->n; i++) jinja_list_push(j, r, l->it[i]);
    return v_list(r);
}

static jv filter_items(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)A, (void)f;
    if (v.t == T_UNDEF) return v_gen(jinja_list_new(j, 1));
    if (v.t != T_DICT) jinja_fail(j, JE_TYPE, "Can only get item pairs from a mapping.");
    jlist *r = jinja_list_new(j, v.u.d->n);
    for (size_t i = 0; i < v.u.d->n; i++) {
        jlist *t = jinja_list_new(j, 2);
        t->tuple = 1;
        jinja_list_push(j, t, v.u.d->k[i]);
        jinja_list_push(j, t, v.u.d->v[i]);
        jinja_list_push(j, r, v_list(t));
    }
    return v_gen(r);
}

static jv filter_map(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name;
    if (!jinja_truthy(v)) return v_gen(jinja_list_new(j, 1));
    jlist *l = jinja_iter_list(j, v), *r = jinja_list_new(j, l->n);
    if (jinja_has_arg(A, -1, "attribute")) {
        jv at = jinja_to_str(j, jinja_arg(A, -1, "attribute", v_none()));
        jv dflt = jinja_arg(A, -1, "default", v_undef(NULL));
        for (size_t i = 0; i < l->n; i++) {
            jv x = attr_path(j, l->it[i], at.u.s->p);
            if (x.t == T_UNDEF && jinja_has_arg(A, -1, "default")) x = dflt;
            jinja_list_push(j, r, x);
        }
        return v_gen(r);
    }
    if (A->n < 1 || A->a[0].t != T_STR) jinja_fail(j, JE_FILTERARG, "map: a filter name or attribute= is needed");
    jargs FA = {A->a + 1, A->n - 1, A->kn, A->kv, A->nk};
    for (size_t i = 0; i < l->n; i++) jinja_list_push(j, r, jinja_apply_filter(j, A->a[0].u.s->p, l->it[i], &FA, f));
    return v_gen(r);
}

static jv filter_select_reject(J *j, const char *name, jv v, jargs *A, frame *f)
{
    return filter_select(j, v, A, strlen(name) > 6, name[0] == 'r', f);
}

static jv filter_dictsort(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)f;
    int cs = jinja_truthy(jinja_arg(A, 0, "case_sensitive", v_bool(0)));
    jv by = jinja_arg(A, 1, "by", jinja_v_cstr(j, "key"));
    int rev = jinja_truthy(jinja_arg(A, 2, "reverse", v_bool(0)));
    int byk = by.t == T_STR && by.u.s->len == 3 && !memcmp(by.u.s->p, "key", 3);
    int byv = by.t == T_STR && by.u.s->len == 5 && !memcmp(by.u.s->p, "value", 5);
    if (!byk && !byv) jinja_fail(j, JE_FILTERARG, "You can only sort by either \"key\" or \"value\"");
    if (v.t == T_UNDEF) jinja_fail_undef(j, v);
    if (v.t != T_DICT) jinja_fail(j, JE_ATTRIBUTE, "'%s' object has no attribute 'items'", jinja_type_name(v)); /* value.items() */
    size_t n = v.u.d->n;
    jv *keys = jinja_alloc(j, (n + 1) * sizeof(jv)), *vals = jinja_alloc(j, (n + 1) * sizeof(jv));
    sortctx c = {!cs, rev, NULL};
    for (size_t i = 0; i < n; i++) {
        jlist *t = jinja_list_new(j, 2);
        t->tuple = 1;
        jinja_list_push(j, t, v.u.d->k[i]);
        jinja_list_push(j, t, v.u.d->v[i]);
        vals[i] = v_list(t);
        keys[i] = sort_key(j, byv ? v.u.d->v[i] : v.u.d->k[i], &c);
    }
    return sorted_list(j, keys, vals, n, rev);
}

static jv filter_sort(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)f;
    int rev = jinja_truthy(jinja_arg(A, 0, "reverse", v_bool(0)));
    int cs = jinja_truthy(jinja_arg(A, 1, "case_sensitive", v_bool(0)));
    jv at = jinja_arg(A, 2, "attribute", v_none());
    sortctx c = {!cs, rev, at.t == T_STR ? at.u.s->p : NULL};
    jlist *l = jinja_iter_list(j, v);
    size_t n = l->n;
    jv *keys = jinja_alloc(j, (n + 1) * sizeof(jv)), *vals = jinja_alloc(j, (n + 1) * sizeof(jv));
    for (size_t i = 0; i < n; i++) { vals[i] = l->it[i]; keys[i] = sort_key(j, l->it[i], &c); }
    return sorted_list(j, keys, vals, n, rev);
}

static jv filter_unique(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)f;
    int cs = jinja_truthy(jinja_arg(A, 0, "case_sensitive", v_bool(0)));
    jv at = jinja_arg(A, 1, "attribute", v_none());
    sortctx c = {!cs, 0, at.t == T_STR ? at.u.s->p : NULL};
    jlist *l = jinja_iter_list(j, v), *r = jinja_list_new(j, l->n), *seen = jinja_list_new(j, l->n);
    for (size_t i = 0; i < l->n; i++) {
        jv k = sort_key(j, l->it[i], &c);
        if ((k.t == T_LIST && !k.u.l->tuple) || k.t == T_DICT || k.t == T_NS)
            jinja_fail(j, JE_TYPE, "unhashable type: '%s'", jinja_type_name(k));
        if (jinja_contains(j, v_list(seen), k)) continue;
        jinja_list_push(j, seen, k);
        jinja_list_push(j, r, l->it[i]);
    }
    return v_gen(r);
}

static jv filter_reverse(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)A, (void)f;
    if (v.t == T_STR) return jinja_do_slice(j, v, v_none(), v_none(), v_int(-1));
    if (v.t != T_LIST && v.t != T_DICT && v.t != T_UNDEF) jinja_fail(j, JE_FILTERARG, "argument must be iterable");
    jlist *l = jinja_iter_list(j, v), *r = jinja_list_new(j, l->n);
    for (size_t i = l->n; i > 0; i--) jinja_list_push(j, r, l->it[i - 1]);
    if (v.t == T_LIST && v.u.l->gen) return v_list(r); /* reversed() failed: a list */
    return v_gen(r);
}

static jv filter_int(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)f;
    jv d = jinja_arg(A, 0, "default", v_int(0));
    if (v.t == T_UNDEF) jinja_fail_undef(j, v);
    /* int(value), else int(float(value)), else the default: ValueError and TypeError fall
     * back, int(inf)'s OverflowError does not */
    if (v.t == T_INT || v.t == T_BIG) return v;
    if (v.t == T_BOOL) return v_int(v.u.b);
    if (v.t == T_FLOAT) return isnan(v.u.f) ? d : jinja_big_from_double(j, v.u.f);
    if (v.t == T_STR) {
        jv s = jinja_str_strip(j, v, NULL, 3);
        const char *p = s.u.s->p;
        size_t n = s.u.s->len, k = n && (p[0] == '+' || p[0] == '-'), m = 0;
        char *digits = jinja_alloc(j, n + 1);
        int ok = k < n;
        if (k) digits[m++] = p[0];
        for (size_t i = k; i < n && ok; i++) {   /* digits, single underscores between them */
            if (isdigit((unsigned char)p[i])) digits[m++] = p[i];
            else ok = p[i] == '_' && i > k && i + 1 < n && isdigit((unsigned char)p[i - 1]) && isdigit((unsigned char)p[i + 1]);
        }
        if (ok) return jinja_big_parse(j, digits, m);
        char *e;
        double x = strtod(p, &e);
        if (n && !*e) return isnan(x) ? d : jinja_big_from_double(j, x);
    }
    return d;
}

static jv filter_float(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)f;
    jv d = jinja_arg(A, 0, "default", v_float(0));
    if (v.t == T_UNDEF) jinja_fail_undef(j, v);
    if (is_num(v)) return v_float(num_f(v));
    if (v.t == T_BIG) return v_float(jinja_big_to_double(j, v));
    if (v.t == T_STR) {
        jv s = jinja_str_strip(j, v, NULL, 3);
        char *e;
        double x = strtod(s.u.s->p, &e);
        if (s.u.s->len && !*e) return v_float(x);
    }
    return d;
}

static jv filter_abs(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)A, (void)f;
    if (v.t == T_FLOAT) return v_float(fabs(v.u.f));
    if (v.t == T_BIG) return v.u.s->p[0] == '-' ? jinja_big_parse(j, v.u.s->p + 1, v.u.s->len - 1) : v;
    if (is_num(v)) return num_i(v) < 0 ? jinja_arith(j, '-', v_int(0), v) : v_int(num_i(v)); /* abs(-2**63) */
    jinja_fail(j, JE_TYPE, "bad operand type for abs(): '%s'", jinja_type_name(v));
}

static jv filter_round(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)f;
    long long prec = num_i(jinja_arg(A, 0, "precision", v_int(0)));
    jv m = jinja_arg(A, 1, "method", jinja_v_cstr(j, "common"));
    if (v.t == T_BIG && prec >= 0 && m.t == T_STR && !strcmp(m.u.s->p, "common")) return v;
    if (v.t == T_BIG) v = v_float(jinja_big_to_double(j, v));
    if (!is_num(v)) jinja_fail(j, JE_TYPE, "type %s doesn't define __round__ method", jinja_type_name(v));
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
    jinja_fail(j, JE_FILTERARG, "method must be common, ceil or floor");
}

static jv filter_indent(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)f;
    jv w = jinja_arg(A, 0, "width", v_int(4));
    if (w.t == T_UNDEF) jinja_fail_undef(j, w);
    if (w.t != T_STR && w.t != T_INT && w.t != T_BOOL)
        jinja_fail(j, JE_TYPE, "can't multiply sequence by non-int of type '%s'", jinja_type_name(w));
    /* s += "\n", then s.splitlines() */
    if (v.t == T_UNDEF) jinja_fail_undef(j, v);
    if (v.t == T_LIST && !v.u.l->tuple && is_seq(v.u.l)) jinja_fail(j, JE_ATTRIBUTE, "'list' object has no attribute 'splitlines'");
    if (v.t == T_LIST && v.u.l->tuple) jinja_fail(j, JE_TYPE, "can only concatenate tuple (not \"str\") to tuple");
    if (v.t != T_STR) jinja_fail(j, JE_TYPE, "unsupported operand type(s) for +=: '%s' and 'str'", jinja_type_name(v));
    int first = jinja_truthy(jinja_arg(A, 1, "first", v_bool(0))), blank = jinja_truthy(jinja_arg(A, 2, "blank", v_bool(0)));
    sb ind;
    jinja_sb_init(&ind, j);
    if (w.t == T_STR) jinja_sb_put_str(&ind, w.u.s);
    else {
        if (num_i(w) > 1 << 20) jinja_fail(j, JE_LIMIT, "indent width %lld too large (limit 2^20)", num_i(w));
        for (long long i = 0; i < num_i(w); i++) jinja_sb_putc(&ind, ' ');
    }
    jstr *indv = jinja_sb_val(&ind).u.s;
    /* (s + "\n").splitlines(), joined again with "\n": the appended newline keeps a final
     * empty line when s ends with one */
    sb s1;
    jinja_sb_init(&s1, j);
    jinja_sb_put_str(&s1, v.u.s);
    jinja_sb_putc(&s1, '\n');
    jlist *lines = jinja_str_splitlines(j, jinja_sb_val(&s1).u.s, 0);
    sb r;
    jinja_sb_init(&r, j);
    if (first) jinja_sb_put_str(&r, indv);
    for (size_t i = 0; i < lines->n; i++) {
        jstr *line = lines->it[i].u.s;
        if (i) jinja_sb_putc(&r, '\n');
        if (i && (blank || line->len)) jinja_sb_put_str(&r, indv);
        jinja_sb_put_str(&r, line);
    }
    return jinja_sb_val(&r);
}

static jv filter_tojson(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)f;
    return jinja_tojson(j, v, A);
}

static jv filter_escape(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)A, (void)f;
    if (v.t == T_STR && v.xc && name[0] == 'e') return v;   /* already Markup */
    sb r;
    jinja_sb_init(&r, j);
    jinja_put_escaped(&r, jinja_to_str(j, v).u.s);
    jv m = jinja_sb_val(&r);
    m.xc = 1;
    return m;
}

static jv filter_wordcount(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)A, (void)f;
    jv s = jinja_to_str(j, v);
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

static jv filter_groupby(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)f;
    return groupby(j, v, A);
}

/* slices lists of nearly equal length, the first ones longer */
static jv filter_slice(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)f;
    jv sn = jinja_arg(A, 0, "slices", v_undef(NULL)), fw = jinja_arg(A, 1, "fill_with", v_none());
    if (sn.t != T_INT && sn.t != T_BOOL) jinja_fail(j, JE_TYPE, "'%s' object cannot be interpreted as an integer", jinja_type_name(sn));
    long long slices = num_i(sn);
    jlist *src = jinja_iter_list(j, v), *l = jinja_list_new(j, src->n), *r = jinja_list_new(j, 4);   /* list(value) */
    for (size_t i = 0; i < src->n; i++) jinja_list_push(j, l, src->it[i]);
    long long len = (long long)l->n;
    if (!slices) jinja_fail(j, JE_ZERODIV, "integer division or modulo by zero");
    if (slices > 1 << 20) jinja_fail(j, JE_LIMIT, "slice: %lld slices (limit 2^20)", slices);
    long long per = slices > 0 ? len / slices : 0, extra = slices > 0 ? len % slices : 0, offset = 0;
    for (long long s = 0; s < slices; s++) {
        long long start = offset + s * per;
        if (s < extra) offset++;
        long long end = offset + (s + 1) * per;
        jv part = jinja_do_slice(j, v_list(l), v_int(start), v_int(end), v_none());
        if (fw.t != T_NONE && s >= extra) jinja_list_push(j, part.u.l, fw);
        part.u.l->tuple = 0;
        jinja_list_push(j, r, part);
    }
    return v_gen(r);
}

/* random.choice: any member */
static jv filter_random(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)A, (void)f;
    if (v.t == T_UNDEF) jinja_fail_undef(j, v);
    if (v.t != T_STR && !(v.t == T_LIST && is_seq(v.u.l)) && v.t != T_DICT)
        jinja_fail(j, JE_TYPE, "object of type '%s' has no len()", jinja_type_name(v));
    size_t n = jinja_py_len(j, v);
    if (!n) return lit_undef(j, "No random item, sequence was empty.");
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)&n ^ (unsigned)j->iters;
    long long i = (long long)((unsigned)rand_r(&seed) % n);
    if (v.t == T_DICT) { /* seq[i]: a dict has a key i or a KeyError */
        long k = jinja_dict_find(v.u.d, v_int(i));
        if (k < 0) jinja_fail(j, JE_KEY, "%lld", i);
        return v.u.d->v[k];
    }
    return jinja_get_item(j, v, v_int(i));
}

static jv filter_pprint(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)A, (void)f;
    sb r;
    jinja_sb_init(&r, j);
    jinja_put_pformat(&r, v);
    return jinja_sb_val(&r);
}

static jv filter_batch(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)f;
    long long n = num_i(jinja_arg(A, 0, "linecount", v_int(1)));
    if (n <= 0) jinja_fail(j, JE_FILTERARG, "batch: linecount must be positive");
    int fill = jinja_has_arg(A, 1, "fill_with");
    jv fw = jinja_arg(A, 1, "fill_with", v_none());
    jlist *l = jinja_iter_list(j, v), *r = jinja_list_new(j, 4), *cur = NULL;
    for (size_t i = 0; i < l->n; i++) {
        if (!cur || (long long)cur->n == n) { cur = jinja_list_new(j, (size_t)(n < 64 ? n : 64)); jinja_list_push(j, r, v_list(cur)); }
        jinja_list_push(j, cur, l->it[i]);
    }
    if (cur && fill) while ((long long)cur->n < n) jinja_list_push(j, cur, fw);
    return v_gen(r);
}

static jv filter_sum(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)f;
    jv at = jinja_arg(A, 0, "attribute", v_none());
    jv acc = jinja_arg(A, 1, "start", v_int(0));
    jlist *l = jinja_iter_list(j, v);
    for (size_t i = 0; i < l->n; i++)
        acc = jinja_arith(j, '+', acc, at.t == T_STR ? attr_path(j, l->it[i], at.u.s->p) : l->it[i]);
    return acc;
}

static jv filter_min(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)f;
    int cs = jinja_truthy(jinja_arg(A, 0, "case_sensitive", v_bool(0)));
    jv at = jinja_arg(A, 1, "attribute", v_none());
    sortctx c = {!cs, 0, at.t == T_STR ? at.u.s->p : NULL};
    jlist *l = jinja_iter_list(j, v);
    if (!l->n) return lit_undef(j, "No aggregated item, sequence was empty.");
    size_t best = 0;
    jv bk = sort_key(j, l->it[0], &c);
    for (size_t i = 1; i < l->n; i++) {
        jv k = sort_key(j, l->it[i], &c);
        int cmp = jinja_py_cmp(j, k, bk, name[1] == 'i' ? "<" : ">"); /* min() compares with <, max() with > */
        if (name[1] == 'i' ? cmp < 0 : cmp > 0) { best = i; bk = k; }
    }
    return l->it[best];
}

static jv filter_attr(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)f;
    /* getattr only: a dict's keys are not attributes */
    const char *nm = jinja_to_str(j, jinja_arg(A, 0, "name", v_undef(NULL))).u.s->p;
    jv m;
    if (v.t == T_UNDEF) jinja_fail_undef(j, v);
    if (v.t == T_NS) return jinja_get_attr(j, v, nm);
    if (jinja_method_of(j, v, nm, &m)) return m;
    return v_undef(jinja_printf(j, "'%s' has no attribute '%s'", jinja_obj_repr(v), nm));
}

static jv filter_format(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)f;
    jlist *t = jinja_list_new(j, (size_t)A->n + 1);
    t->tuple = 1;
    for (int i = 0; i < A->n; i++) jinja_list_push(j, t, A->a[i]);
    return jinja_arith(j, '%', jinja_to_str(j, v), v_list(t));
}

static jv filter_center(J *j, const char *name, jv v, jargs *A, frame *f)
{
    (void)name, (void)f;
    long long w = num_i(jinja_arg(A, 0, "width", v_int(80)));
    jv s = jinja_to_str(j, v);
    long long n = (long long)jinja_u8_count(s.u.s->p, s.u.s->len);
    if (w <= n) return s;
    long long pad = w - n, left = pad / 2 + (pad & w & 1);
    sb r;
    jinja_sb_init(&r, j);
    for (long long i = 0; i < left; i++) jinja_sb_putc(&r, ' ');
    jinja_sb_put_str(&r, s.u.s);
    for (long long i = 0; i < pad - left; i++) jinja_sb_putc(&r, ' ');
    return jinja_sb_val(&r);
}

/* Every filter by name, the function a row's: one function may serve two names and tell them
 * apart by `name`. Filters of text layout are in textfilters.c (jinja_text_filter). */
static const struct {
    const char *name;
    jv (*fn)(J *j, const char *name, jv v, jargs *A, frame *f);
} FILTERS[] = {
    {"safe", filter_safe}, {"string", filter_safe}, {"trim", filter_trim}, {"upper", filter_upper},
    {"lower", filter_upper}, {"title", filter_title}, {"capitalize", filter_capitalize},
    {"length", filter_length}, {"count", filter_length}, {"replace", filter_replace}, {"join", filter_join},
    {"default", filter_default}, {"d", filter_default}, {"first", filter_first}, {"last", filter_first},
    {"list", filter_list}, {"items", filter_items}, {"map", filter_map}, {"select", filter_select_reject},
    {"reject", filter_select_reject}, {"selectattr", filter_select_reject},
    {"rejectattr", filter_select_reject}, {"dictsort", filter_dictsort}, {"sort", filter_sort},
    {"unique", filter_unique}, {"reverse", filter_reverse}, {"int", filter_int}, {"float", filter_float},
    {"abs", filter_abs}, {"round", filter_round}, {"indent", filter_indent}, {"tojson", filter_tojson},
    {"escape", filter_escape}, {"e", filter_escape}, {"forceescape", filter_escape},
    {"wordcount", filter_wordcount}, {"groupby", filter_groupby}, {"slice", filter_slice},
    {"random", filter_random}, {"pprint", filter_pprint}, {"batch", filter_batch}, {"sum", filter_sum},
    {"min", filter_min}, {"max", filter_min}, {"attr", filter_attr}, {"format", filter_format},
    {"center", filter_center},
};

jv jinja_apply_filter(J *j, const char *name, jv v, jargs *A, frame *f)
{
    for (size_t i = 0; i < sizeof FILTERS / sizeof *FILTERS; i++)
        if (!strcmp(name, FILTERS[i].name)) return FILTERS[i].fn(j, name, v, A, f);
    jv r;
    if (jinja_text_filter(j, name, v, A, &r)) return r;
    jinja_fail(j, JE_ASSERTION, "No filter named '%s'.", name);
}
