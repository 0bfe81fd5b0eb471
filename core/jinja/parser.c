/* The parser: tokens to the AST, by Jinja2's grammar and precedence, with its wording for
 * syntax errors. */
#include <string.h>

#include "jinja/internal.h"

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
    if (!is_op(p, s)) jinja_pfail_expected(p, cur(p), s);
    adv(p);
}

static const char *tok_str(P *p, const tok *t) { return jinja_strdup(&p->j, t->s, t->n); }

static const char *expect_name(P *p)
{
    if (cur(p)->t != K_NAME) jinja_pfail_expected(p, cur(p), "name");
    return tok_str(p, adv(p));
}

static void expect_end(P *p)
{
    if (cur(p)->t != K_BEND) jinja_pfail_expected(p, cur(p), "end of statement block");
    adv(p);
}

static node *mk(P *p, int k, const tok *t)
{
    node *n = jinja_alloc(&p->j, sizeof *n);
    memset(n, 0, sizeof *n);
    n->k = k;
    n->line = t->line;
    n->col = t->col;
    return n;
}

/* A node's two lists as the parser gathered them: arguments and keyword values, keys and
 * values, names and values, operands and operators. */
static void set_lists(node *n, nvec a, nvec b)
{
    n->v = a.v;
    n->nv = a.n;
    n->v2 = b.v;
    n->nv2 = b.n;
}

void jinja_nv_push(P *p, nvec *v, node *x)
{
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 4;
        node **nn = jinja_alloc(&p->j, (size_t)cap * sizeof *nn);
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
    if (++p->depth > MAX_PARSE_DEPTH) jinja_pfail(p, JE_RECURSION, cur(p), "template nested too deeply");
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
        if (is_op(p, "*") || is_op(p, "**")) jinja_pfail(p, JE_UNSUPPORTED, cur(p), "*args and **kwargs are not supported");
        if (cur(p)->t == K_NAME && tok_is(peekt(p, 1), K_OP, "=")) {
            node *k = mk(p, E_CONST, cur(p));
            k->name = tok_str(p, adv(p));
            adv(p);
            jinja_nv_push(p, &kn, k);
            jinja_nv_push(p, &kv, parse_expr(p, 1));
        } else {
            if (kv.n) jinja_pfail(p, JE_SYNTAX, cur(p), "invalid syntax for function call expression");
            jinja_nv_push(p, &a, parse_expr(p, 1));
        }
    }
    adv(p);
    set_lists(n, a, kv);
    n->names = jinja_alloc(&p->j, (size_t)(kn.n + 1) * sizeof(char *));
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
            name = jinja_printf(&p->j, "%s.%s", name, expect_name(p));
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
        name = jinja_printf(&p->j, "%s.%s", name, expect_name(p));
    }
    n->name = name;
    tok *c = cur(p);
    if (is_op(p, "(")) parse_args(p, n);
    else if ((c->t == K_NAME || c->t == K_STR || c->t == K_INT || c->t == K_FLOAT || is_op(p, "[") || is_op(p, "{")) &&
             !is_name(p, "else") && !is_name(p, "or") && !is_name(p, "and")) {
        if (is_name(p, "is")) jinja_pfail(p, JE_SYNTAX, c, "You cannot chain multiple tests with is");
        node *arg = parse_postfix(p, parse_primary(p));
        n->v = jinja_alloc(&p->j, sizeof(node *));
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
        if (!is_op(p, ":")) { jinja_nv_push(p, &items, start); continue; }
        adv(p);
        node *sl = mk(p, E_SLICE, t);
        sl->b = start;
        if (!is_op(p, "]") && !is_op(p, ",") && !is_op(p, ":")) sl->c = parse_expr(p, 1);
        if (is_op(p, ":")) {
            adv(p);
            if (!is_op(p, "]") && !is_op(p, ",")) sl->d = parse_expr(p, 1);
        }
        jinja_nv_push(p, &items, sl);
    }
    expect_op(p, "]");
    if (items.n == 1 && items.v[0]->k == E_SLICE) {
        res = items.v[0];
        res->a = obj;
        return res;
    }
    for (int i = 0; i < items.n; i++)
        if (items.v[i]->k == E_SLICE) jinja_pfail(p, JE_UNSUPPORTED, t, "a slice inside a tuple subscript is not supported");
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
                jinja_pfail(p, JE_SYNTAX, cur(p), "expected name or number");
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
            jinja_sb_init(&b, &p->j);
            jinja_sb_put_str(&b, n->val.u.s);
            while (cur(p)->t == K_STR) jinja_sb_put_str(&b, adv(p)->val.u.s);
            n->val = jinja_sb_val(&b);
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
            jinja_nv_push(p, &v, parse_expr(p, 1));
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
            jinja_nv_push(p, &k, parse_expr(p, 1));
            expect_op(p, ":");
            jinja_nv_push(p, &v, parse_expr(p, 1));
        }
        adv(p);
        set_lists(n, k, v);
    } else {
        const char *d = describe(t);
        if (d) jinja_pfail(p, JE_SYNTAX, t, "unexpected %s", d);
        jinja_pfail(p, JE_SYNTAX, t, "unexpected '%.*s'", (int)(t->n > 20 ? 20 : t->n), t->s);
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
    jinja_nv_push(p, &v, l);
    while (is_op(p, "~")) {
        adv(p);
        jinja_nv_push(p, &v, parse_math2(p));
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
        jinja_nv_push(p, &ops, o);
        jinja_nv_push(p, &rhs, parse_math1(p));
    }
    if (!ops.n) return l;
    node *c = mk(p, E_CMP, t0);
    c->a = l;
    set_lists(c, rhs, ops);
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

/* a WORD b WORD c ..., grouped from the left: the chains of `and` and of `or`. */
static node *parse_chain(P *p, const char *word, int kind, node *(*operand)(P *))
{
    node *l = operand(p);
    while (is_name(p, word)) {
        tok *t = adv(p);
        node *n = mk(p, kind, t);
        n->a = l;
        n->b = operand(p);
        l = n;
    }
    return l;
}

static node *parse_and(P *p) { return parse_chain(p, "and", E_AND, parse_not); }

static node *parse_or(P *p) { return parse_chain(p, "or", E_OR, parse_and); }

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
        jinja_nv_push(p, &v, parse_expr(p, with_condexpr));
        if (is_op(p, ",")) is_tuple = 1;
        else break;
    }
    if (!is_tuple) {
        if (v.n) return v.v[0];
        if (!explicit_parens) {
            const char *d = describe(cur(p));
            if (d) jinja_pfail(p, JE_SYNTAX, cur(p), "Expected an expression, got '%s'", d);
            jinja_pfail(p, JE_SYNTAX, cur(p), "Expected an expression");
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
        jinja_nv_push(p, &v, n);
    }
    if (paren) expect_op(p, ")");
    if (!v.n) jinja_pfail(p, JE_SYNTAX, cur(p), "expected a name to assign to");
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
        jinja_nv_push(p, &names, nm);
        if (is_op(p, "=")) {
            adv(p);
            jinja_nv_push(p, &defs, parse_expr(p, 1));
        } else {
            if (defs.n && defs.v[defs.n - 1]) jinja_pfail(p, JE_SYNTAX, t, "non-default argument follows default argument");
            jinja_nv_push(p, &defs, NULL);
        }
    }
    adv(p);
    n->names = jinja_alloc(&p->j, (size_t)(names.n + 1) * sizeof(char *));
    for (int i = 0; i < names.n; i++) n->names[i] = names.v[i]->name;
    n->nnames = names.n;
    n->v2 = defs.v;
    n->nv2 = defs.n;
}

