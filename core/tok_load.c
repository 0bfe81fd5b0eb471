/* Loading tokenizer.json (and tokenizer_config.json's special tokens) into the maps: the vocab
 * as raw bytes, the merges by rank, the added tokens, the normalizer, pre-tokenizer and
 * post-processor chains, each refused with the file and field named when it is not one tokenloop
 * runs. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenloop/tokenizer.h"
#include "tokenloop/streamer.h"
#include "tokenloop/paths.h"
#include "tokenloop/file.h"

#include <errno.h>
#include <limits.h>
#include <pcre2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "model_priv.h"
#include "tok_internal.h"
#include "tok_json.h"

static int set_id_entry(tl_tokenizer *t, int id, const char *tokstr, const void *bytes, size_t nbytes)
{
    long so = tl_tok_arena_add(t, tokstr, strlen(tokstr));
    long po = tl_tok_arena_add(t, bytes, nbytes);
    if (so < 0 || po < 0)
        return -1;
    t->tokstr_off[id] = (uint32_t)so;
    t->piece_off[id] = (uint32_t)po;
    t->piece_len[id] = (uint32_t)nbytes;
    t->present[id] = 1;
    return 0;
}

/* Token string of the vocabulary -> raw bytes; a string with a character outside the byte-level
 * alphabet stands for its own UTF-8 bytes (what HF's ByteLevel decoder does). */
static size_t token_to_bytes(const tl_tokenizer *t, const char *s, unsigned char *out)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s), i = 0, o = 0;
    while (i < n) {
        int l = tl_utf8_char_len(s + i, n - i);
        if (!l)
            goto raw;
        unsigned cp = p[i];
        if (l == 2)
            cp = ((p[i] & 0x1fu) << 6) | (p[i + 1] & 0x3fu);
        else if (l > 2)
            goto raw;
        if (cp >= 0x144 || t->byte_of_cp[cp] < 0)
            goto raw;
        out[o++] = (unsigned char)t->byte_of_cp[cp];
        i += (size_t)l;
    }
    return o;
raw:
    memcpy(out, s, n);
    return n;
}

static const char *json_str(const tj_doc *d, tj o, const char *key)
{
    tj v = tj_get(d, o, key);
    return (tj_type(d, v) == TJ_STR) ? tj_str(d, v) : NULL;
}

static int json_bool(const tj_doc *d, tj o, const char *key, int dflt)
{
    tj v = tj_get(d, o, key);
    if ((tj_type(d, v) == TJ_TRUE || tj_type(d, v) == TJ_FALSE))
        return (tj_type(d, v) == TJ_TRUE);
    return dflt;
}

