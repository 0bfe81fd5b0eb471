/* The render: evaluating expressions and executing statements over frames of variables,
 * macros and caller blocks, for loops with their loop object. */
#include <string.h>

#include "jinja/internal.h"

jv jinja_arg(jargs *A, int pos, const char *name, jv def)
{
    for (int i = 0; i < A->nk; i++)
        if (!strcmp(A->kn[i], name)) return A->kv[i];
    if (pos >= 0 && pos < A->n) return A->a[pos];
    return def;
}

int jinja_has_arg(jargs *A, int pos, const char *name)
{
    for (int i = 0; i < A->nk; i++)
        if (!strcmp(A->kn[i], name)) return 1;
    return pos >= 0 && pos < A->n;
}

frame *jinja_frame_new(J *j, frame *parent)
{
    frame *f = jinja_alloc(j, sizeof *f);
    memset(f, 0, sizeof *f);
    f->parent = parent;
    return f;
}

static jv lookup(J *j, frame *f, const char *name)
{
    for (frame *fr = f; fr; fr = fr->parent) {
        long i = jinja_dict_find_s(&fr->vars, name);
        if (i >= 0) return fr->vars.v[i];
    }
    jv g;
    if (jinja_global_of(j, name, &g)) return g;
    return v_undef(jinja_printf(j, "'%s' is undefined", name));
}

static jv eval(J *j, node *n, frame *f);

static void eval_args(J *j, node *n, frame *f, jargs *A)
{
    A->n = n->nv;
    A->a = n->nv ? jinja_alloc(j, (size_t)n->nv * sizeof(jv)) : NULL;
    for (int i = 0; i < n->nv; i++) A->a[i] = eval(j, n->v[i], f);
    A->nk = n->nv2;
    A->kn = n->names;
    A->kv = n->nv2 ? jinja_alloc(j, (size_t)n->nv2 * sizeof(jv)) : NULL;
    for (int i = 0; i < n->nv2; i++) A->kv[i] = eval(j, n->v2[i], f);
}

static void bind(J *j, frame *f, node *target, jv v)
{
    if (target->k == E_NAME) {
        jinja_dict_set_s(j, &f->vars, target->name, v);
        return;
    }
    jlist *l;
    if (v.t == T_LIST) l = v.u.l;
    else if (v.t == T_STR || v.t == T_DICT) l = jinja_iter_list(j, v);
    else jinja_fail(j, JE_TYPE, "cannot unpack non-iterable %s object", jinja_type_name(v));
    if ((int)l->n < target->nv) jinja_fail(j, JE_VALUE, "not enough values to unpack (expected %d, got %zu)", target->nv, l->n);
    if ((int)l->n > target->nv) jinja_fail(j, JE_VALUE, "too many values to unpack (expected %d)", target->nv);
    for (int i = 0; i < target->nv; i++) bind(j, f, target->v[i], l->it[i]);
}

static jv call_macro(J *j, jfunc *fn, jargs *A, jv caller)
{
    node *m = fn->macro;
    frame *mf = jinja_frame_new(j, fn->closure);
    if (A->n > m->nnames)
        jinja_fail(j, JE_TYPE, "macro '%s' takes not more than %d argument(s)", m->name ? m->name : "caller", m->nnames);
    for (int i = 0; i < A->nk; i++) {
        int k;
        for (k = 0; k < m->nnames; k++)
            if (!strcmp(m->names[k], A->kn[i])) break;
        if (k == m->nnames) jinja_fail(j, JE_TYPE, "macro '%s' takes no keyword argument '%s'", m->name ? m->name : "caller", A->kn[i]);
    }
    for (int k = 0; k < m->nnames; k++) {
        jv v;
        if (k < A->n) v = A->a[k];
        else if (jinja_has_arg(A, -1, m->names[k])) v = jinja_arg(A, -1, m->names[k], v_none());
        else if (m->v2[k]) v = eval(j, m->v2[k], mf);
        else v = v_undef(jinja_printf(j, "parameter '%s' was not provided", m->names[k]));
        jinja_dict_set_s(j, &mf->vars, m->names[k], v);
    }
    if (caller.t == T_FUNC) jinja_dict_set_s(j, &mf->vars, "caller", caller);
    jinja_bind_undef_start(j, mf, m->b);
    sb out;
    jinja_sb_init(&out, j);
    jinja_exec(j, m->b, mf, &out);
    return jinja_sb_val(&out);
}

