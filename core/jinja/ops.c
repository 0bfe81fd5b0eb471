/* Python's operators on values: attribute and item access, slicing, iteration, len(), 'in'
 * and arithmetic, with the errors Python raises where Jinja2 lets them through. */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "jinja/internal.h"

jv jinja_get_attr(J *j, jv obj, const char *name)
{
    jv m;
    if (obj.t == T_UNDEF) jinja_fail_undef(j, obj);
    if (obj.t == T_DICT && jinja_method_of(j, obj, name, &m)) return m;
    if (obj.t == T_DICT || obj.t == T_NS) {
        long i = jinja_dict_find_s(obj.u.d, name);
        if (i >= 0) return obj.u.d->v[i];
    } else if (obj.t == T_LIST && obj.u.l->named == 'g' && (!strcmp(name, "grouper") || !strcmp(name, "list"))) {
        return obj.u.l->it[name[0] == 'l'];
    } else if (jinja_method_of(j, obj, name, &m))
        return m;
    return v_undef(jinja_printf(j, "'%s' has no attribute '%s'", jinja_obj_repr(obj), name));
}

static jv str_char(J *j, jstr *s, long long idx)
{
    long long n = (long long)jinja_u8_count(s->p, s->len);
    if (idx < 0) idx += n;
    if (idx < 0 || idx >= n) return v_undef(jinja_printf(j, "str object has no element %lld", idx));
    size_t a = jinja_u8_offset(s->p, s->len, (size_t)idx);
    size_t k = jinja_u8_next(s->p, s->len, a, NULL);
    return jinja_v_sub(j, s, a, a + k);
}

jv jinja_get_item(J *j, jv obj, jv key)
{
    if (obj.t == T_UNDEF) jinja_fail_undef(j, obj);
    if (obj.t == T_DICT) {
        long i = jinja_dict_find(obj.u.d, key);
        if (i >= 0) return obj.u.d->v[i];
    } else if (obj.t == T_LIST && !is_seq(obj.u.l)) {  /* getitem's TypeError: undefined */
        return v_undef(jinja_printf(j, "'%s' object is not subscriptable", jinja_type_name(obj)));
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
        if (obj.t != T_NS && jinja_method_of(j, obj, name, &m)) return m;
        if (obj.t == T_NS || (obj.t == T_LIST && obj.u.l->named)) return jinja_get_attr(j, obj, name);
        return v_undef(jinja_printf(j, "'%s' has no attribute '%s'", jinja_obj_repr(obj), name));
    }
    sb b;
    jinja_sb_init(&b, j);
    jinja_put_repr(&b, key);
    jv r = jinja_sb_val(&b);
    return v_undef(jinja_printf(j, "%s has no element %s", jinja_obj_repr(obj), r.u.s->p));
}