/* Oniguruma (what HF tokenizers runs) counts U+0085 as \s; PCRE2 with UCP does not. */
static char *onig_to_pcre2(const char *pat)
{
    size_t n = strlen(pat);
    char *out = malloc(n * 12 + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    int in_class = 0;
    for (size_t i = 0; i < n; i++) {
        char c = pat[i];
        if (c == '\\' && i + 1 < n) {
            char d = pat[i + 1];
            if (d == 's') {
                const char *r = in_class ? "\\s\\x{85}" : "[\\s\\x{85}]";
                memcpy(out + o, r, strlen(r));
                o += strlen(r);
            } else if (d == 'S' && !in_class) {
                memcpy(out + o, "[^\\s\\x{85}]", 11);
                o += 11;
            } else {
                out[o++] = c;
                out[o++] = d;
            }
            i++;
            continue;
        }
        if (!in_class && c == '[') {
            in_class = 1;
            out[o++] = c;
            if (i + 1 < n && pat[i + 1] == '^')
                out[o++] = pat[++i];
            if (i + 1 < n && pat[i + 1] == ']')  /* a leading ] is literal */
                out[o++] = pat[++i];
            continue;
        }
        if (in_class && c == '[' && i + 1 < n && pat[i + 1] == ':') {  /* [:alpha:] */
            const char *end = strstr(pat + i + 2, ":]");
            if (end) {
                size_t l = (size_t)(end + 2 - (pat + i));
                memcpy(out + o, pat + i, l);
                o += l;
                i += l - 1;
                continue;
            }
        }
        if (in_class && c == ']')
            in_class = 0;
        out[o++] = c;
    }
    out[o] = 0;
    return out;
}

static int add_split(tl_tokenizer *t, const char *pattern, int literal, int behavior, int invert,
                     const char *what, tl_error *err)
{
    if (t->n_pre == TL_TOK_MAX_PRE)
        return tl_error_set(err, "%s: too many pre-tokenizers", what);
    char *conv = literal ? strdup(pattern) : onig_to_pcre2(pattern);
    if (!conv)
        return tl_error_set(err, "%s: out of memory", what);
    int ec;
    PCRE2_SIZE eo;
    /* No PCRE2_NO_UTF_CHECK here: the pattern comes from the file, and pcre2 reads invalid
     * UTF-8 in an unchecked pattern out of bounds (the fuzzer found one). */
    uint32_t opts = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)conv, PCRE2_ZERO_TERMINATED, opts, &ec, &eo, NULL);
    free(conv);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        return tl_error_set(err, "%s: pre-tokenizer regex at offset %zu: %s", what, (size_t)eo, (char *)msg);
    }
    int jit = pcre2_jit_compile(re, PCRE2_JIT_COMPLETE) == 0;  /* else the interpreter */
    tl_pretok *p = &t->pre[t->n_pre++];
    memset(p, 0, sizeof *p);
    p->jit = jit;
    p->kind = TL_PRE_SPLIT;
    p->re = re;
    p->behavior = behavior;
    p->invert = invert;
    return 0;
}

static const char GPT2_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* The loader of one kind of part (load_pretok, load_postproc, load_normalizer), given its type. */
typedef int part_fn(tl_tokenizer *t, const tj_doc *d, tj x, const char *type, const char *what, tl_error *err);

/* An optional part (the normalizer, pre_tokenizer or post_processor, or one item of a Sequence
 * of them) through load: nothing when it is absent or null; one without a type is refused,
 * naming the part. */
static int load_part(tl_tokenizer *t, const tj_doc *d, tj x, const char *part, part_fn *load, const char *what,
                     tl_error *err)
{
    if (x < 0 || tj_type(d, x) == TJ_NULL)
        return 0;
    const char *type = json_str(d, x, "type");
    if (!type)
        return tl_error_set(err, "%s: %s without a type", what, part);
    return load(t, d, x, type, what, err);
}

/* A Sequence: each item of list in order. */
static int load_each(tl_tokenizer *t, const tj_doc *d, tj list, const char *part, part_fn *load, const char *what,
                     tl_error *err)
{
    TJ_FOR(d, it, list)
        if (load_part(t, d, it, part, load, what, err))
            return -1;
    return 0;
}