static jv call_value(J *j, jv fnv, jargs *A, jv caller)
{
    if (fnv.t == T_UNDEF) jinja_fail_undef(j, fnv);
    if (fnv.t != T_FUNC) jinja_fail(j, JE_TYPE, "'%s' object is not callable", jinja_type_name(fnv));
    jfunc *fn = fnv.u.fn;
    if (fn->kind == F_MACRO || fn->kind == F_CALLER) return call_macro(j, fn, A, caller);
    if (fn->kind == F_METHOD) return jinja_call_method(j, fn->self, fn->name, A);
    return jinja_call_global(j, fn, A);
}

static jv eval(J *j, node *n, frame *f)
{
    if (++j->depth > MAX_DEPTH) jinja_fail(j, JE_RECURSION, "maximum recursion depth exceeded");
    int saved_line = j->line;
    j->line = n->line;
    jv r;
    switch (n->k) {
    case E_CONST: r = n->val; break;
    case E_NAME: r = lookup(j, f, n->name); break;
    case E_BLOCKINPUT: { jv v = {.t = T_STR}; v.u.s = j->block_input; r = v; break; }
    case E_ATTR: r = jinja_get_attr(j, eval(j, n->a, f), n->attr); break;
    case E_ITEM: { jv o = eval(j, n->a, f); r = jinja_get_item(j, o, eval(j, n->b, f)); break; }
    case E_SLICE: {
        jv o = eval(j, n->a, f);
        jv a = n->b ? eval(j, n->b, f) : v_none(), b = n->c ? eval(j, n->c, f) : v_none(), c = n->d ? eval(j, n->d, f) : v_none();
        r = jinja_do_slice(j, o, a, b, c);
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
        r = jinja_apply_filter(j, n->name, in, &A, f);
        break;
    }
    case E_TEST: {
        jv in = eval(j, n->a, f);
        jargs A;
        eval_args(j, n, f, &A);
        r = v_bool(jinja_apply_test(j, n->name, in, &A) != n->op);
        break;
    }
    case E_BIN: { jv a = eval(j, n->a, f); r = jinja_arith(j, n->op, a, eval(j, n->b, f)); break; }
    case E_NEG: case E_POS: {
        jv a = eval(j, n->a, f);
        if (a.t == T_UNDEF) jinja_fail_undef(j, a);
        if (!is_num(a) && a.t != T_BIG)
            jinja_fail(j, JE_TYPE, "bad operand type for unary %c: '%s'", n->k == E_NEG ? '-' : '+', jinja_type_name(a));
        if (n->k == E_POS) r = a.t == T_BOOL ? v_int(a.u.b) : a;
        else if (a.t == T_FLOAT) r = v_float(-a.u.f);
        else r = jinja_arith(j, '-', v_int(0), a); /* -(-2**63) is past 64 bits */
        break;
    }
    case E_NOT: r = v_bool(!jinja_truthy(eval(j, n->a, f))); break;
    case E_AND: { jv a = eval(j, n->a, f); r = jinja_truthy(a) ? eval(j, n->b, f) : a; break; }
    case E_OR: { jv a = eval(j, n->a, f); r = jinja_truthy(a) ? a : eval(j, n->b, f); break; }
    case E_CMP: {
        jv a = eval(j, n->a, f);
        r = v_bool(1);
        for (int i = 0; i < n->nv; i++) {
            jv b = eval(j, n->v[i], f);
            int ok;
            switch (n->v2[i]->op) {
            case C_EQ: ok = jinja_py_eq(a, b); break;
            case C_NE: ok = !jinja_py_eq(a, b); break;
            case C_LT: ok = jinja_py_cmp(j, a, b, "<") < 0; break;
            case C_LE: ok = jinja_py_cmp(j, a, b, "<=") <= 0; break;
            case C_GT: ok = jinja_py_cmp(j, a, b, ">") > 0; break;
            case C_GE: ok = jinja_py_cmp(j, a, b, ">=") >= 0; break;
            case C_IN: ok = jinja_contains(j, b, a); break;
            default: ok = !jinja_contains(j, b, a); break;
            }
            if (!ok) { r = v_bool(0); break; }
            a = b;
        }
        break;
    }
    case E_COND:
        if (jinja_truthy(eval(j, n->a, f))) r = eval(j, n->b, f);
        else r = n->c ? eval(j, n->c, f) : v_undef("the inline if-expression evaluated to false and no else section was defined.");
        break;
    case E_LIST: case E_TUPLE: {
        jlist *l = jinja_list_new(j, (size_t)n->nv + 1);
        for (int i = 0; i < n->nv; i++) jinja_list_push(j, l, eval(j, n->v[i], f));
        l->tuple = n->k == E_TUPLE;
        r = v_list(l);
        break;
    }
    case E_DICT: {
        jdict *d = jinja_dict_new(j);
        for (int i = 0; i < n->nv; i++) {
            jv k = eval(j, n->v[i], f);
            if (k.t == T_LIST && !k.u.l->tuple) jinja_fail(j, JE_TYPE, "unhashable type: 'list'");
            if (k.t == T_DICT) jinja_fail(j, JE_TYPE, "unhashable type: 'dict'");
            jinja_dict_set(j, d, k, eval(j, n->v2[i], f));
        }
        r = v_dict(d);
        break;
    }
    case E_CONCAT: {
        sb b;
        jinja_sb_init(&b, j);
        for (int i = 0; i < n->nv; i++) jinja_put_str(&b, eval(j, n->v[i], f));
        r = jinja_sb_val(&b);
        break;
    }
    default: jinja_fail(j, JE_RUNTIME, "internal error: bad expression node %d", n->k);
    }
    j->line = saved_line;
    j->depth--;
    return r;
}

