/* The tokenizer and chat template a GGUF file carries (tokenizer.ggml.*, tokenizer.chat_template).
 * Only llama.cpp's "gpt2" model with the "llama-bpe" pre-tokenizer (Llama 3) is read: for it the
 * metadata says everything tokenizer.json would, so this file writes that tokenizer.json text
 * (Llama 3's split regex and ByteLevel, the vocabulary, the merges, control and user-defined
 * tokens as added tokens, the BOS template) and hands it to the one loader in tokenizer.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "model_priv.h"
#include "safetensors.h"
#include "tok_internal.h"
#include "tokenloop/buf.h"
#include "tokenloop/tokenizer.h"

/* Llama 3's tokenizer.json pre-tokenizer regex (llama.cpp's "llama-bpe"). */
static const char LLAMA3_SPLIT[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

enum { TOKEN_CONTROL = 3, TOKEN_USER_DEFINED = 4 };

typedef tl_strbuf buf;

static void put(buf *b, const char *s, size_t n) { tl_strbuf_put(b, s, n); }

static void puts_(buf *b, const char *s) { put(b, s, strlen(s)); }

/* s as a JSON string literal. */
static void put_json_str(buf *b, const char *s, size_t n)
{
    put(b, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        put(b, s + run, i - run);
        char esc[8];
        snprintf(esc, sizeof esc, "\\u%04x", c);
        put(b, esc, 6);
        run = i + 1;
    }
    put(b, s + run, n - run);
    put(b, "\"", 1);
}

static int utf8_ok(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i], k, min;
        if (c < 0x80) { i++; continue; }
        if ((c & 0xe0) == 0xc0) { k = 1; min = 0x80; c &= 0x1f; }
        else if ((c & 0xf0) == 0xe0) { k = 2; min = 0x800; c &= 0x0f; }
        else if ((c & 0xf8) == 0xf0) { k = 3; min = 0x10000; c &= 0x07; }
        else return 0;
        if (k >= n - i)
            return 0;
        for (unsigned j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80) return 0;
            c = (c << 6) | (s[i + j] & 0x3f);
        }
        if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
        i += k + 1;
    }
    return 1;
}

/* A string key equal to one of the accepted values (NULL-terminated list); an error otherwise. */
static int expect_str(const tl_gguf *f, const char *key, const char *const *ok, const char *what, tl_error *err)
{
    const char *s;
    uint64_t n;
    int rc = tl_gguf_get_str(f, key, &s, &n, err);
    if (rc < 0)
        return -1;
    if (rc > 0)
        return tl_error_set(err, "%s: metadata key '%s' is missing (%s)", f->path, key, what);
    for (; *ok; ok++)
        if (strlen(*ok) == n && !memcmp(*ok, s, n))
            return 0;
    char v[80], shown[340];
    snprintf(v, sizeof v, "%.*s", (int)(n < 72 ? n : 72), s);
    return tl_error_set(err, "%s: %s '%s' is not supported (%s)", f->path, key, tl_st_printable(v, shown, sizeof shown),
                        what);
}

/* The pieces of tokenizer.json the metadata gives. */
typedef struct gguf_vocab {
    const tl_gguf_kv *tokens, *types, *merges;
    int bos, eos, add_bos;
} gguf_vocab;

