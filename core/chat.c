/* The chat layer over the Jinja engine: apply_chat_template's variables, and the template and
 * special tokens of a model directory's tokenizer_config.json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jinja/jinja.h"
#include "tokenloop/template.h"
#include "tokenloop/file.h"
#include "gguf.h"
#include "model_priv.h"

static char *json_string(const char *s)
{
    cJSON *x = cJSON_CreateString(s);
    if (!x) return NULL;
    char *r = cJSON_PrintUnformatted(x);
    cJSON_Delete(x);
    return r;
}

/* transformers' marker for continue_final_message (utils/chat_template_utils.py) */
static const char CONTINUE_TAG[] = "CONTINUE_FINAL_MESSAGE_TAG ";

/* The final message's text as transformers takes it for continue_final_message: its content
 * string, or the "text" of its last part that has one (the engine checks the types). */
static char *final_text(const char *messages_json)
{
    cJSON *m = cJSON_Parse(messages_json);
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(m, cJSON_GetArraySize(m) - 1), "content");
    char *r = NULL;
    if (cJSON_IsString(c)) r = strdup(c->valuestring);
    for (int k = cJSON_IsArray(c) ? cJSON_GetArraySize(c) : 0; k-- > 0 && !r;) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(c, k), "text");
        if (cJSON_IsString(t)) r = strdup(t->valuestring);
    }
    cJSON_Delete(m);
    return r;
}

static const char *memfind_last(const char *h, size_t hn, const char *nd, size_t nn)
{
    for (size_t i = hn >= nn ? hn - nn + 1 : 0; i-- > 0;)
        if (!memcmp(h + i, nd, nn)) return h + i;
    return NULL;
}

/* After the render: the final message and the marker must both be there (a template may drop
 * or reshape the text); the render ends where the marker begins, less the whitespace a
 * template's trim took from after the marker's own space. */
static int cut_at_tag(tl_chat_result *out, const char *messages_json, tl_error *err)
{
    char *fm = final_text(messages_json);
    if (!fm) return tl_error_set(err, "template: out of memory");
    size_t fl = strlen(fm), a = jinja_ws_fwd(fm, 0, fl);
    size_t b = jinja_ws_back(fm, a, fl);
    size_t tag_len = sizeof CONTINUE_TAG - 2;   /* without its trailing space, as .strip() */
    const char *tag = memfind_last(out->text, out->len, CONTINUE_TAG, tag_len);
    int found = (b == a || memfind_last(out->text, out->len, fm + a, b - a)) && tag;
    free(fm);
    if (!found)
        return tl_error_set(err, "template: ValueError: continue_final_message is set but the final message does not "
                                 "appear in the chat after applying the chat template");
    size_t at = (size_t)(tag - out->text);
    if (!(at + tag_len < out->len && out->text[at + tag_len] == ' ')) at = jinja_ws_back(out->text, 0, at);
    out->len = at;
    out->text[at] = 0;
    size_t k = 0;
    for (size_t i = 0; i < out->n_spans; i++) {
        if (out->spans[i].start >= at) continue;
        out->spans[k] = out->spans[i];
        if (out->spans[k].end > at) out->spans[k].end = at;
        k++;
    }
    out->n_spans = k;
    return 0;
}

