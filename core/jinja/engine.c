/* The entry points: compile a template (normalize newlines, lex, parse, analyze scopes)
 * and render it with variables given as JSON. */
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "jinja/internal.h"

struct tl_template {
    arena ar;
    node *body;
};

void tl_template_free(tl_template *tpl)
{
    if (!tpl) return;
    jinja_arena_free(&tpl->ar);
    free(tpl);
}

int tl_template_compile(const char *src, tl_template **out, tl_error *err)
{
    *out = NULL;
    if (!src) return tl_error_set(err, "template: no source");
    tl_template *tpl = calloc(1, sizeof *tpl);
    if (!tpl) return tl_error_set(err, "template: MemoryError: out of memory");
    P *p = calloc(1, sizeof *p);
    if (!p) { free(tpl); return tl_error_set(err, "template: MemoryError: out of memory"); }
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
    char *s = jinja_alloc(&p->j, n + 1);
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
    jinja_lex(p);
    p->i = 0;
    tpl->body = jinja_parse_body(p, NULL, NULL);
    jinja_analyze_scopes(p, tpl->body);
    free(p->toks);
    free(p);
    *out = tpl;
    return 0;
}

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
    if (!j) return tl_error_set(err, "template: MemoryError: out of memory");
    j->ar = &ar;
    j->err = err;
    if (setjmp(j->jb)) {
        free(*out);
        *out = NULL;
        if (spans) { free(*spans); *spans = NULL; }
        if (n_spans) *n_spans = 0;
        jinja_arena_free(&ar);
        free(j);
        return -1;
    }
    j->root = jinja_frame_new(j, NULL);
    for (size_t i = 0; i < n_vars; i++) {
        jv v = jinja_json_parse(j, vars[i].json ? vars[i].json : "null", vars[i].mark_content);
        if (vars[i].chat_messages) v = jinja_chat_prepare(j, v, vars[i].continue_tag);
        jinja_dict_set_s(j, &j->root->vars, vars[i].name, v);
    }
    jinja_bind_undef_start(j, j->root, tpl->body);
    sb o;
    jinja_sb_init(&o, j);
    jinja_exec(j, tpl->body, j->root, &o);
    char *text = malloc(o.len + 1);
    tl_span *sp = spans && o.nsp ? malloc(o.nsp * sizeof *sp) : NULL;
    if (!text || (spans && o.nsp && !sp)) {
        free(text);
        free(sp);
        jinja_fail(j, JE_MEMORY, "out of memory");
    }
    if (o.len) memcpy(text, o.p, o.len);
    text[o.len] = 0;
    if (sp) memcpy(sp, o.sp, o.nsp * sizeof *sp);
    *out = text;
    if (out_len) *out_len = o.len;
    if (spans) *spans = sp;
    if (n_spans) *n_spans = spans ? o.nsp : 0;
    jinja_arena_free(&ar);
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
    if (!vars) return tl_error_set(err, "template: MemoryError: out of memory");
    size_t k = 0;
    int rc = 0;
    if (context) cJSON_ArrayForEach(it, context) {
        vars[k].name = it->string;
        vars[k].json = cJSON_PrintUnformatted(it);
        if (!vars[k].json) rc = tl_error_set(err, "template: MemoryError: out of memory");
        k++;
    }
    if (!rc) rc = tl_jinja_render_vars(tpl, vars, n, out, out_len, NULL, NULL, err);
    for (size_t i = 0; i < k; i++) cJSON_free((void *)vars[i].json);
    free(vars);
    return rc;
}