static int load_pretok(tl_tokenizer *t, const tj_doc *d, tj pt, const char *type, const char *what, tl_error *err)
{
    if (!strcmp(type, "Sequence")) {
        tj list = tj_get(d, pt, "pretokenizers");
        if (!(tj_type(d, list) == TJ_ARR))
            return tl_error_set(err, "%s: pre_tokenizer Sequence without pretokenizers", what);
        return load_each(t, d, list, "pre_tokenizer", load_pretok, what, err);
    }
    if (!strcmp(type, "Split")) {
        tj pat = tj_get(d, pt, "pattern");
        const char *rx = json_str(d, pat, "Regex"), *lit = json_str(d, pat, "String");
        if (!rx && !lit)
            return tl_error_set(err, "%s: Split without a Regex or String pattern", what);
        const char *beh = json_str(d, pt, "behavior");
        static const char *names[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"};
        int b = -1;
        for (int i = 0; i < 5; i++)
            if (beh && !strcmp(beh, names[i]))
                b = i;
        if (b < 0)
            return tl_error_set(err, "%s: Split behavior '%s' is not supported", what, beh ? beh : "(none)");
        return add_split(t, rx ? rx : lit, !rx, b, json_bool(d, pt, "invert", 0), what, err);
    }
    if (!strcmp(type, "ByteLevel")) {
        if (t->n_pre == TL_TOK_MAX_PRE)
            return tl_error_set(err, "%s: too many pre-tokenizers", what);
        tl_pretok *p = &t->pre[t->n_pre++];
        memset(p, 0, sizeof *p);
        p->kind = TL_PRE_PREFIX_SPACE;
        p->prefix_space = json_bool(d, pt, "add_prefix_space", 1);
        if (!p->prefix_space)
            t->n_pre--;
        if (json_bool(d, pt, "use_regex", 1))
            return add_split(t, GPT2_PATTERN, 0, TL_SPLIT_ISOLATED, 0, what, err);
        return 0;
    }
    if (!strcmp(type, "Digits")) {
        int each = json_bool(d, pt, "individual_digits", 0);
        return add_split(t, each ? "\\p{N}" : "\\p{N}+", 0, each ? TL_SPLIT_ISOLATED : TL_SPLIT_CONTIGUOUS, 0, what, err);
    }
    return tl_error_set(err, "%s: pre_tokenizer type '%s' is not supported", what, type);
}

/* The ids a TemplateProcessing entry or a Roberta/Bert [name, id] pair stands for. */
static int add_template_ids(tl_tokenizer *t, const tj_doc *d, int *dst, int *n, tj special, const char *name,
                            const char *what, tl_error *err)
{
    tj ent = tj_get(d, special, name);
    tj ids = tj_get(d, ent, "ids");
    if (!(tj_type(d, ids) == TJ_ARR)) {
        int id = tl_tok_str_map_get(t, name);
        if (id < 0)
            return tl_error_set(err, "%s: post_processor special token '%s' is unknown", what, name);
        if (*n == TL_TOK_MAX_TEMPLATE)
            return tl_error_set(err, "%s: post_processor template too long", what);
        dst[(*n)++] = id;
        return 0;
    }
    TJ_FOR(d, it, ids) {
        if (!(tj_type(d, it) == TJ_NUM) || tj_num(d, it) < 0 || tj_num(d, it) >= t->n_vocab)
            return tl_error_set(err, "%s: post_processor id of '%s' is out of range", what, name);
        if (*n == TL_TOK_MAX_TEMPLATE)
            return tl_error_set(err, "%s: post_processor template too long", what);
        dst[(*n)++] = (int)tj_num(d, it);
    }
    return 0;
}

static int load_postproc(tl_tokenizer *t, const tj_doc *d, tj pp, const char *type, const char *what,
                         tl_error *err)
{
    if (!strcmp(type, "Sequence"))
        return load_each(t, d, tj_get(d, pp, "processors"), "post_processor", load_postproc, what, err);
    if (!strcmp(type, "ByteLevel"))
        return 0;  /* offsets only */
    if (!strcmp(type, "TemplateProcessing")) {
        tj single = tj_get(d, pp, "single");
        tj special = tj_get(d, pp, "special_tokens");
        if (!(tj_type(d, single) == TJ_ARR))
            return tl_error_set(err, "%s: TemplateProcessing without 'single'", what);
        t->n_prefix = t->n_suffix = 0;
        int seen_seq = 0;
        TJ_FOR(d, it, single) {
            tj st = tj_get(d, it, "SpecialToken");
            if (st >= 0) {
                const char *name = json_str(d, st, "id");
                if (!name)
                    return tl_error_set(err, "%s: TemplateProcessing SpecialToken without an id", what);
                if (add_template_ids(t, d, seen_seq ? t->suffix : t->prefix, seen_seq ? &t->n_suffix : &t->n_prefix,
                                     special, name, what, err))
                    return -1;
            } else if (tj_get(d, it, "Sequence") >= 0)
                seen_seq = 1;
            else
                return tl_error_set(err, "%s: TemplateProcessing item is neither SpecialToken nor Sequence", what);
        }
        return 0;
    }
    if (!strcmp(type, "RobertaProcessing") || !strcmp(type, "BertProcessing")) {
        tj cls = tj_get(d, pp, "cls"), sep = tj_get(d, pp, "sep");
        tj ci = tj_item(d, cls, 1), si = tj_item(d, sep, 1);
        if (!(tj_type(d, ci) == TJ_NUM) || !(tj_type(d, si) == TJ_NUM) || (int)tj_num(d, ci) < 0 || (int)tj_num(d, ci) >= t->n_vocab ||
            (int)tj_num(d, si) < 0 || (int)tj_num(d, si) >= t->n_vocab)
            return tl_error_set(err, "%s: %s needs cls and sep as [token, id]", what, type);
        t->prefix[0] = (int)tj_num(d, ci);
        t->suffix[0] = (int)tj_num(d, si);
        t->n_prefix = t->n_suffix = 1;
        return 0;
    }
    return tl_error_set(err, "%s: post_processor type '%s' is not supported", what, type);
}

/* Unicode normalization forms, through utf8proc; other normalizers are refused. */
static int load_normalizer(tl_tokenizer *t, const tj_doc *d, tj nm, const char *type, const char *what,
                           tl_error *err)
{
    if (!strcmp(type, "Sequence"))
        return load_each(t, d, tj_get(d, nm, "normalizers"), "normalizer", load_normalizer, what, err);
    static const struct {
        const char *name;
        int options;
    } forms[] = {
        {"NFC", UTF8PROC_STABLE | UTF8PROC_COMPOSE},
        {"NFD", UTF8PROC_STABLE | UTF8PROC_DECOMPOSE},
        {"NFKC", UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT},
        {"NFKD", UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT},
    };
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++)
        if (!strcmp(type, forms[i].name)) {
            if (t->n_norm == TL_TOK_MAX_PRE)
                return tl_error_set(err, "%s: too many normalizers", what);
            t->norm[t->n_norm++] = forms[i].options;
            return 0;
        }
    return tl_error_set(err, "%s: normalizer '%s' is not supported", what, type);
}