int tl_chat_render_opts(const tl_template *tpl, const char *messages_json, const tl_template_var *vars,
                        size_t n_vars, const tl_chat_opts *o, tl_chat_result *out, tl_error *err)
{
    memset(out, 0, sizeof *out);
    if (!tpl) return tl_error_set(err, "template: no template");
    static const tl_chat_opts none;
    if (!o) o = &none;
    if (o->continue_final_message && o->add_generation_prompt)
        return tl_error_set(err, "template: ValueError: continue_final_message and add_generation_prompt are not "
                                 "compatible (one continues the final message, the other opens a new one)");
    size_t cap = n_vars + 6, n = 0;
    tl_jinja_var *v = calloc(cap, sizeof *v);
    char *bos = o->bos_token ? json_string(o->bos_token) : NULL;
    char *eos = o->eos_token ? json_string(o->eos_token) : NULL;
    const char *tag = o->continue_final_message ? CONTINUE_TAG : NULL;
    const char *msgs = messages_json ? messages_json : "[]";
    int rc;
    if (!v || (o->bos_token && !bos) || (o->eos_token && !eos)) {
        rc = tl_error_set(err, "template: out of memory");
        goto done;
    }
    /* transformers: render(messages=..., tools=None, documents=None, add_generation_prompt=...,
     * **special_tokens_map, **kwargs) */
    v[n++] = (tl_jinja_var){"messages", msgs, 1, 1, tag};
    v[n++] = (tl_jinja_var){"tools", "null", 0, 0, NULL};
    v[n++] = (tl_jinja_var){"documents", "null", 0, 0, NULL};
    v[n++] = (tl_jinja_var){"add_generation_prompt", o->add_generation_prompt ? "true" : "false", 0, 0, NULL};
    if (bos) v[n++] = (tl_jinja_var){"bos_token", bos, 0, 0, NULL};
    if (eos) v[n++] = (tl_jinja_var){"eos_token", eos, 0, 0, NULL};
    for (size_t i = 0; i < n_vars; i++) {
        if (!vars[i].name || !vars[i].json) {
            rc = tl_error_set(err, "template: variable %zu has no name or value", i);
            goto done;
        }
        int is_msgs = !strcmp(vars[i].name, "messages");
        if (is_msgs) msgs = vars[i].json;
        v[n++] = (tl_jinja_var){vars[i].name, vars[i].json, is_msgs, is_msgs, is_msgs ? tag : NULL};
    }
    rc = tl_jinja_render_vars(tpl, v, n, &out->text, &out->len, &out->spans, &out->n_spans, err);
    if (!rc && tag && (rc = cut_at_tag(out, msgs, err))) tl_chat_result_free(out);
done:
    free(v);
    cJSON_free(bos);
    cJSON_free(eos);
    return rc;
}

int tl_chat_render(const tl_template *tpl, const char *messages_json,
                   const tl_template_var *vars, size_t n_vars, int add_generation_prompt,
                   const char *bos_token, const char *eos_token, tl_chat_result *out,
                   tl_error *err)
{
    tl_chat_opts o = {.add_generation_prompt = add_generation_prompt, .bos_token = bos_token,
                      .eos_token = eos_token};
    return tl_chat_render_opts(tpl, messages_json, vars, n_vars, &o, out, err);
}

void tl_chat_result_free(tl_chat_result *r)
{
    if (!r) return;
    free(r->text);
    free(r->spans);
    memset(r, 0, sizeof *r);
}


static char *token_text(const cJSON *t)
{
    if (cJSON_IsString(t)) return strdup(t->valuestring);
    if (cJSON_IsObject(t)) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(t, "content");
        if (cJSON_IsString(c)) return strdup(c->valuestring);
    }
    return NULL;
}

/* Offset of the first "\u0000" escape in JSON text (one whose backslash is not itself escaped),
 * or -1. cJSON turns it into a NUL byte inside a C string, which cuts the string there. */
static long nul_escape(const char *t)
{
    for (const char *p = t; (p = strstr(p, "\\u0000")); p++) {
        size_t back = 0;
        while (p - back > t && p[-1 - (long)back] == '\\') back++;
        if (back % 2 == 0)
            return (long)(p - t);
    }
    return -1;
}

int tl_chat_config_load(const char *model_dir, tl_chat_config *out, tl_error *err)
{
    memset(out, 0, sizeof *out);
    if (tl_model_is_gguf(model_dir))   /* a GGUF file: tokenizer.chat_template and the token ids */
        return tl_gguf_chat_config(model_dir, &out->template_src, &out->bos_token, &out->eos_token, err);
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", model_dir);
    char *text;
    tl_file_read_text(path, 64u << 20, &text, NULL, err);
    if (!text) return -1;
    long nul = nul_escape(text);
    if (nul >= 0) {
        free(text);
        return tl_error_set(err, "%s: a \\u0000 escape (a NUL) at offset %ld: a string here cannot hold one", path, nul);
    }
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return tl_error_set(err, "%s: not a JSON object", path);
    }
    const cJSON *ct = cJSON_GetObjectItemCaseSensitive(root, "chat_template");
    if (cJSON_IsString(ct))
        out->template_src = strdup(ct->valuestring);
    else if (cJSON_IsArray(ct)) {
        const cJSON *it;
        cJSON_ArrayForEach(it, ct) {
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "name");
            const cJSON *tpl = cJSON_GetObjectItemCaseSensitive(it, "template");
            if (cJSON_IsString(name) && cJSON_IsString(tpl) && !strcmp(name->valuestring, "default"))
                out->template_src = strdup(tpl->valuestring);
        }
        if (!out->template_src) {
            cJSON_Delete(root);
            return tl_error_set(err, "%s: chat_template has no template named \"default\"", path);
        }
    } else {
        cJSON_Delete(root);
        return tl_error_set(err, "%s: no chat_template", path);
    }
    out->bos_token = token_text(cJSON_GetObjectItemCaseSensitive(root, "bos_token"));
    out->eos_token = token_text(cJSON_GetObjectItemCaseSensitive(root, "eos_token"));
    cJSON_Delete(root);
    if (!out->template_src) {
        tl_chat_config_free(out);
        return tl_error_set(err, "%s: out of memory", path);
    }
    return 0;
}