/* The body of a block tag up to its one closing tag `end`, and that tag. */
static node *block_body(P *p, const char *end)
{
    const char *const ends[] = {end, NULL};
    node *b = jinja_parse_body(p, ends, end);
    adv(p);
    expect_end(p);
    return b;
}

/* The end of the opening tag, then the block's body and its closing tag. */
static node *block_after(P *p, const char *end)
{
    expect_end(p);
    return block_body(p, end);
}

/* Each tag after its name: t is the name's token, n the tag's node (NULL for a tag that makes
 * none). */

static node *tag_if(P *p, tok *t, node *n)
{
    static const char *const if_ends[] = {"elif", "else", "endif", NULL};
    static const char *const endif[] = {"endif", NULL};
    (void)t;
    node *c = n;
    c->a = parse_tuple(p, 0, 0, NULL);
    expect_end(p);
    for (;;) {
        c->b = jinja_parse_body(p, if_ends, "endif");
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
            c->c = jinja_parse_body(p, endif, "endif");
        }
        break;
    }
    adv(p); /* endif */
    expect_end(p);
    return n;
}

static node *tag_for(P *p, tok *t, node *n)
{
    static const char *const for_ends[] = {"endfor", "else", NULL};
    (void)t;
    n->d = parse_target(p, "in", 0);
    if (!is_name(p, "in")) jinja_pfail(p, JE_SYNTAX, cur(p), "expected 'in'");
    adv(p);
    n->a = parse_tuple(p, 0, 0, "recursive");
    if (is_name(p, "if")) {
        adv(p);
        n->b = parse_expr(p, 1);
    }
    if (is_name(p, "recursive")) jinja_pfail(p, JE_UNSUPPORTED, cur(p), "recursive loops are not supported");
    expect_end(p);
    n->c = jinja_parse_body(p, for_ends, "endfor");
    if (is_name(p, "else")) {
        adv(p);
        expect_end(p);
        n->v = jinja_alloc(&p->j, sizeof(node *));
        n->v[0] = block_body(p, "endfor");
        n->nv = 1;
    } else {
        adv(p);
        expect_end(p);
    }
    return n;
}

static node *tag_set(P *p, tok *t, node *n)
{
    n->d = parse_target(p, NULL, 1);
    if (is_op(p, "=")) {
        adv(p);
        n->a = parse_tuple(p, 1, 0, NULL);
        expect_end(p);
        return n;
    }
    if (n->d->k != E_NAME && n->d->k != E_ATTR) jinja_pfail(p, JE_SYNTAX, t, "a block set needs a single name");
    n->k = S_SETBLOCK;
    if (is_op(p, "|")) {
        node *in = mk(p, E_BLOCKINPUT, t);
        n->a = parse_filter(p, in, 0);
    }
    n->b = block_after(p, "endset");
    return n;
}