enum { X_NORMAL, X_BREAK, X_CONTINUE };

/* names the scope analysis found to start out undefined in this scope */
void jinja_bind_undef_start(J *j, frame *f, const node *body)
{
    for (int i = 0; body && i < body->nnames; i++)
        jinja_dict_set_s(j, &f->vars, body->names[i], v_undef(jinja_printf(j, "'%s' is undefined", body->names[i])));
}

static int exec_for(J *j, node *n, frame *f, sb *out)
{
    jv seq = eval(j, n->a, f);
    jlist *items = jinja_iter_list(j, seq);
    frame *lf = jinja_frame_new(j, f);
    if (n->b) {
        jlist *kept = jinja_list_new(j, items->n + 1);
        for (size_t i = 0; i < items->n; i++) {
            if (++j->iters > MAX_ITERS) jinja_fail(j, JE_LIMIT, "too many loop iterations (limit %lld)", MAX_ITERS);
            bind(j, lf, n->d, items->it[i]);
            if (jinja_truthy(eval(j, n->b, lf))) jinja_list_push(j, kept, items->it[i]);
        }
        items = kept;
    }
    size_t cnt = items->n;
    /* Jinja2 runs the else block unless some iteration reached the end of the body: a loop
     * whose iterations all break or continue gets it too */
    int completed = 0;
    static const char *const K[] = {"index", "index0", "revindex", "revindex0", "first", "last", "length", "depth", "depth0", "previtem", "nextitem", "cycle"};
    jdict *loop = jinja_dict_new(j);
    for (size_t k = 0; k < 12; k++) jinja_dict_set_s(j, loop, K[k], v_none());
    loop->v[11] = jinja_mk_func(j, F_BUILTIN, "cycle", v_dict(loop));
    jv loop_key = jinja_v_cstr(j, "loop");
    jv target_key = n->d->k == E_NAME ? jinja_v_cstr(j, n->d->name) : v_none();
    lf = jinja_frame_new(j, f);
    for (size_t i = 0; i < cnt; i++) {
        if (++j->iters > MAX_ITERS) jinja_fail(j, JE_LIMIT, "too many loop iterations (limit %lld)", MAX_ITERS);
        /* as Jinja2: what the body sets lasts for one iteration only (nothing can hold on to
         * the iteration's frame past it, so it is emptied and reused) */
        lf->vars.n = 0;
        if (n->d->k == E_NAME) jinja_dict_set(j, &lf->vars, target_key, items->it[i]);
        else bind(j, lf, n->d, items->it[i]);
        jinja_bind_undef_start(j, lf, n->c);
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
        jinja_dict_set(j, &lf->vars, loop_key, v_dict(loop));
        int x = jinja_exec(j, n->c, lf, out);
        if (x == X_BREAK) break;
        if (x == X_NORMAL) completed = 1;
    }
    if (!completed && n->nv) {
        lf->vars.n = 0;
        return jinja_exec(j, n->v[0], lf, out);
    }
    return X_NORMAL;
}