void tl_chat_config_free(tl_chat_config *cfg)
{
    if (!cfg) return;
    free(cfg->template_src);
    free(cfg->bos_token);
    free(cfg->eos_token);
    memset(cfg, 0, sizeof *cfg);
}

/* A \uD800-\uDBFF escape not followed by a \uDC00-\uDFFF one, or a low half alone; outside
 * strings nothing looks like an escape, so scanning the whole text is enough. Returns the
 * escape's offset or -1. */
static int hex4(const char *s, unsigned *v)
{
    *v = 0;
    for (int k = 0; k < 4; k++) {
        char c = s[k];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        *v = *v * 16 + (unsigned)d;
    }
    return 0;
}

static long lone_surrogate(const char *t, size_t n)
{
    for (size_t i = 0; i + 6 <= n; i++) {
        if (t[i] != '\\') continue;
        if (t[i + 1] != 'u') {
            i++;   /* an escaped backslash or quote: skip its second byte */
            continue;
        }
        unsigned v = 0;
        if (hex4(t + i + 2, &v)) continue;
        if (v >= 0xDC00 && v <= 0xDFFF) return (long)i;
        if (v >= 0xD800 && v <= 0xDBFF) {
            unsigned lo = 0;
            if (i + 12 > n || t[i + 6] != '\\' || t[i + 7] != 'u' || hex4(t + i + 8, &lo) ||
                lo < 0xDC00 || lo > 0xDFFF)
                return (long)i;
            i += 11;
            continue;
        }
        i += 5;
    }
    return -1;
}

int tl_chat_messages_check(const char *text, size_t len, tl_error *err)
{
    if (!text) return tl_error_set(err, "messages: empty");
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3))
        return tl_error_set(err, "messages: starts with a UTF-8 byte-order mark (JSON must not; save without it)");
    const char *nul = memchr(text, 0, len);
    if (nul) return tl_error_set(err, "messages: a NUL byte at offset %zu", (size_t)(nul - text));
    long sur = lone_surrogate(text, len);
    if (sur >= 0)
        return tl_error_set(err, "messages: a lone surrogate escape \"%.6s\" at byte %ld (half of a UTF-16 pair, no character)",
                            text + sur, sur);
    /* text need not end in a NUL here (a fuzzer's input does not), so the trailing-text check
     * is ours, not cJSON's require_null_terminated */
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!j) {
        size_t at = end && end >= text && end <= text + len ? (size_t)(end - text) : 0;
        return tl_error_set(err, "messages: not valid JSON (at byte %zu)", at);
    }
    size_t at = (size_t)(end - text);
    while (at < len && (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' || text[at] == '\r'))
        at++;
    if (at < len) {
        cJSON_Delete(j);
        return tl_error_set(err, "messages: text after the JSON value at byte %zu", (size_t)(end - text));
    }
    int rc = 0;
    if (!cJSON_IsArray(j))
        rc = tl_error_set(err, "messages: not a JSON array of {\"role\", \"content\"} objects");
    else if (!j->child)
        rc = tl_error_set(err, "messages: an empty conversation (apply_chat_template refuses one too: give at least one message)");
    else {
        int i = 0;
        for (const cJSON *m = j->child; m && !rc; m = m->next, i++) {
            const cJSON *r = cJSON_GetObjectItemCaseSensitive(m, "role");
            if (!cJSON_IsObject(m)) rc = tl_error_set(err, "messages: [%d] is not an object", i);
            else if (!cJSON_IsString(r)) rc = tl_error_set(err, "messages: [%d].role is missing or not a string", i);
        }
    }
    cJSON_Delete(j);
    return rc;
}