/* The heads of the tags whose body follows (TAGS[]'s end): what stands between the name and %}. */

static node *tag_macro(P *p, tok *t, node *n)
{
    (void)t;
    n->name = expect_name(p);
    parse_params(p, n);
    return n;
}

static node *tag_call(P *p, tok *t, node *n)
{
    if (is_op(p, "(")) parse_params(p, n);
    n->a = parse_expr(p, 1);
    if (n->a->k != E_CALL) jinja_pfail(p, JE_SYNTAX, t, "expected call");
    return n;
}

static node *tag_filter(P *p, tok *t, node *n)
{
    n->a = parse_filter(p, mk(p, E_BLOCKINPUT, t), 1);
    return n;
}

static node *tag_with(P *p, tok *t, node *n)
{
    (void)t;
    nvec names = {0}, vals = {0};
    while (cur(p)->t != K_BEND) {
        if (names.n) expect_op(p, ",");
        tok *nt = cur(p);
        node *nm = mk(p, E_NAME, nt);
        nm->name = expect_name(p);
        expect_op(p, "=");
        jinja_nv_push(p, &names, nm);
        jinja_nv_push(p, &vals, parse_expr(p, 1));
    }
    set_lists(n, names, vals);
    return n;
}

static node *tag_break(P *p, tok *t, node *n)
{
    (void)t;
    expect_end(p);
    return n;
}

/* The tags a template may open, by name: the kind of node each makes (-1: none), the tag that
 * closes its body when the body simply follows its head (if, for and set read theirs
 * themselves), and the parser of what comes after the name (NULL: nothing). A tag without a
 * node is its body: transformers' {% generation %} renders what it holds as it is. */
static const struct {
    const char *name;
    int kind;
    const char *end;
    node *(*parse)(P *p, tok *t, node *n);
} TAGS[] = {
    {"if", S_IF, NULL, tag_if},
    {"for", S_FOR, NULL, tag_for},
    {"set", S_SET, NULL, tag_set},
    {"macro", S_MACRO, "endmacro", tag_macro},
    {"call", S_CALLBLOCK, "endcall", tag_call},
    {"filter", S_FILTERBLOCK, "endfilter", tag_filter},
    {"with", S_WITH, "endwith", tag_with},
    {"break", S_BREAK, NULL, tag_break},
    {"continue", S_CONTINUE, NULL, tag_break},
    {"generation", -1, "endgeneration", NULL},
};

static node *parse_stmt(P *p)
{
    tok *t = cur(p);
    if (t->t != K_NAME) jinja_pfail(p, JE_SYNTAX, t, "tag name expected");
    enter(p);
    for (size_t i = 0; i < sizeof TAGS / sizeof *TAGS; i++)
        if (is_name(p, TAGS[i].name)) {
            adv(p);
            node *n = TAGS[i].kind < 0 ? NULL : mk(p, TAGS[i].kind, t);
            if (TAGS[i].parse)
                n = TAGS[i].parse(p, t, n);
            if (TAGS[i].end) {
                node *body = block_after(p, TAGS[i].end);
                if (n)
                    n->b = body;
                else
                    n = body;
            }
            p->depth--;
            return n;
        }
    jinja_pfail(p, JE_SYNTAX, t, "Encountered unknown tag '%.*s'", (int)(t->n > 40 ? 40 : t->n), t->s);
}

node *jinja_parse_body(P *p, const char *const *ends, const char *what)
{
    node *body = mk(p, S_BODY, cur(p));
    node **tail = &body->a;
    enter(p);
    for (;;) {
        tok *t = cur(p);
        node *n = NULL;
        if (t->t == K_EOF) {
            if (ends) jinja_pfail(p, JE_SYNTAX, t, "Unexpected end of template. Jinja was looking for '%s'", what);
            break;
        }
        if (t->t == K_DATA) {
            n = mk(p, S_TEXT, t);
            n->val = jinja_v_str(&p->j, t->s, t->n);
            adv(p);
        } else if (t->t == K_VBEGIN) {
            adv(p);
            n = mk(p, S_OUT, t);
            n->a = parse_tuple(p, 1, 0, NULL);
            if (cur(p)->t != K_VEND) jinja_pfail_expected(p, cur(p), "end of print statement");
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
                        if (ends) jinja_pfail(p, JE_SYNTAX, nt, "Encountered unknown tag '%s'. Jinja was looking for '%s'", closers[i], what);
                        jinja_pfail(p, JE_SYNTAX, nt, "Encountered unknown tag '%s'", closers[i]);
                    }
            }
            adv(p);
            n = parse_stmt(p);
        } else
            jinja_pfail(p, JE_SYNTAX, t, "unexpected token");
        *tail = n;
        tail = &n->next;
    }
    p->depth--;
    return body;
}