static int load_decoder(const tj_doc *d, tj dec, const char *what, tl_error *err)
{
    const char *type = json_str(d, dec, "type");
    if (!type)
        return tl_error_set(err, "%s: decoder missing (only byte-level BPE is supported)", what);
    if (!strcmp(type, "ByteLevel"))
        return 0;
    if (!strcmp(type, "Sequence")) {
        TJ_FOR(d, it, tj_get(d, dec, "decoders"))
            if (load_decoder(d, it, what, err))
                return -1;
        return 0;
    }
    return tl_error_set(err, "%s: decoder type '%s' is not supported (only byte-level BPE)", what, type);
}

/* bos_token / eos_token in tokenizer_config.json: a string, an AddedToken object, or null. */
static char *config_token(const tj_doc *d, tj cfg, const char *key)
{
    tj v = tj_get(d, cfg, key);
    if ((tj_type(d, v) == TJ_STR))
        return strdup(tj_str(d, v));
    const char *c = json_str(d, v, "content");
    return c ? strdup(c) : NULL;
}

static int load_config(tl_tokenizer *t, const char *dir, tl_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    FILE *probe = fopen(path, "rb");
    if (!probe)
        return 0;  /* optional */
    fclose(probe);
    size_t len;
    char *text;
    tl_file_read(path, 256u << 20, &text, &len, err);
    if (!text)
        return -1;
    tj_doc doc;
    const tj_doc *d = &doc;
    size_t at;
    const char *why;
    if (tj_parse(&doc, text, len, &at, &why)) {
        free(text);
        return tl_error_set(err, "%s: malformed JSON at byte %zu: %s", path, at, why);
    }
    if (tj_type(d, 0) != TJ_OBJ) {
        tj_free(&doc);
        free(text);
        return tl_error_set(err, "%s: not a JSON object", path);
    }
    t->bos_token = config_token(d, 0, "bos_token");
    t->eos_token = config_token(d, 0, "eos_token");
    tj_free(&doc);
    free(text);
    t->bos = t->bos_token ? tl_tok_str_map_get(t, t->bos_token) : -1;
    t->eos = t->eos_token ? tl_tok_str_map_get(t, t->eos_token) : -1;
    return 0;
}

