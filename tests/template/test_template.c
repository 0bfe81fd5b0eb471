/* Chat template tests against Python Jinja2 renders (committed goldens made by
 * tools/template-goldens/render.py) and ../shared/conformance/chat-goldens.
 *   test_template goldens ROOT SHARED   every template x message set x add_generation_prompt
 *   test_template micro ROOT [FILE]     the hand-written feature templates (or FILE's)
 * A render that fails in Jinja2 must fail here with the same exception class (and message, for
 * raise_exception); TL_TEMPLATE_SHOW_TEXT=1 lists those whose message is worded otherwise.
 *   test_template shared SHARED [ROOT]  llama.cpp's Jinja2 renders (exit 77 when absent)
 *   test_template errors                syntax errors, limits, the chat config loader
 *   test_template fuzz ROOT [N]         mutated real templates: no crash, no hang */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "tl_test.h"
#include "tokenloop/template.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); b = NULL; }
    if (b) b[n] = 0;
    fclose(f);
    return b;
}

static cJSON *load_json(const char *path)
{
    char *s = slurp(path);
    if (!s) { fprintf(stderr, "%s: cannot read\n", path); exit(1); }
    cJSON *j = cJSON_Parse(s);
    free(s);
    if (!j) { fprintf(stderr, "%s: bad JSON\n", path); exit(1); }
    return j;
}

static void show_diff(const char *what, const char *got, const char *want)
{
    size_t i = 0;
    while (got[i] && got[i] == want[i]) i++;
    size_t from = i > 40 ? i - 40 : 0;
    fprintf(stderr, "%s: differs at byte %zu\n  got:  \"%.80s\"\n  want: \"%.80s\"\n", what, i, got + from, want + from);
}

/* the template text behind a golden's "source" */
static char *template_source(const char *root, const char *shared, const char *src)
{
    char path[4096];
    if (!strncmp(src, "shared:", 7)) {
        snprintf(path, sizeof path, "%s/%s", shared, src + 7);
        return slurp(path);
    }
    snprintf(path, sizeof path, "%s/%s", root, src);
    cJSON *j = load_json(path);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "chat_template");
    char *r = cJSON_IsString(t) ? strdup(t->valuestring) : NULL;
    cJSON_Delete(j);
    return r;
}

/* every span lies inside the text and its bytes occur in the message contents (strings and the
 * "text" of content parts, concatenated in order: adjacent spans merge) */
static void content_text(const cJSON *v, char **acc, size_t *len)
{
    if (cJSON_IsString(v)) {
        size_t k = strlen(v->valuestring);
        *acc = realloc(*acc, *len + k + 1);
        memcpy(*acc + *len, v->valuestring, k + 1);
        *len += k;
    } else if (cJSON_IsArray(v)) {
        const cJSON *p;
        cJSON_ArrayForEach(p, v) content_text(cJSON_GetObjectItemCaseSensitive(p, "text"), acc, len);
    }
}

static int spans_ok(const tl_chat_result *r, const cJSON *messages)
{
    char *hay = calloc(1, 1);
    size_t hl = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, messages) content_text(cJSON_GetObjectItemCaseSensitive(m, "content"), &hay, &hl);
    size_t prev = 0;
    int ok = 1;
    for (size_t i = 0; i < r->n_spans && ok; i++) {
        tl_span s = r->spans[i];
        if (s.start >= s.end || s.end > r->len || s.start < prev) { ok = 0; break; }
        prev = s.end;
        char *needle = strndup(r->text + s.start, s.end - s.start);
        ok = strstr(hay, needle) != NULL;
        if (!ok) { /* spans of two contents that ended up adjacent merge: a subsequence then */
            const char *h = hay;
            size_t k = 0, nl = strlen(needle);
            for (; *h && k < nl; h++)
                if (*h == needle[k]) k++;
            ok = k == nl;
        }
        free(needle);
    }
    free(hay);
    return ok;
}

/* The exception class of an error: tokenloop's "template:LINE[:COL]: Class: message", or a
 * golden's "Class: message" (Jinja2's type(e).__name__) */