int jinja_exec(J *j, node *n, frame *f, sb *out)
{
    if (++j->depth > MAX_DEPTH) jinja_fail(j, JE_RECURSION, "maximum recursion depth exceeded");
    int r = X_NORMAL;
    j->line = n->line;
    switch (n->k) {
    case S_BODY:
        for (node *c = n->a; c; c = c->next) {
            r = jinja_exec(j, c, f, out);
            if (r != X_NORMAL) break;
        }
        break;
    case S_TEXT: jinja_sb_put_str(out, n->val.u.s); break;
    case S_OUT: jinja_put_str(out, eval(j, n->a, f)); break;
    case S_IF:
        if (jinja_truthy(eval(j, n->a, f))) r = jinja_exec(j, n->b, f, out);
        else if (n->c) r = jinja_exec(j, n->c, f, out);
        break;
    case S_FOR: r = exec_for(j, n, f, out); break;
    case S_BREAK: r = X_BREAK; break;
    case S_CONTINUE: r = X_CONTINUE; break;
    case S_SET: case S_SETBLOCK: {
        jv v;
        if (n->k == S_SET) v = eval(j, n->a, f);
        else {
            sb cap;
            jinja_sb_init(&cap, j);
            frame *bf = jinja_frame_new(j, f); /* the block is a scope of its own */
            jinja_bind_undef_start(j, bf, n->b);
            jinja_exec(j, n->b, bf, &cap);
            v = jinja_sb_val(&cap);
            if (n->a) {
                jstr *saved = j->block_input;
                j->block_input = v.u.s;
                v = eval(j, n->a, f);
                j->block_input = saved;
            }
        }
        if (n->d->k == E_ATTR) {
            jv ns = lookup(j, f, n->d->name);
            if (ns.t != T_NS) jinja_fail(j, JE_RUNTIME, "cannot assign attribute on non-namespace object");
            jinja_dict_set_s(j, ns.u.d, n->d->attr, v);
        } else
            bind(j, f, n->d, v);
        break;
    }
    case S_MACRO: {
        jv m = jinja_mk_func(j, F_MACRO, n->name, v_none());
        m.u.fn->macro = n;
        m.u.fn->closure = f;
        jinja_dict_set_s(j, &f->vars, n->name, m);
        break;
    }
    case S_CALLBLOCK: {
        jv caller = jinja_mk_func(j, F_CALLER, "caller", v_none());
        caller.u.fn->macro = n;
        caller.u.fn->closure = f;
        node *c = n->a;
        jv fnv = eval(j, c->a, f);
        jargs A;
        eval_args(j, c, f, &A);
        if (fnv.t == T_FUNC && fnv.u.fn->kind == F_MACRO) jinja_put_str(out, call_macro(j, fnv.u.fn, &A, caller));
        else jinja_put_str(out, call_value(j, fnv, &A, caller));
        break;
    }
    case S_FILTERBLOCK: {
        sb cap;
        jinja_sb_init(&cap, j);
        frame *bf = jinja_frame_new(j, f); /* the block is a scope of its own */
        jinja_bind_undef_start(j, bf, n->b);
        jinja_exec(j, n->b, bf, &cap);
        jv v = jinja_sb_val(&cap);
        jstr *saved = j->block_input;
        j->block_input = v.u.s;
        jinja_put_str(out, eval(j, n->a, f));
        j->block_input = saved;
        break;
    }
    case S_WITH: {
        frame *wf = jinja_frame_new(j, f);
        for (int i = 0; i < n->nv; i++) jinja_dict_set_s(j, &wf->vars, n->v[i]->name, eval(j, n->v2[i], f));
        jinja_bind_undef_start(j, wf, n->b);
        r = jinja_exec(j, n->b, wf, out);
        break;
    }
    default: jinja_fail(j, JE_RUNTIME, "internal error: bad statement node %d", n->k);
    }
    j->depth--;
    return r;
}