static int grow_ids(tl_tokenizer *t, int n_vocab)
{
    t->n_vocab = n_vocab;
    t->piece_off = calloc((size_t)n_vocab, sizeof *t->piece_off);
    t->piece_len = calloc((size_t)n_vocab, sizeof *t->piece_len);
    t->tokstr_off = calloc((size_t)n_vocab, sizeof *t->tokstr_off);
    t->present = calloc((size_t)n_vocab, 1);
    t->special = calloc((size_t)n_vocab, 1);
    return (t->piece_off && t->piece_len && t->tokstr_off && t->present && t->special) ? 0 : -1;
}

typedef struct {
    unsigned first;
    size_t len;
    int index;
} added_key;

static int by_first_byte_longest(const void *x, const void *y)
{
    const added_key *a = x, *b = y;
    if (a->first != b->first)
        return a->first < b->first ? -1 : 1;
    if (a->len != b->len)
        return a->len > b->len ? -1 : 1;
    return a->index - b->index;
}

static int index_added(tl_tokenizer *t)
{
    t->added_order = malloc(((size_t)t->n_added + 1) * sizeof *t->added_order);
    added_key *keys = malloc(((size_t)t->n_added + 1) * sizeof *keys);
    if (!t->added_order || !keys) {
        free(keys);
        return -1;
    }
    for (int i = 0; i < t->n_added; i++)
        keys[i] = (added_key){(unsigned char)t->arena[t->added[i].off], t->added[i].len, i};
    qsort(keys, (size_t)t->n_added, sizeof *keys, by_first_byte_longest);
    int k = 0;
    for (unsigned c = 0; c <= 256; c++) {
        while (k < t->n_added && keys[k].first < c)
            k++;
        t->added_first[c] = k;
    }
    for (int i = 0; i < t->n_added; i++)
        t->added_order[i] = keys[i].index;
    free(keys);
    return 0;
}

/* Every entry of the vocabulary into one of the maps, through its put. */
static void put_vocab(tl_tokenizer *t, void (*put)(tl_tokenizer *t, int id))
{
    for (int id = 0; id < t->n_vocab; id++)
        if (t->present[id])
            put(t, id);
}

/* The id table, sized to the largest id of the vocab and the added tokens. */
static int size_ids(tl_tokenizer *t, const tj_doc *d, tj vocab, tj added, const char *what, tl_error *err)
{
    int max_id = -1;
    TJ_FOR(d, it, vocab) {
        if (!(tj_type(d, it) == TJ_NUM) || tj_num(d, it) < 0 || tj_num(d, it) > 16777216)
            return tl_error_set(err, "%s: vocab entry '%s' has no valid id", what, tj_key(d, it));
        if ((int)tj_num(d, it) > max_id)
            max_id = (int)tj_num(d, it);
    }
    TJ_FOR(d, it, added) {
        tj id = tj_get(d, it, "id");
        if (!(tj_type(d, id) == TJ_NUM) || tj_num(d, id) < 0 || tj_num(d, id) > 16777216 || !json_str(d, it, "content"))
            return tl_error_set(err, "%s: added token without a valid id and content", what);
        if ((int)tj_num(d, id) > max_id)
            max_id = (int)tj_num(d, id);
    }
    if (max_id < 0)
        return tl_error_set(err, "%s: empty vocabulary", what);
    if (grow_ids(t, max_id + 1))
        return tl_error_set(err, "%s: out of memory", what);
    return 0;
}

/* Each vocab entry's bytes (the token string through the byte-level alphabet), and the map
 * from bytes to id. */