static const char *err_class(const char *msg, char *out, size_t cap)
{
    const char *p = msg;
    if (!strncmp(p, "template:", 9)) {
        p += 9;
        while (*p && *p != ' ') p++;   /* LINE: or LINE:COL: */
        while (*p == ' ') p++;
    }
    const char *e = strstr(p, ": ");
    size_t n = e ? (size_t)(e - p) : 0;
    if (n >= cap) n = cap - 1;
    memcpy(out, p, n);
    out[n] = 0;
    return e ? e + 2 : p;
}

/* A failure both sides agree on: tokenloop fails too, names the class Jinja2 raised, and where
 * the template called raise_exception (transformers' TemplateError), says its message exactly.
 * *same_class counts the class matches, *same_text those whose message is Jinja2's too. */
static int both_fail_ok(int rc, const char *got, const cJSON *r, int *same_class, int *same_text)
{
    const char *want = cJSON_GetObjectItem(r, "error")->valuestring;
    int raised = cJSON_IsTrue(cJSON_GetObjectItem(r, "raised"));
    if (!rc) return 0;
    char gc[64], wc[64];
    const char *gm = err_class(got, gc, sizeof gc);
    if (raised) snprintf(wc, sizeof wc, "TemplateError");
    else err_class(want, wc, sizeof wc);
    int cls = !strcmp(gc, wc);
    *same_class += cls;
    *same_text += cls && !strcmp(gm, raised ? want : err_class(want, wc, sizeof wc));
    if (getenv("TL_TEMPLATE_SHOW_TEXT") && cls && strcmp(gm, raised ? want : err_class(want, wc, sizeof wc)))
        fprintf(stderr, "message: got \"%s\", Jinja2 \"%s\"\n", got, want);
    return cls && (!raised || !strcmp(gm, want));
}

