/* The random conversations of tools/template-goldens/conversations.py (transformers'
 * apply_chat_template on every corpus template) rendered by tokenloop's chat layer:
 *   render_conversations ROOT SHARED GOLDENS
 * A golden text must come out byte for byte. Where transformers raised, tokenloop must fail:
 * with the same exception class when Jinja2 raised it (the message too for raise_exception),
 * and in any one-line way when apply_chat_template itself refused the input (in_transformers).
 * Templates read from SHARED are skipped when it is absent. TL_CONV_SHOW=N prints N mismatches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tokenloop/template.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    if (b) b[n] = 0;
    fclose(f);
    return b;
}

/* a template's text: a .jinja file as it is, else the chat_template of a JSON file */
static char *template_text(const char *root, const char *shared, const char *src)
{
    char path[4096];
    if (!strncmp(src, "shared:", 7)) snprintf(path, sizeof path, "%s/%s", shared, src + 7);
    else snprintf(path, sizeof path, "%s/%s", root, src);
    char *raw = slurp(path);
    size_t n = strlen(path);
    if (!raw || (n > 6 && !strcmp(path + n - 6, ".jinja"))) return raw;
    cJSON *j = cJSON_Parse(raw);
    free(raw);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "chat_template");
    char *r = cJSON_IsString(t) ? strdup(t->valuestring) : NULL;
    cJSON_Delete(j);
    return r;
}

/* "template:LINE[:COL]: Class: message" -> Class */
static void error_class(const char *msg, char *out, size_t cap)
{
    const char *p = msg;
    if (!strncmp(p, "template:", 9)) {
        p += 9;
        while (*p && *p != ' ') p++;
        while (*p == ' ') p++;
    }
    const char *e = strstr(p, ": ");
    size_t n = e ? (size_t)(e - p) : 0;
    if (n >= cap) n = cap - 1;
    memcpy(out, p, n);
    out[n] = 0;
}

typedef struct {
    const char *id;
    tl_template *tpl;
    const char *bos, *eos;
    int absent;
} entry;

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: render_conversations ROOT SHARED GOLDENS\n");
        return 2;
    }
    char *raw = slurp(argv[3]);
    cJSON *g = raw ? cJSON_Parse(raw) : NULL;
    free(raw);
    if (!g) {
        fprintf(stderr, "%s: cannot read or not JSON\n", argv[3]);
        return 1;
    }
    setenv("TOKENLOOP_NOW", cJSON_GetObjectItem(g, "now")->valuestring, 1);
    const char *show_env = getenv("TL_CONV_SHOW");
    int show = show_env ? atoi(show_env) : 10;

    entry tpls[64];
    int n_tpl = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(g, "templates")) {
        if (n_tpl == 64) break;
        entry *e = &tpls[n_tpl++];
        memset(e, 0, sizeof *e);
        e->id = t->string;
        const cJSON *b = cJSON_GetObjectItem(t, "bos_token"), *s = cJSON_GetObjectItem(t, "eos_token");
        e->bos = cJSON_IsString(b) ? b->valuestring : NULL;
        e->eos = cJSON_IsString(s) ? s->valuestring : NULL;
        const char *src = cJSON_GetObjectItem(t, "source")->valuestring;
        char *text = template_text(argv[1], argv[2], src);
        tl_error err = {{0}};
        if (!text) e->absent = 1;
        else if (tl_template_compile(text, &e->tpl, &err)) fprintf(stderr, "%s: %s\n", e->id, err.msg);
        free(text);
    }

    int renders = 0, renders_ok = 0, raises = 0, class_ok = 0, refused_ok = 0, refused = 0, skipped = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(g, "cases")) {
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        const char *tid = cJSON_GetObjectItem(c, "template")->valuestring;
        entry *e = NULL;
        for (int i = 0; i < n_tpl; i++)
            if (!strcmp(tpls[i].id, tid)) e = &tpls[i];
        if (!e || e->absent) {
            skipped++;
            continue;
        }
        const char *messages = cJSON_GetObjectItem(c, "messages_json")->valuestring;
        tl_template_var vars[16];
        size_t nv = 0;
        const cJSON *v;
        cJSON_ArrayForEach(v, cJSON_GetObjectItem(c, "vars")) {
            if (nv == 16) break;
            vars[nv++] = (tl_template_var){cJSON_GetArrayItem(v, 0)->valuestring,
                                           cJSON_GetArrayItem(v, 1)->valuestring};
        }
        int agp = cJSON_IsTrue(cJSON_GetObjectItem(c, "add_generation_prompt"));
        int cont = cJSON_IsTrue(cJSON_GetObjectItem(c, "continue_final_message"));
        tl_error err = {{0}};
        tl_chat_result r = {0};
        int rc = e->tpl ? 0 : -1;
        if (!e->tpl) snprintf(err.msg, sizeof err.msg, "template did not compile");
        if (!rc) rc = tl_chat_messages_check(messages, strlen(messages), &err);
        if (!rc) {
            tl_chat_opts o = {.add_generation_prompt = agp, .continue_final_message = cont,
                              .bos_token = e->bos, .eos_token = e->eos};
            rc = tl_chat_render_opts(e->tpl, messages, vars, nv, &o, &r, &err);
        }
        const cJSON *want = cJSON_GetObjectItem(c, "text");
        int ok;
        if (cJSON_IsString(want)) {
            renders++;
            ok = rc == 0 && r.len == strlen(want->valuestring) && !memcmp(r.text, want->valuestring, r.len);
            renders_ok += ok;
            if (!ok && show-- > 0) {
                if (rc) fprintf(stderr, "%s (%s): tokenloop failed: %s\n", name, tid, err.msg);
                else {
                    size_t i = 0;
                    while (i < r.len && r.text[i] == want->valuestring[i]) i++;
                    size_t from = i > 60 ? i - 60 : 0;
                    fprintf(stderr, "%s (%s): differs at byte %zu\n  tokenloop:    %.160s\n  transformers: %.160s\n",
                            name, tid, i, r.text + from, want->valuestring + from);
                }
            }
        } else {
            const char *werr = cJSON_GetObjectItem(c, "error")->valuestring;
            int in_tf = cJSON_IsTrue(cJSON_GetObjectItem(c, "in_transformers"));
            int by_tpl = cJSON_IsTrue(cJSON_GetObjectItem(c, "raised_by_template"));
            char gc[64], wc[64];
            error_class(err.msg, gc, sizeof gc);
            error_class(werr, wc, sizeof wc);
            if (in_tf) {
                refused++;
                ok = rc != 0 && !strchr(err.msg, '\n');
                refused_ok += ok;
            } else {
                raises++;
                ok = rc != 0 && !strcmp(gc, wc) && (!by_tpl || strstr(err.msg, werr + strlen("TemplateError: ")));
                class_ok += ok;
            }
            if (!ok && show-- > 0)
                fprintf(stderr, "%s (%s): transformers raised %.200s\n  tokenloop: %s\n", name, tid, werr,
                        rc ? err.msg : "(rendered)");
        }
        tl_chat_result_free(&r);
    }
    for (int i = 0; i < n_tpl; i++) tl_template_free(tpls[i].tpl);
    cJSON_Delete(g);
    printf("conversations: %d/%d renders byte-identical, %d/%d Jinja2 errors of the same class, "
           "%d/%d inputs apply_chat_template refused also refused; %d cases skipped (template absent)\n",
           renders_ok, renders, class_ok, raises, refused_ok, refused, skipped);
    return renders_ok == renders && class_ok == raises && refused_ok == refused && renders > 0 ? 0 : 1;
}
