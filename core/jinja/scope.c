/* Compile-time scope analysis, a pass of its own after parsing because it needs the whole
 * AST. */
#include <string.h>

#include "jinja/internal.h"

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
        const char **nv = jinja_alloc(&p->j, (size_t)cap * sizeof *nv);
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
    jinja_nv_push(p, &sc->children, body);
    jinja_nv_push(p, &sc->pre, pre);
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
    const char **names = jinja_alloc(&p->j, (size_t)(sc.undef_start.n + 1) * sizeof *names);
    for (int i = 0; i < sc.undef_start.n; i++)
        if (!anc_has(&sc, sc.undef_start.v[i])) names[k++] = sc.undef_start.v[i];
    body->names = names;
    body->nnames = k;
    for (int i = 0; i < sc.children.n; i++) analyze(p, sc.children.v[i], &sc, sc.pre.v[i]);
}

void jinja_analyze_scopes(P *p, node *body) { analyze(p, body, NULL, NULL); }