static int run_goldens(const char *root, const char *shared)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/template/goldens.json", root);
    cJSON *g = load_json(path);
    snprintf(path, sizeof path, "%s/tools/template-goldens/cases.json", root);
    cJSON *cases = load_json(path);
    setenv("TOKENLOOP_NOW", cJSON_GetObjectItem(g, "now")->valuestring, 1);
    int texts = 0, same = 0, errors = 0, errors_same = 0, class_same = 0, text_same = 0, skipped = 0, with_spans = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(g, "renders")) {
        const char *tid = cJSON_GetObjectItem(r, "template")->valuestring;
        const char *cname = cJSON_GetObjectItem(r, "case")->valuestring;
        int agp = cJSON_IsTrue(cJSON_GetObjectItem(r, "add_generation_prompt"));
        char *src = template_source(root, shared, cJSON_GetObjectItem(r, "source")->valuestring);
        if (!src) { skipped++; continue; }
        const cJSON *c = NULL, *it;
        cJSON_ArrayForEach(it, cases)
            if (!strcmp(cJSON_GetObjectItem(it, "name")->valuestring, cname)) c = it;
        TL_CHECK_MSG(c != NULL, "case %s", cname);
        if (!c) { free(src); continue; }
        const cJSON *msgs = cJSON_GetObjectItem(c, "messages");
        char *mjson = cJSON_PrintUnformatted(msgs);
        tl_template_var vars[16];
        char *vjson[16];
        size_t nv = 0;
        const cJSON *vs = cJSON_GetObjectItem(c, "vars");
        cJSON_ArrayForEach(it, vs) {
            if (nv == 16) break;
            vjson[nv] = cJSON_PrintUnformatted(it);
            vars[nv].name = it->string;
            vars[nv].json = vjson[nv];
            nv++;
        }
        /* bos/eos as the goldens used them: from the template's own config */
        const char *bos = NULL, *eos = NULL;
        cJSON *cfg = NULL;
        const char *s = cJSON_GetObjectItem(r, "source")->valuestring;
        if (strncmp(s, "shared:", 7)) {
            snprintf(path, sizeof path, "%s/%s", root, s);
            cfg = load_json(path);
        } else {
            snprintf(path, sizeof path, "%s/assets/tokenizer/tokenizer_config.json", root);
            cfg = load_json(path);
        }
        const cJSON *b = cJSON_GetObjectItem(cfg, "bos_token"), *e = cJSON_GetObjectItem(cfg, "eos_token");
        if (cJSON_IsObject(b)) b = cJSON_GetObjectItem(b, "content");
        if (cJSON_IsObject(e)) e = cJSON_GetObjectItem(e, "content");
        bos = cJSON_IsString(b) ? b->valuestring : NULL;
        eos = cJSON_IsString(e) ? e->valuestring : NULL;

        tl_error err = {{0}};
        tl_template *t = NULL;
        tl_chat_result res = {0};
        int rc = tl_template_compile(src, &t, &err);
        if (!rc) rc = tl_chat_render(t, mjson, vars, nv, agp, bos, eos, &res, &err);
        const cJSON *want = cJSON_GetObjectItem(r, "text");
        char what[256];
        snprintf(what, sizeof what, "%s / %s / agp=%d", tid, cname, agp);
        if (cJSON_IsString(want)) {
            texts++;
            int ok = !rc && strlen(want->valuestring) == res.len && !memcmp(res.text, want->valuestring, res.len);
            if (ok) same++;
            else if (rc) fprintf(stderr, "%s: error: %s\n", what, err.msg);
            else show_diff(what, res.text, want->valuestring);
            TL_CHECK_MSG(ok, "%s", what);
            if (!rc) {
                TL_CHECK_MSG(spans_ok(&res, msgs), "%s: content spans", what);
                if (res.n_spans) with_spans++;
            }
        } else {
            errors++;
            int ok = both_fail_ok(rc, err.msg, r, &class_same, &text_same);
            if (ok) errors_same++;
            else fprintf(stderr, "%s: want error \"%s\", got %s \"%s\"\n", what,
                         cJSON_GetObjectItem(r, "error")->valuestring, rc ? "error" : "text", rc ? err.msg : res.text);
            TL_CHECK_MSG(ok, "%s", what);
        }
        tl_chat_result_free(&res);
        tl_template_free(t);
        cJSON_Delete(cfg);
        for (size_t i = 0; i < nv; i++) cJSON_free(vjson[i]);
        cJSON_free(mjson);
        free(src);
    }
    printf("template goldens: %d/%d renders byte-identical to Jinja2, %d/%d errors matched "
           "(%d with Jinja2's exception class, %d with its message too; raise_exception messages "
           "exactly), %d skipped (../shared absent), %d with content spans\n",
           same, texts, errors_same, errors, class_same, text_same, skipped, with_spans);
    TL_CHECK(texts > 0);
    cJSON_Delete(g);
    cJSON_Delete(cases);
    return TL_TEST_END("template_goldens");
}

static int run_micro(const char *root, const char *file)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/template/%s", root, file);
    cJSON *g = load_json(path);
    const cJSON *shared_ctx = cJSON_GetObjectItem(g, "context"); /* when the renders share one */
    setenv("TOKENLOOP_NOW", cJSON_GetObjectItem(g, "now")->valuestring, 1);
    int n = 0, same = 0, errors = 0, class_same = 0, text_same = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(g, "renders")) {
        const char *name = cJSON_GetObjectItem(r, "name")->valuestring;
        tl_error err = {{0}};
        tl_template *t = NULL;
        char *out = NULL;
        size_t len = 0;
        int rc = tl_template_compile(cJSON_GetObjectItem(r, "template")->valuestring, &t, &err);
        const cJSON *ctx = cJSON_GetObjectItem(r, "context");
        if (!rc) rc = tl_template_render(t, ctx ? ctx : shared_ctx, &out, &len, &err);
        const cJSON *want = cJSON_GetObjectItem(r, "text");
        n++;
        if (cJSON_IsString(want)) {
            int ok = !rc && len == strlen(want->valuestring) && !memcmp(out, want->valuestring, len);
            if (!ok && rc) fprintf(stderr, "%s: error: %s\n", name, err.msg);
            else if (!ok) show_diff(name, out, want->valuestring);
            same += ok;
            TL_CHECK_MSG(ok, "%s", name);
        } else {
            errors++;
            int ok = both_fail_ok(rc, err.msg, r, &class_same, &text_same);
            if (!ok) fprintf(stderr, "%s: want error \"%s\", got %s \"%s\"\n", name,
                             cJSON_GetObjectItem(r, "error")->valuestring, rc ? "error" : "text", rc ? err.msg : out);
            same += ok;
            TL_CHECK_MSG(ok, "%s", name);
        }
        free(out);
        tl_template_free(t);
    }
    printf("%s: %d/%d templates match Jinja2 (%d/%d errors with Jinja2's exception class, %d with its "
           "message too)\n", file, same, n, class_same, errors, text_same);
    cJSON_Delete(g);
    return TL_TEST_END(file);
}