static int load_vocab(tl_tokenizer *t, const tj_doc *d, tj vocab, const char *what, tl_error *err)
{
    unsigned char *buf = malloc(4096);
    size_t buf_cap = 4096;
    if (!buf)
        return tl_error_set(err, "%s: out of memory", what);
    TJ_FOR(d, it, vocab) {
        size_t n = strlen(tj_key(d, it));
        if (n + 1 > buf_cap) {
            buf_cap = n + 1;
            unsigned char *b = realloc(buf, buf_cap);
            if (!b) {
                free(buf);
                return tl_error_set(err, "%s: out of memory", what);
            }
            buf = b;
        }
        size_t nb = token_to_bytes(t, tj_key(d, it), buf);
        if (set_id_entry(t, (int)tj_num(d, it), tj_key(d, it), buf, nb)) {
            free(buf);
            return tl_error_set(err, "%s: out of memory", what);
        }
    }
    free(buf);

    size_t nv = (size_t)tj_count(d, vocab);
    t->bytes_map_size = tl_tok_pow2_at_least(nv * 2 + 16);
    t->bytes_map = calloc(t->bytes_map_size, sizeof *t->bytes_map);
    if (!t->bytes_map)
        return tl_error_set(err, "%s: out of memory", what);
    put_vocab(t, tl_tok_bytes_map_put);
    for (int b = 0; b < 256; b++) {
        unsigned char c = (unsigned char)b;
        t->byte_id[b] = tl_tok_bytes_map_get(t, &c, 1);
    }
    return 0;
}

/* The added tokens: their text is their content; they replace a vocab entry of the same id.
 * Then the patterns single_word and lstrip/rstrip test against. */
static int load_added(tl_tokenizer *t, const tj_doc *d, tj added, const char *what, tl_error *err)
{
    int n_added = tj_count(d, added);
    t->added = calloc((size_t)n_added + 1, sizeof *t->added);
    if (!t->added)
        return tl_error_set(err, "%s: out of memory", what);
    TJ_FOR(d, it, added) {
        const char *content = json_str(d, it, "content");
        int id = (int)tj_num(d, tj_get(d, it, "id"));
        if (!*content)
            continue;
        if (set_id_entry(t, id, content, content, strlen(content)))
            return tl_error_set(err, "%s: out of memory", what);
        tl_added *a = &t->added[t->n_added++];
        a->id = id;
        a->len = strlen(content);
        a->special = json_bool(d, it, "special", 0);
        a->lstrip = json_bool(d, it, "lstrip", 0);
        a->rstrip = json_bool(d, it, "rstrip", 0);
        a->single_word = json_bool(d, it, "single_word", 0);
        a->normalized = json_bool(d, it, "normalized", 1);
        t->special[id] = a->special ? 1 : 2;
    }
    for (int i = 0; i < t->n_added; i++)  /* content offsets are final only now */
        t->added[i].off = t->piece_off[t->added[i].id];
    if (index_added(t))
        return tl_error_set(err, "%s: out of memory", what);
    /* Rust's \w (Alphabetic, marks, decimal digits, connector punctuation, joiners) and
     * char::is_whitespace, for single_word and lstrip/rstrip */
    int ec;
    PCRE2_SIZE eo;
    t->word_re = pcre2_compile((PCRE2_SPTR) "[\\p{L}\\p{Nl}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}]", PCRE2_ZERO_TERMINATED,
                               PCRE2_UTF | PCRE2_UCP | PCRE2_ANCHORED, &ec, &eo, NULL);
    t->space_re = pcre2_compile((PCRE2_SPTR) "[\\s\\x{85}]", PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP | PCRE2_ANCHORED,
                                &ec, &eo, NULL);
    if (!t->word_re || !t->space_re)
        return tl_error_set(err, "%s: out of memory", what);
    return 0;
}

/* The map from token string to id, the added tokens' contents included. */
static int build_str_map(tl_tokenizer *t, const char *what, tl_error *err)
{
    t->str_map_size = tl_tok_pow2_at_least((size_t)t->n_vocab * 2 + 16);
    t->str_map = calloc(t->str_map_size, sizeof *t->str_map);
    if (!t->str_map)
        return tl_error_set(err, "%s: out of memory", what);
    put_vocab(t, tl_tok_str_map_put);
    for (int i = 0; i < t->n_added; i++)  /* an added token's content finds its own id */
        tl_tok_str_map_put(t, t->added[i].id);
    return 0;
}