static int read_vocab(const tl_gguf *f, gguf_vocab *v, tl_error *err)
{
    static const char *const models[] = {"gpt2", NULL};
    static const char *const pres[] = {"llama-bpe", "llama3", "llama-v3", NULL};
    memset(v, 0, sizeof *v);
    v->bos = v->eos = -1;
    if (expect_str(f, "tokenizer.ggml.model", models, "only 'gpt2', byte-level BPE, is", err) ||
        expect_str(f, "tokenizer.ggml.pre", pres, "only Llama 3's 'llama-bpe' pre-tokenizer is", err))
        return -1;
    int rc = tl_gguf_get_arr(f, "tokenizer.ggml.tokens", TL_GGUF_STRING, &v->tokens, err);
    if (rc)
        return rc < 0 ? -1 : tl_error_set(err, "%s: metadata key 'tokenizer.ggml.tokens' is missing", f->path);
    if (v->tokens->n < 1 || v->tokens->n > (1u << 24))
        return tl_error_set(err, "%s: tokenizer.ggml.tokens holds %llu tokens (1..16777216 expected)", f->path,
                            (unsigned long long)v->tokens->n);
    if ((rc = tl_gguf_get_arr(f, "tokenizer.ggml.merges", TL_GGUF_STRING, &v->merges, err)))
        return rc < 0 ? -1 : tl_error_set(err, "%s: metadata key 'tokenizer.ggml.merges' is missing", f->path);
    if (tl_gguf_get_arr(f, "tokenizer.ggml.token_type", TL_GGUF_I64, &v->types, err) < 0)
        return -1;
    if (v->types && v->types->n != v->tokens->n)
        return tl_error_set(err, "%s: tokenizer.ggml.token_type has %llu entries for %llu tokens", f->path,
                            (unsigned long long)v->types->n, (unsigned long long)v->tokens->n);
    int64_t id, hi = (int64_t)v->tokens->n - 1;
    if ((rc = tl_gguf_get_int(f, "tokenizer.ggml.bos_token_id", 0, hi, &id, err)) < 0)
        return -1;
    v->bos = rc ? -1 : (int)id;
    if ((rc = tl_gguf_get_int(f, "tokenizer.ggml.eos_token_id", 0, hi, &id, err)) < 0)
        return -1;
    v->eos = rc ? -1 : (int)id;
    v->add_bos = v->bos >= 0;   /* llama.cpp's default for this vocabulary */
    return tl_gguf_get_bool(f, "tokenizer.ggml.add_bos_token", &v->add_bos, err) < 0 ? -1 : 0;
}

/* Token `id`'s string (walks the array up to it: only for a few ids). */
static void token_at(const tl_gguf_kv *tokens, int id, const char **s, uint64_t *n)
{
    uint64_t cur = 0;
    for (int i = 0; i <= id; i++)
        tl_gguf_arr_next_str(tokens, &cur, s, n);
}

static char *dup_n(const char *s, uint64_t n)
{
    char *d = malloc((size_t)n + 1);
    if (d) {
        memcpy(d, s, (size_t)n);
        d[n] = 0;
    }
    return d;
}

static int is_added(const gguf_vocab *v, uint64_t i)
{
    int64_t t = v->types ? tl_gguf_arr_int(v->types, i) : 1;
    return t == TOKEN_CONTROL || t == TOKEN_USER_DEFINED;
}

static int write_json(const tl_gguf *f, const gguf_vocab *v, buf *b, tl_error *err)
{
    puts_(b, "{\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":["
             "{\"type\":\"Split\",\"pattern\":{\"Regex\":");
    put_json_str(b, LLAMA3_SPLIT, strlen(LLAMA3_SPLIT));
    puts_(b, "},\"behavior\":\"Isolated\",\"invert\":false},"
             "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":false}]},"
             "\"decoder\":{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"trim_offsets\":true,\"use_regex\":true},"
             "\"model\":{\"type\":\"BPE\",\"ignore_merges\":true,\"byte_fallback\":false,\"vocab\":{");
    uint64_t cur = 0, n_vocab = 0;
    for (uint64_t i = 0; i < v->tokens->n; i++) {
        const char *s;
        uint64_t n;
        tl_gguf_arr_next_str(v->tokens, &cur, &s, &n);
        if (!n || memchr(s, 0, (size_t)n) || !utf8_ok((const unsigned char *)s, (size_t)n))
            return tl_error_set(err, "%s: tokenizer.ggml.tokens[%llu] is empty, holds a NUL or is not UTF-8",
                                f->path, (unsigned long long)i);
        if (is_added(v, i))
            continue;
        if (n_vocab++)
            put(b, ",", 1);
        put_json_str(b, s, n);
        char num[32];
        put(b, num, (size_t)snprintf(num, sizeof num, ":%llu", (unsigned long long)i));
    }
    puts_(b, "},\"merges\":[");
    cur = 0;
    for (uint64_t i = 0; i < v->merges->n; i++) {
        const char *s;
        uint64_t n;
        tl_gguf_arr_next_str(v->merges, &cur, &s, &n);
        if (i)
            put(b, ",", 1);
        put_json_str(b, s, n);
    }
    puts_(b, "]},\"added_tokens\":[");
    cur = 0;
    int first = 1;
    for (uint64_t i = 0; i < v->tokens->n; i++) {
        const char *s;
        uint64_t n;
        tl_gguf_arr_next_str(v->tokens, &cur, &s, &n);
        if (!is_added(v, i))
            continue;
        char head[64];
        put(b, head, (size_t)snprintf(head, sizeof head, "%s{\"id\":%llu,\"content\":", first ? "" : ",",
                                      (unsigned long long)i));
        put_json_str(b, s, n);
        puts_(b, tl_gguf_arr_int(v->types, i) == TOKEN_CONTROL ? ",\"special\":true" : ",\"special\":false");
        puts_(b, ",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false}");
        first = 0;
    }
    puts_(b, "],\"post_processor\":");
    if (v->add_bos && v->bos >= 0) {
        const char *s;
        uint64_t n;
        token_at(v->tokens, v->bos, &s, &n);
        puts_(b, "{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":");
        put_json_str(b, s, n);
        puts_(b, ",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],\"special_tokens\":{");
        put_json_str(b, s, n);
        char ids[48];
        put(b, ids, (size_t)snprintf(ids, sizeof ids, ":{\"ids\":[%d]}}}", v->bos));
    } else {
        puts_(b, "null");
    }
    puts_(b, "}");
    return b->oom ? tl_error_set(err, "%s: out of memory building the tokenizer", f->path) : 0;
}