static int run_shared(const char *shared, const char *root)
{
    static const char *const tpls[] = {"meta-llama-Llama-3.2-3B-Instruct"};
    static const char *const ctxs[] = {"simple", "system"};
    char path[4096];
    snprintf(path, sizeof path, "%s/conformance/chat-goldens", shared);
    if (access(path, R_OK)) { printf("template_shared: %s absent, skipped\n", path); return 77; }
    for (size_t i = 0; i < 1; i++)
        for (size_t k = 0; k < 2; k++) {
            snprintf(path, sizeof path, "%s/conformance/templates/%s.jinja", shared, tpls[i]);
            char *src = slurp(path);
            snprintf(path, sizeof path, "%s/conformance/chat-goldens/contexts-%s.json", shared, ctxs[k]);
            cJSON *ctx = load_json(path);
            snprintf(path, sizeof path, "%s/conformance/chat-goldens/%s-%s.txt", shared, tpls[i], ctxs[k]);
            char *want = slurp(path);
            TL_CHECK(src && want);
            if (!src || !want) { free(src); free(want); cJSON_Delete(ctx); continue; }
            /* those renders ran without strftime_now, so the template fell back to its default date */
            cJSON_AddStringToObject(ctx, "date_string", "26 Jul 2024");
            tl_error err = {{0}};
            tl_template *t = NULL;
            char *out = NULL;
            size_t len = 0;
            int rc = tl_template_compile(src, &t, &err);
            if (!rc) rc = tl_template_render(t, ctx, &out, &len, &err);
            TL_CHECK_MSG(!rc, "%s", err.msg);
            TL_CHECK_MSG(out && !strcmp(out, want), "%s %s", tpls[i], ctxs[k]);
            if (out && strcmp(out, want)) show_diff(ctxs[k], out, want);
            free(out);
            free(want);
            free(src);
            tl_template_free(t);
            cJSON_Delete(ctx);
        }
    /* the tool_use render: its context was not kept; tool_use_context.json rebuilds it (Jinja2
     * renders it to that file byte for byte) */
    if (root) {
        snprintf(path, sizeof path, "%s/conformance/templates/meta-llama-Llama-3.1-8B-Instruct.jinja", shared);
        char *src = slurp(path);
        snprintf(path, sizeof path, "%s/tests/template/tool_use_context.json", root);
        cJSON *ctx = load_json(path);
        snprintf(path, sizeof path, "%s/conformance/chat-goldens/meta-llama-Meta-Llama-3.1-8B-Instruct-tool_use.txt", shared);
        char *want = slurp(path);
        TL_CHECK(src && want);
        tl_error err = {{0}};
        tl_template *t = NULL;
        char *out = NULL;
        size_t len = 0;
        int rc = src ? tl_template_compile(src, &t, &err) : -1;
        if (!rc) rc = tl_template_render(t, ctx, &out, &len, &err);
        TL_CHECK_MSG(!rc, "%s", err.msg);
        TL_CHECK_MSG(out && want && !strcmp(out, want), "Llama 3.1 tool_use");
        if (out && want && strcmp(out, want)) show_diff("tool_use", out, want);
        free(out);
        free(want);
        free(src);
        tl_template_free(t);
        cJSON_Delete(ctx);
    }
    return TL_TEST_END("template_shared");
}

