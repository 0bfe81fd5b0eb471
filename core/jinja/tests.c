/* Jinja2's tests (x is defined, x is string, ...). */
#include <ctype.h>
#include <string.h>

#include "jinja/internal.h"

int jinja_apply_test(J *j, const char *name, jv v, jargs *A)
{
    jv a0 = jinja_arg(A, 0, "value", v_undef(NULL));
    if (!strcmp(name, "defined")) return v.t != T_UNDEF;
    if (!strcmp(name, "undefined")) return v.t == T_UNDEF;
    if (!strcmp(name, "none")) return v.t == T_NONE;
    if (!strcmp(name, "string")) return v.t == T_STR;
    if (!strcmp(name, "escaped")) return v.t == T_STR && v.xc; /* has __html__: Markup */
    if (!strcmp(name, "number")) return is_num(v) || v.t == T_BIG;
    if (!strcmp(name, "integer")) return v.t == T_INT || v.t == T_BIG;
    if (!strcmp(name, "float")) return v.t == T_FLOAT;
    if (!strcmp(name, "mapping")) return v.t == T_DICT;
    if (!strcmp(name, "iterable")) return v.t == T_STR || v.t == T_LIST || v.t == T_DICT || v.t == T_UNDEF;
    if (!strcmp(name, "sequence")) return v.t == T_STR || (v.t == T_LIST && is_seq(v.u.l)) || v.t == T_DICT || v.t == T_UNDEF;
    if (!strcmp(name, "boolean")) return v.t == T_BOOL;
    if (!strcmp(name, "true")) return v.t == T_BOOL && v.u.b;
    if (!strcmp(name, "false")) return v.t == T_BOOL && !v.u.b;
    if (!strcmp(name, "callable")) return v.t == T_FUNC;
    if (!strcmp(name, "even") || !strcmp(name, "odd")) {
        jv m = jinja_arith(j, '%', v, v_int(2));
        return !strcmp(name, "even") ? !jinja_truthy(m) : jinja_py_eq(m, v_int(1));
    }
    if (!strcmp(name, "divisibleby")) {
        jv m = jinja_arith(j, '%', v, jinja_arg(A, 0, "num", v_undef("divisibleby needs an argument")));
        return !jinja_truthy(m);
    }
    if (!strcmp(name, "equalto") || !strcmp(name, "eq") || !strcmp(name, "==")) return jinja_py_eq(v, a0);
    if (!strcmp(name, "ne") || !strcmp(name, "!=")) return !jinja_py_eq(v, a0);
    if (!strcmp(name, "lt") || !strcmp(name, "lessthan") || !strcmp(name, "<")) return jinja_py_cmp(j, v, a0, "<") < 0;
    if (!strcmp(name, "le") || !strcmp(name, "<=")) return jinja_py_cmp(j, v, a0, "<=") <= 0;
    if (!strcmp(name, "gt") || !strcmp(name, "greaterthan") || !strcmp(name, ">")) return jinja_py_cmp(j, v, a0, ">") > 0;
    if (!strcmp(name, "ge") || !strcmp(name, ">=")) return jinja_py_cmp(j, v, a0, ">=") >= 0;
    if (!strcmp(name, "in")) return jinja_contains(j, jinja_arg(A, 0, "seq", v_undef(NULL)), v);
    if (!strcmp(name, "sameas")) {
        jv o = jinja_arg(A, 0, "other", v_undef(NULL));
        if (v.t != o.t) return 0;
        if (v.t == T_NONE || v.t == T_UNDEF) return v.t == T_NONE;
        if (v.t == T_BOOL) return v.u.b == o.u.b;
        if (v.t == T_INT) return v.u.i == o.u.i && v.u.i >= -5 && v.u.i <= 256;
        return memcmp(&v.u, &o.u, sizeof v.u) == 0;
    }
    if (!strcmp(name, "lower") || !strcmp(name, "upper")) {
        jv s = jinja_to_str(j, v);
        int lower = !strcmp(name, "lower"), cased = 0;
        for (size_t i = 0; i < s.u.s->len; i++) {
            unsigned char c = (unsigned char)s.u.s->p[i];
            if (isalpha(c)) { cased = 1; if (lower ? isupper(c) : islower(c)) return 0; }
        }
        return cased;
    }
    if (!strcmp(name, "filter") || !strcmp(name, "test")) return v.t == T_STR;
    jinja_fail(j, JE_ASSERTION, "No test named '%s'.", name);
}