/* The merges: "a b" strings or ["a", "b"] pairs; rank = position. */
static int load_merges(tl_tokenizer *t, const tj_doc *d, tj merges, const char *what, tl_error *err)
{
    size_t nm = (size_t)tj_count(d, merges);
    t->merge_map_size = tl_tok_pow2_at_least(nm + nm / 2 + 16);
    t->merge_map = malloc(t->merge_map_size * sizeof *t->merge_map);
    if (!t->merge_map)
        return tl_error_set(err, "%s: out of memory", what);
    for (size_t i = 0; i < t->merge_map_size; i++)
        t->merge_map[i].result = -1;
    int rank = 0;
    char *cat = NULL;
    size_t cat_cap = 0;
    TJ_FOR(d, it, merges) {
        const char *a, *b;
        char tmp[1024];
        if ((tj_type(d, it) == TJ_STR)) {
            const char *s = tj_str(d, it), *sp = strchr(s, ' ');
            if (!sp || strchr(sp + 1, ' ') || (size_t)(sp - s) >= sizeof tmp) {
                free(cat);
                return tl_error_set(err, "%s: merge %d '%.60s' is not two tokens", what, rank, s);
            }
            memcpy(tmp, s, (size_t)(sp - s));
            tmp[sp - s] = 0;
            a = tmp;
            b = sp + 1;
        } else if (tj_count(d, it) == 2 && (tj_type(d, tj_item(d, it, 0)) == TJ_STR) &&
                   (tj_type(d, tj_item(d, it, 1)) == TJ_STR)) {
            a = tj_str(d, tj_item(d, it, 0));
            b = tj_str(d, tj_item(d, it, 1));
        } else {
            free(cat);
            return tl_error_set(err, "%s: merge %d is neither \"a b\" nor [\"a\", \"b\"]", what, rank);
        }
        int ia = tl_tok_str_map_get(t, a), ib = tl_tok_str_map_get(t, b);
        if (ia < 0 || ib < 0) {
            free(cat);
            return tl_error_set(err, "%s: merge %d: token '%.60s' is not in the vocabulary", what, rank, ia < 0 ? a : b);
        }
        size_t la = t->piece_len[ia], lb = t->piece_len[ib];
        if (la + lb > cat_cap) {
            cat_cap = (la + lb) * 2;
            char *c = realloc(cat, cat_cap);
            if (!c) {
                free(cat);
                return tl_error_set(err, "%s: out of memory", what);
            }
            cat = c;
        }
        memcpy(cat, tl_tok_piece_ptr(t, ia), la);
        memcpy(cat + la, tl_tok_piece_ptr(t, ib), lb);
        int ic = tl_tok_bytes_map_get(t, cat, la + lb);
        if (ic < 0) {
            free(cat);
            return tl_error_set(err, "%s: merge %d: '%.40s%.40s' is not in the vocabulary", what, rank, a, b);
        }
        tl_tok_merge_put(t, ia, ib, rank, ic);
        rank++;
    }
    free(cat);
    return 0;
}

static int load_json(tl_tokenizer *t, const tj_doc *d, tj root, const char *what, tl_error *err)
{
    tj model = tj_get(d, root, "model");
    if (!(tj_type(d, model) == TJ_OBJ))
        return tl_error_set(err, "%s: no 'model' object", what);
    const char *mtype = json_str(d, model, "type");
    tj vocab = tj_get(d, model, "vocab");
    tj merges = tj_get(d, model, "merges");
    if (mtype && strcmp(mtype, "BPE"))
        return tl_error_set(err, "%s: model type '%s' is not supported (only BPE)", what, mtype);
    if (!(tj_type(d, vocab) == TJ_OBJ) || !(tj_type(d, merges) == TJ_ARR))
        return tl_error_set(err, "%s: BPE model without vocab object and merges array", what);
    if (json_bool(d, model, "byte_fallback", 0))
        return tl_error_set(err, "%s: BPE with byte_fallback is not supported (only byte-level BPE)", what);
    if (load_part(t, d, tj_get(d, root, "normalizer"), "normalizer", load_normalizer, what, err))
        return -1;
    t->ignore_merges = json_bool(d, model, "ignore_merges", 0);

    tj added = tj_get(d, root, "added_tokens");
    if (size_ids(t, d, vocab, added, what, err) || load_vocab(t, d, vocab, what, err) ||
        load_added(t, d, added, what, err) || build_str_map(t, what, err) || load_merges(t, d, merges, what, err))
        return -1;
    if (load_part(t, d, tj_get(d, root, "pre_tokenizer"), "pre_tokenizer", load_pretok, what, err))
        return -1;
    if (load_part(t, d, tj_get(d, root, "post_processor"), "post_processor", load_postproc, what, err))
        return -1;
    return load_decoder(d, tj_get(d, root, "decoder"), what, err);
}