static void expect_error(const char *src, const char *ctx_json, const char *needle)
{
    tl_error err = {{0}};
    tl_template *t = NULL;
    char *out = NULL;
    cJSON *ctx = ctx_json ? cJSON_Parse(ctx_json) : NULL;
    int rc = tl_template_compile(src, &t, &err);
    if (!rc) rc = tl_template_render(t, ctx, &out, NULL, &err);
    TL_CHECK_MSG(rc != 0 && strstr(err.msg, needle), "%s: got rc=%d \"%s\", want \"%s\"", src, rc, rc ? err.msg : out, needle);
    free(out);
    tl_template_free(t);
    cJSON_Delete(ctx);
}

static int run_errors(void)
{
    /* syntax errors name line:column and the offending text */
    expect_error("Hello\n  {% if x %}\n{{ a + }}", NULL, "template:3:8: TemplateSyntaxError: unexpected end of print statement near '}}'");
    expect_error("{% for x in y %}{{ x }}", NULL, "template:1:24: TemplateSyntaxError: Unexpected end of template. Jinja was looking for 'endfor'");
    expect_error("line one\n{% frobnicate %}", NULL, "template:2:4: TemplateSyntaxError: Encountered unknown tag 'frobnicate' near 'frobnicate'");
    expect_error("{{ 'unterminated }}", NULL, "template:1:4: TemplateSyntaxError: unexpected char ' (an unterminated string)");
    expect_error("{{ (1, 2] }}", NULL, "template:1:9: TemplateSyntaxError: unexpected ']', expected ')'");
    expect_error("{# never closed", NULL, "missing end of comment tag");
    expect_error("{% endif %}", NULL, "Encountered unknown tag 'endif'");
    expect_error("{{ x ! y }}", NULL, "template:1:6: TemplateSyntaxError: unexpected char near '!'");
    expect_error("{{ x | nosuch }}", NULL, "template:1: TemplateAssertionError: No filter named 'nosuch'.");
    expect_error("{{ x is nosuch }}", NULL, "template:1: TemplateAssertionError: No test named 'nosuch'.");
    /* raise_exception: transformers' TemplateError with the template's message */
    expect_error("\n{{ raise_exception('Only user and assistant roles are supported!') }}", NULL,
                 "template:2: TemplateError: Only user and assistant roles are supported!");
    /* Jinja2's default Undefined errors where it is used */
    expect_error("{{ foo.bar }}", NULL, "template:1: UndefinedError: 'foo' is undefined");
    expect_error("{{ foo + 1 }}", NULL, "'foo' is undefined");
    expect_error("{{ m.missing.x }}", "{\"m\": {}}", "UndefinedError: 'dict object' has no attribute 'missing'");
    expect_error("{{ foo() }}", NULL, "'foo' is undefined");
    expect_error("{{ 1 / 0 }}", NULL, "ZeroDivisionError: division by zero");
    expect_error("{{ x | tojson }}", NULL, "TypeError: Object of type Undefined is not JSON serializable");
    /* bounds: recursion, loop iterations, output size, nesting */
    expect_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", NULL, "RecursionError: maximum recursion depth exceeded");
    expect_error("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}", NULL, "tokenloop limit: too many loop iterations");
    expect_error("{% set s = namespace(x='ab') %}{% for i in range(40) %}{% set s.x = s.x ~ s.x %}{% endfor %}{{ s.x }}", NULL, "tokenloop limit: output too long");
    expect_error("{{ 'x' * 1000000000 }}", NULL, "tokenloop limit: output too long");
    expect_error("{{ range(10000000) }}", NULL, "OverflowError: Range too big");
    {
        char deep[5000];
        size_t k = 0;
        k += (size_t)snprintf(deep, sizeof deep, "{{ ");
        for (int i = 0; i < 1000; i++) deep[k++] = '(';
        deep[k++] = '1';
        for (int i = 0; i < 1000; i++) deep[k++] = ')';
        snprintf(deep + k, sizeof deep - k, " }}");
        expect_error(deep, NULL, "RecursionError: brackets nested too deeply");
    }
    /* the immutable sandbox refuses to modify lists and dicts */
    expect_error("{% set l = [1] %}{{ l.append(2) }}", NULL, "SecurityError: access to attribute 'append' of 'list' object is unsafe.");

    /* provenance: bytes of the render that came from message content */
    {
        tl_template *t = NULL;
        tl_error err = {{0}};
        TL_CHECK(!tl_template_compile("{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}|{{ 'x' + m.content[1:3] }}{% endfor %}", &t, &err));
        tl_chat_result r = {0};
        TL_CHECK(!tl_chat_render(t, "[{\"role\":\"user\",\"content\":\" hello \"}]", NULL, 0, 0, NULL, NULL, &r, &err));
        TL_CHECK_STR(r.text, "<user>hello|xhe");
        TL_CHECK_INT(r.n_spans, 2);
        if (r.n_spans == 2) {
            TL_CHECK_INT(r.spans[0].start, 6);
            TL_CHECK_INT(r.spans[0].end, 11);
            TL_CHECK_INT(r.spans[1].start, 13);
            TL_CHECK_INT(r.spans[1].end, 15);
        }
        tl_chat_result_free(&r);
        /* a bad messages document is an error, not a crash */
        TL_CHECK(tl_chat_render(t, "[{\"role\": ", NULL, 0, 0, NULL, NULL, &r, &err) != 0);
        TL_CHECK(strstr(err.msg, "JSONDecodeError: bad JSON") != NULL);
        tl_template_free(t);
    }
    /* JSON numbers past 64 bits are Python ints: exact (the expected text is Jinja2's) */
    {
        tl_template *t = NULL;
        tl_error err = {{0}};
        TL_CHECK(!tl_template_compile("{{ args.id }} {{ args.id + 1 }} {{ args.neg < -9223372036854775808 }} {{ args.f }} {{ args }} {{ args|tojson }}", &t, &err));
        tl_template_var v = {"args", "{\"id\": 12345678901234567890, \"neg\": -98765432109876543210, "
                                     "\"f\": 1.00000000000000000000000000000000000000000000000000000000000000000001}"};
        tl_chat_result r = {0};
        TL_CHECK_MSG(!tl_chat_render(t, "[]", &v, 1, 0, NULL, NULL, &r, &err), "%s", err.msg);
        TL_CHECK_STR(r.text ? r.text : "", "12345678901234567890 12345678901234567891 True 1.0 "
                     "{'id': 12345678901234567890, 'neg': -98765432109876543210, 'f': 1.0} "
                     "{\"id\": 12345678901234567890, \"neg\": -98765432109876543210, \"f\": 1.0}");
        tl_chat_result_free(&r);
        tl_template_free(t);
    }
    /* the config loader: a string, a list of named templates, token objects */
    {
        char dir[] = "/tmp/tl_template_cfgXXXXXX";
        TL_CHECK(mkdtemp(dir) != NULL);
        char path[256];
        snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
        FILE *f = fopen(path, "w");
        fputs("{\"bos_token\": {\"content\": \"<s>\"}, \"eos_token\": \"</s>\", \"chat_template\": "
              "[{\"name\": \"tool_use\", \"template\": \"T\"}, {\"name\": \"default\", \"template\": \"{{ bos_token }}D\"}]}", f);
        fclose(f);
        tl_chat_config cfg;
        tl_error err = {{0}};
        TL_CHECK(!tl_chat_config_load(dir, &cfg, &err));
        TL_CHECK_STR(cfg.template_src, "{{ bos_token }}D");
        TL_CHECK_STR(cfg.bos_token, "<s>");
        TL_CHECK_STR(cfg.eos_token, "</s>");
        tl_chat_config_free(&cfg);
        f = fopen(path, "w");
        fputs("{\"chat_template\": 3}", f);
        fclose(f);
        TL_CHECK(tl_chat_config_load(dir, &cfg, &err) != 0);
        TL_CHECK(strstr(err.msg, "no chat_template") != NULL);
        unlink(path);
        TL_CHECK(tl_chat_config_load(dir, &cfg, &err) != 0);
        TL_CHECK(strstr(err.msg, "cannot open") != NULL);
        rmdir(dir);
    }
    return TL_TEST_END("template_errors");
}