int tl_gguf_has_tokenizer(const char *path)
{
    if (!tl_gguf_is_file(path))
        return 0;
    tl_gguf f;
    tl_error err;
    if (tl_gguf_open(&f, path, &err))
        return 0;
    int yes = tl_gguf_find_kv(&f, "tokenizer.ggml.model") != NULL;
    tl_gguf_close(&f);
    return yes;
}

int tl_tokenizer_load_gguf(tl_tokenizer **out, const char *path, tl_error *err)
{
    *out = NULL;
    tl_gguf f;
    if (tl_gguf_open(&f, path, err))
        return -1;
    gguf_vocab v;
    buf b = {0};
    char *bos = NULL, *eos = NULL;
    int rc = read_vocab(&f, &v, err) || write_json(&f, &v, &b, err) ? -1 : 0;
    if (!rc) {
        const char *s;
        uint64_t n;
        if (v.bos >= 0) {
            token_at(v.tokens, v.bos, &s, &n);
            bos = dup_n(s, n);
        }
        if (v.eos >= 0) {
            token_at(v.tokens, v.eos, &s, &n);
            eos = dup_n(s, n);
        }
        rc = tl_tokenizer_load_text(out, b.p, b.n, path, bos, eos, err);
    }
    free(bos);
    free(eos);
    free(b.p);
    tl_gguf_close(&f);
    return rc;
}

int tl_gguf_chat_config(const char *path, char **template_src, char **bos_token, char **eos_token, tl_error *err)
{
    *template_src = *bos_token = *eos_token = NULL;
    tl_gguf f;
    if (tl_gguf_open(&f, path, err))
        return -1;
    const char *s;
    uint64_t n;
    int rc = tl_gguf_get_str(&f, "tokenizer.chat_template", &s, &n, err);
    if (rc > 0)
        rc = tl_error_set(err, "%s: no tokenizer.chat_template", path);
    if (!rc && memchr(s, 0, (size_t)n))
        rc = tl_error_set(err, "%s: tokenizer.chat_template holds a NUL byte", path);
    if (!rc && !(*template_src = dup_n(s, n)))
        rc = tl_error_set(err, "%s: out of memory", path);
    const tl_gguf_kv *tokens = NULL;
    if (!rc && tl_gguf_get_arr(&f, "tokenizer.ggml.tokens", TL_GGUF_STRING, &tokens, err) < 0)
        rc = -1;
    static const char *const keys[] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"};
    char **dst[] = {bos_token, eos_token};
    for (int k = 0; k < 2 && !rc && tokens; k++) {
        int64_t id;
        int got = tl_gguf_get_int(&f, keys[k], 0, (int64_t)tokens->n - 1, &id, err);
        if (got < 0)
            rc = -1;
        else if (got == 0) {
            token_at(tokens, (int)id, &s, &n);
            if (!(*dst[k] = dup_n(s, n)))
                rc = tl_error_set(err, "%s: out of memory", path);
        }
    }
    tl_gguf_close(&f);
    if (rc) {
        free(*template_src);
        free(*bos_token);
        free(*eos_token);
        *template_src = *bos_token = *eos_token = NULL;
    }
    return rc;
}
