/* The chat layer over the Jinja engine: apply_chat_template's variables, and the template and
 * special tokens of a model directory's tokenizer_config.json. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jinja/jinja.h"
#include "tokenloop/template.h"
#include "tokenloop/file.h"

static char *json_string(const char *s)
{
    cJSON *x = cJSON_CreateString(s);
    if (!x) return NULL;
    char *r = cJSON_PrintUnformatted(x);
    cJSON_Delete(x);
    return r;
}

int tl_chat_render(const tl_template *tpl, const char *messages_json,
                   const tl_template_var *vars, size_t n_vars, int add_generation_prompt,
                   const char *bos_token, const char *eos_token, tl_chat_result *out,
                   tl_error *err)
{
    memset(out, 0, sizeof *out);
    if (!tpl) return tl_error_set(err, "template: no template");
    size_t cap = n_vars + 6, n = 0;
    tl_jinja_var *v = calloc(cap, sizeof *v);
    char *bos = bos_token ? json_string(bos_token) : NULL;
    char *eos = eos_token ? json_string(eos_token) : NULL;
    int rc;
    if (!v || (bos_token && !bos) || (eos_token && !eos)) {
        rc = tl_error_set(err, "template: out of memory");
        goto done;
    }
    /* transformers: render(messages=..., tools=None, documents=None, add_generation_prompt=...,
     * **special_tokens_map, **kwargs) */
    v[n++] = (tl_jinja_var){"messages", messages_json ? messages_json : "[]", 1};
    v[n++] = (tl_jinja_var){"tools", "null", 0};
    v[n++] = (tl_jinja_var){"documents", "null", 0};
    v[n++] = (tl_jinja_var){"add_generation_prompt", add_generation_prompt ? "true" : "false", 0};
    if (bos) v[n++] = (tl_jinja_var){"bos_token", bos, 0};
    if (eos) v[n++] = (tl_jinja_var){"eos_token", eos, 0};
    for (size_t i = 0; i < n_vars; i++) {
        if (!vars[i].name || !vars[i].json) {
            rc = tl_error_set(err, "template: variable %zu has no name or value", i);
            goto done;
        }
        v[n++] = (tl_jinja_var){vars[i].name, vars[i].json, !strcmp(vars[i].name, "messages")};
    }
    rc = tl_jinja_render_vars(tpl, v, n, &out->text, &out->len, &out->spans, &out->n_spans, err);
done:
    free(v);
    cJSON_free(bos);
    cJSON_free(eos);
    return rc;
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

/* The first integer literal (no '.', 'e' or 'E') outside strings that a 64-bit integer cannot
 * hold; the template engine would refuse it later and blame the template. Returns its offset
 * or -1; *len gets its length. The text is valid JSON when this runs (no leading zeros). */
static long big_int(const char *t, size_t n, size_t *len)
{
    for (size_t i = 0; i < n; i++) {
        if (t[i] == '"') {
            for (i++; i < n && t[i] != '"'; i++)
                if (t[i] == '\\') i++;
            continue;
        }
        if (t[i] != '-' && (t[i] < '0' || t[i] > '9')) continue;
        size_t b = i++;
        while (i < n && t[i] && strchr("0123456789.eE+-", t[i])) i++;
        size_t k = i - b;
        if (memchr(t + b, '.', k) || memchr(t + b, 'e', k) || memchr(t + b, 'E', k) || k < 19) continue;
        /* the text need not end in a NUL, so strtoll reads a copy */
        char tmp[32];
        int big = k >= sizeof tmp;
        if (!big) {
            memcpy(tmp, t + b, k);
            tmp[k] = 0;
            errno = 0;
            (void)strtoll(tmp, NULL, 10);
            big = errno == ERANGE;
        }
        if (big) {
            *len = k;
            return (long)b;
        }
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
    size_t blen = 0;
    long big = big_int(text, len, &blen);
    if (big >= 0) {
        cJSON_Delete(j);
        return tl_error_set(err, "messages: integer %.*s%s at byte %ld does not fit in 64 bits (tokenloop's integers are 64-bit)",
                            blen > 40 ? 40 : (int)blen, text + big, blen > 40 ? "..." : "", big);
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