/* Deterministic mutations of real templates (and the goldens' message sets): whatever the
 * result, compile and render must return, under ASan in the sanitizer build. */
static int run_fuzz(const char *root, int iters)
{
    static const char *const bases[] = {"assets/tokenizer/tokenizer_config.json",
        "tools/template-goldens/templates/qwen3.json", "tools/template-goldens/templates/gemma3.json",
        "tools/template-goldens/templates/deepseek-v3.json"};
    static const char *const frags[] = {"{{", "}}", "{%", "%}", "{#", "#}", "-", "(", ")", "[", "]", "'", "\"", "|", ".", "loop", " if ", " for ", "endfor", "endif", "\n", "~", "*", "**", "[::-1]", "|tojson(indent=2)", "namespace(", "{% set x = x ~ x %}", "{{ messages }}"};
    const char *msgs = "[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\",\"content\":\"u <|eot_id|>\"},{\"role\":\"assistant\",\"content\":\"a\"}]";
    int rendered = 0, failed = 0;
    for (int bi = 0; bi < 4; bi++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", root, bases[bi]);
        cJSON *cfg = load_json(path);
        const char *base = cJSON_GetObjectItem(cfg, "chat_template")->valuestring;
        size_t n = strlen(base);
        unsigned long long seed = 0x9E3779B97F4A7C15ull + (unsigned long long)bi;
        for (int it = 0; it < iters; it++) {
            char *s = malloc(n + 4096);
            memcpy(s, base, n + 1);
            size_t len = n;
            int edits = 1 + it % 4;
            for (int e = 0; e < edits; e++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                size_t at = (size_t)(seed >> 33) % (len + 1);
                int op = (int)((seed >> 20) % 3);
                if (op == 0 && len > 0) { /* delete a few bytes */
                    size_t k = 1 + (seed >> 8) % 8;
                    if (at + k > len) k = len - at;
                    memmove(s + at, s + at + k, len - at - k + 1);
                    len -= k;
                } else { /* insert a fragment */
                    const char *fr = frags[(seed >> 12) % (sizeof frags / sizeof frags[0])];
                    size_t k = strlen(fr);
                    memmove(s + at + k, s + at, len - at + 1);
                    memcpy(s + at, fr, k);
                    len += k;
                }
            }
            tl_template *t = NULL;
            tl_error err = {{0}};
            tl_chat_result r = {0};
            if (!tl_template_compile(s, &t, &err) &&
                !tl_chat_render(t, msgs, NULL, 0, it & 1, "<|begin_of_text|>", NULL, &r, &err))
                rendered++;
            else
                failed++;
            TL_CHECK(err.msg[sizeof err.msg - 1] == 0);
            tl_chat_result_free(&r);
            tl_template_free(t);
            free(s);
        }
        cJSON_Delete(cfg);
    }
    printf("template fuzz: %d mutated templates, %d rendered, %d refused with an error\n", 4 * iters, rendered, failed);
    TL_CHECK(rendered > 0 && failed > 0);
    return TL_TEST_END("template_fuzz");
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "goldens")) return run_goldens(argv[2], argv[3]);
    if (argc >= 3 && !strcmp(argv[1], "micro")) return run_micro(argv[2], argc >= 4 ? argv[3] : "micro-goldens.json");
    if (argc >= 3 && !strcmp(argv[1], "shared")) return run_shared(argv[2], argc >= 4 ? argv[3] : NULL);
    if (argc >= 2 && !strcmp(argv[1], "errors")) return run_errors();
    if (argc >= 3 && !strcmp(argv[1], "fuzz")) return run_fuzz(argv[2], argc >= 4 ? atoi(argv[3]) : 150);
    fprintf(stderr, "usage: test_template goldens ROOT SHARED | micro ROOT [FILE] | shared SHARED [ROOT] | errors | fuzz ROOT [N]\n");
    return 2;
}