/* Python's slice.indices */
static void slice_idx(long long n, jv st, jv sp, jv se, long long *start, long long *stop, long long *step, J *j)
{
    *step = se.t == T_NONE || se.t == T_UNDEF ? 1 : num_i(se);
    if (*step == 0) jinja_fail(j, JE_VALUE, "slice step cannot be zero");
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

jv jinja_do_slice(J *j, jv obj, jv st, jv sp, jv se)
{
    jv parts[3] = {st, sp, se};
    for (int i = 0; i < 3; i++)
        if (parts[i].t != T_NONE && parts[i].t != T_UNDEF && parts[i].t != T_INT && parts[i].t != T_BOOL)
            jinja_fail(j, JE_TYPE, "slice indices must be integers or None");
    if (obj.t == T_UNDEF) jinja_fail_undef(j, obj);
    long long a, b, s;
    if (obj.t == T_LIST && !is_seq(obj.u.l)) jinja_fail(j, JE_TYPE, "'%s' object is not subscriptable", jinja_type_name(obj));
    if (obj.t == T_LIST) {
        jlist *l = obj.u.l, *r = jinja_list_new(j, l->n);
        slice_idx((long long)l->n, st, sp, se, &a, &b, &s, j);
        for (long long i = a; s > 0 ? i < b : i > b; i += s) jinja_list_push(j, r, l->it[i]);
        r->tuple = l->tuple;
        return v_list(r);
    }
    if (obj.t == T_STR) {
        jstr *str = obj.u.s;
        long long n = (long long)jinja_u8_count(str->p, str->len);
        slice_idx(n, st, sp, se, &a, &b, &s, j);
        if (s == 1) {
            if (b <= a) return jinja_v_str(j, "", 0);
            size_t x = jinja_u8_offset(str->p, str->len, (size_t)a);
            size_t y = x + jinja_u8_offset(str->p + x, str->len - x, (size_t)(b - a));
            return jinja_v_sub(j, str, x, y);
        }
        size_t *off = jinja_alloc(j, ((size_t)n + 1) * sizeof *off);
        size_t o = 0;
        for (long long i = 0; i < n; i++) { off[i] = o; o += jinja_u8_next(str->p, str->len, o, NULL); }
        off[n] = o;
        sb r;
        jinja_sb_init(&r, j);
        for (long long i = a; s > 0 ? i < b : i > b; i += s) jinja_sb_put_sub(&r, str, off[i], off[i + 1]);
        return jinja_sb_val(&r);
    }
    /* Jinja2 slices with Python's own [] (not through getitem): anything else fails */
    if (obj.t == T_DICT) jinja_fail(j, JE_TYPE, "unhashable type: 'slice'");
    jinja_fail(j, JE_TYPE, "'%s' object is not subscriptable", jinja_type_name(obj));
}

/* the items a for loop (or list()) walks */
jlist *jinja_iter_list(J *j, jv v)
{
    switch (v.t) {
    case T_UNDEF: return jinja_list_new(j, 1);
    case T_LIST: return v.u.l;
    case T_DICT: {
        jlist *l = jinja_list_new(j, v.u.d->n);
        for (size_t i = 0; i < v.u.d->n; i++) jinja_list_push(j, l, v.u.d->k[i]);
        return l;
    }
    case T_STR: {
        jstr *s = v.u.s;
        jlist *l = jinja_list_new(j, s->len);
        for (size_t i = 0; i < s->len;) {
            size_t k = jinja_u8_next(s->p, s->len, i, NULL);
            jinja_list_push(j, l, jinja_v_sub(j, s, i, i + k));
            i += k;
        }
        return l;
    }
    default: jinja_fail(j, JE_TYPE, "'%s' object is not iterable", jinja_type_name(v));
    }
}

size_t jinja_py_len(J *j, jv v)
{
    switch (v.t) {
    case T_UNDEF: return 0;
    case T_STR: return jinja_u8_count(v.u.s->p, v.u.s->len);
    case T_LIST:
        if (v.u.l->gen) jinja_fail(j, JE_TYPE, "object of type 'generator' has no len()");
        return v.u.l->n;
    case T_DICT: case T_NS: return v.u.d->n;
    default: jinja_fail(j, JE_TYPE, "object of type '%s' has no len()", jinja_type_name(v));
    }
}

int jinja_contains(J *j, jv container, jv item)
{
    switch (container.t) {
    case T_UNDEF: return 0;
    case T_STR: {
        if (item.t != T_STR) jinja_fail(j, JE_TYPE, "'in <string>' requires string as left operand, not %s", jinja_type_name(item));
        jstr *h = container.u.s, *n = item.u.s;
        if (!n->len) return 1;
        for (size_t i = 0; i + n->len <= h->len; i++)
            if (!memcmp(h->p + i, n->p, n->len)) return 1;
        return 0;
    }
    case T_LIST:
        for (size_t i = 0; i < container.u.l->n; i++)
            if (jinja_py_eq(container.u.l->it[i], item)) return 1;
        return 0;
    case T_DICT:
        if ((item.t == T_LIST && !item.u.l->tuple) || item.t == T_DICT || item.t == T_NS)
            jinja_fail(j, JE_TYPE, "unhashable type: '%s'", jinja_type_name(item));
        return jinja_dict_find(container.u.d, item) >= 0;
    default: jinja_fail(j, JE_TYPE, "argument of type '%s' is not iterable", jinja_type_name(container));
    }
}

jv jinja_arith(J *j, int op, jv a, jv b)
{
    if (a.t == T_UNDEF) jinja_fail_undef(j, a);
    if (b.t == T_UNDEF) jinja_fail_undef(j, b);
    if (op == '+' && a.t == T_STR && b.t == T_STR) {   /* Markup + str escapes the str */
        sb r;
        jinja_sb_init(&r, j);
        if (b.xc && !a.xc) jinja_put_escaped(&r, a.u.s);
        else jinja_sb_put_str(&r, a.u.s);
        if (a.xc && !b.xc) jinja_put_escaped(&r, b.u.s);
        else jinja_sb_put_str(&r, b.u.s);
        jv s = jinja_sb_val(&r);
        s.xc = a.xc || b.xc;
        return s;
    }
    if (op == '+' && a.t == T_LIST && b.t == T_LIST && is_seq(a.u.l) && is_seq(b.u.l) && a.u.l->tuple == b.u.l->tuple) {
        jlist *l = jinja_list_new(j, a.u.l->n + b.u.l->n);
        for (size_t i = 0; i < a.u.l->n; i++) jinja_list_push(j, l, a.u.l->it[i]);
        for (size_t i = 0; i < b.u.l->n; i++) jinja_list_push(j, l, b.u.l->it[i]);
        l->tuple = a.u.l->tuple;
        return v_list(l);
    }
    if (op == '*' && ((a.t == T_STR || a.t == T_LIST) && (b.t == T_INT || b.t == T_BOOL)))
        { jv t = a; a = b; b = t; }
    if (op == '*' && (a.t == T_INT || a.t == T_BOOL) && (b.t == T_STR || b.t == T_LIST)) {
        long long n = num_i(a);
        if (b.t == T_STR) {
            sb r;
            jinja_sb_init(&r, j);
            if (n > 0 && b.u.s->len && (size_t)n > MAX_STRING / b.u.s->len) jinja_fail(j, JE_LIMIT, "output too long");
            for (long long i = 0; i < n; i++) jinja_sb_put_str(&r, b.u.s);
            return jinja_sb_val(&r);
        }
        if (n > 0 && b.u.l->n && (size_t)n > (1u << 20) / b.u.l->n) jinja_fail(j, JE_LIMIT, "list too long");
        if (!is_seq(b.u.l)) jinja_fail(j, JE_TYPE, "unsupported operand type(s) for *: 'int' and '%s'", jinja_type_name(b));
        jlist *l = jinja_list_new(j, 4);
        for (long long i = 0; i < n; i++)
            for (size_t k = 0; k < b.u.l->n; k++) jinja_list_push(j, l, b.u.l->it[k]);
        l->tuple = b.u.l->tuple;
        return v_list(l);
    }
    if (op == '%' && a.t == T_STR) return jinja_py_percent(j, a.u.s, b); /* printf-style formatting */
    if (op == '*' && (((a.t == T_STR || a.t == T_LIST) && b.t == T_BIG) || ((b.t == T_STR || b.t == T_LIST) && a.t == T_BIG)))
        jinja_fail(j, JE_OVERFLOW, "cannot fit 'int' into an index-sized integer");
    if ((a.t == T_BIG && (is_num(b) || b.t == T_BIG)) || (b.t == T_BIG && is_num(a))) {
        int neg_exp = op == 'P' && (b.t == T_BIG ? b.u.s->p[0] == '-' : b.t != T_FLOAT && num_i(b) < 0);
        if (a.t != T_FLOAT && b.t != T_FLOAT && op != '/' && !neg_exp) return jinja_big_arith(j, op, a, b);
        /* Python computes these in floats (OverflowError past a double) */
        a = v_float(a.t == T_BIG ? jinja_big_to_double(j, a) : num_f(a));
        b = v_float(b.t == T_BIG ? jinja_big_to_double(j, b) : num_f(b));
    }
    if (!is_num(a) || !is_num(b)) { /* Python's wording for each case */
        int seq_a = a.t == T_STR || (a.t == T_LIST && is_seq(a.u.l)), seq_b = b.t == T_STR || (b.t == T_LIST && is_seq(b.u.l));
        if (op == '+' && seq_a)
            jinja_fail(j, JE_TYPE, "can only concatenate %s (not \"%s\") to %s", jinja_type_name(a), jinja_type_name(b), jinja_type_name(a));
        if (op == '*' && (seq_a || seq_b))
            jinja_fail(j, JE_TYPE, "can't multiply sequence by non-int of type '%s'", jinja_type_name(seq_a ? b : a));
        jinja_fail(j, JE_TYPE, "unsupported operand type(s) for %s: '%s' and '%s'",
              op == 'P' ? "** or pow()" : op == 'F' ? "//" : (const char[]){(char)op, 0}, jinja_type_name(a), jinja_type_name(b));
    }
    int isf = a.t == T_FLOAT || b.t == T_FLOAT;
    if (op == '/') {
        if (num_f(b) == 0) jinja_fail(j, JE_ZERODIV, "division by zero");
        return v_float(num_f(a) / num_f(b));
    }
    if (!isf) {
        long long x = num_i(a), y = num_i(b), r;
        switch (op) {
        /* Python's ints never overflow: past 64 bits the result is a big integer */
        case '+': if (__builtin_add_overflow(x, y, &r)) return jinja_big_arith(j, op, a, b); return v_int(r);
        case '-': if (__builtin_sub_overflow(x, y, &r)) return jinja_big_arith(j, op, a, b); return v_int(r);
        case '*': if (__builtin_mul_overflow(x, y, &r)) return jinja_big_arith(j, op, a, b); return v_int(r);
        case 'F': case '%':
            if (!y) jinja_fail(j, JE_ZERODIV, "integer division or modulo by zero");
            if (x == LLONG_MIN && y == -1) return op == 'F' ? jinja_big_arith(j, op, a, b) : v_int(0);
            r = x / y;
            if ((x % y) && ((x < 0) != (y < 0))) r--;
            return op == 'F' ? v_int(r) : v_int(x - r * y);
        case 'P':
            if (y >= 0) { /* square and multiply */
                long long acc = 1, base = x;
                for (long long k = y; k > 0; k >>= 1) {
                    if ((k & 1) && __builtin_mul_overflow(acc, base, &acc)) return jinja_big_arith(j, op, a, b);
                    if (k > 1 && __builtin_mul_overflow(base, base, &base)) return jinja_big_arith(j, op, a, b);
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
    case 'F': if (y == 0) jinja_fail(j, JE_ZERODIV, "float floor division by zero"); return v_float(floor(x / y));
    case '%': {
        if (y == 0) jinja_fail(j, JE_ZERODIV, "float modulo");
        double m = fmod(x, y);
        if (m && ((m < 0) != (y < 0))) m += y;
        return v_float(m);
    }
    default: return v_float(pow(x, y));
    }
}