/* Builds the tokenizer from tokenizer.json text; then bos/eos from tokenizer_config.json in dir,
 * or, without a dir, from the token strings given. */
static int load_text(tl_tokenizer **out, char *text, size_t len, const char *path, const char *dir,
                     const char *bos_token, const char *eos_token, tl_error *err)
{
    tj_doc doc;
    size_t at;
    const char *why;
    if (tj_parse(&doc, text, len, &at, &why))
        return tl_error_set(err, "%s: malformed JSON at byte %zu: %s", path, at, why);
    tl_tokenizer *t = calloc(1, sizeof *t);
    if (!t) {
        tj_free(&doc);
        return tl_error_set(err, "%s: out of memory", path);
    }
    t->bos = t->eos = -1;
    tl_tok_byte_level_tables(t->cp_of_byte, t->byte_of_cp);
    int rc = tj_type(&doc, 0) == TJ_OBJ ? load_json(t, &doc, 0, path, err) : tl_error_set(err, "%s: not a JSON object", path);
    tj_free(&doc);
    if (!rc && dir)
        rc = load_config(t, dir, err);
    else if (!rc) {
        t->bos_token = bos_token ? strdup(bos_token) : NULL;
        t->eos_token = eos_token ? strdup(eos_token) : NULL;
        if ((bos_token && !t->bos_token) || (eos_token && !t->eos_token))
            rc = tl_error_set(err, "%s: out of memory", path);
        t->bos = t->bos_token ? tl_tok_str_map_get(t, t->bos_token) : -1;
        t->eos = t->eos_token ? tl_tok_str_map_get(t, t->eos_token) : -1;
    }
    if (rc) {
        tl_tokenizer_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

int tl_tokenizer_load_text(tl_tokenizer **out, char *text, size_t len, const char *what, const char *bos_token,
                           const char *eos_token, tl_error *err)
{
    *out = NULL;
    return load_text(out, text, len, what, NULL, bos_token, eos_token, err);
}

int tl_tokenizer_load_dir(tl_tokenizer **out, const char *dir, tl_error *err)
{
    *out = NULL;
    char path[4096];
    if (snprintf(path, sizeof path, "%s/tokenizer.json", dir) >= (int)sizeof path)
        return tl_error_set(err, "%s: path too long", dir);
    size_t len;
    char *text;
    tl_file_read(path, 256u << 20, &text, &len, err);
    if (!text)
        return -1;
    int rc = load_text(out, text, len, path, dir, NULL, NULL, err);
    free(text);
    return rc;
}

void tl_tokenizer_free(tl_tokenizer *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->n_pre; i++)
        if (t->pre[i].re)
            pcre2_code_free(t->pre[i].re);
    free(t->arena);
    free(t->piece_off);
    free(t->piece_len);
    free(t->tokstr_off);
    free(t->present);
    free(t->special);
    free(t->bytes_map);
    free(t->str_map);
    free(t->merge_map);
    free(t->added);
    free(t->added_order);
    if (t->word_re)
        pcre2_code_free(t->word_re);
    if (t->space_re)
        pcre2_code_free(t->space_re);
    free(t->bos_token);
    free(t->eos_token);
    free(t);
}
