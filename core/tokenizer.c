/* Byte-level BPE as Hugging Face tokenizers does it: added tokens split out first (leftmost,
 * longest), the pre-tokenizer chain (Split regexes, ByteLevel, Digits) cuts the rest into
 * pre-tokens, and each pre-token is merged by rank. Work happens on raw bytes: GPT-2's
 * byte<->unicode mapping is a bijection, so token strings are turned into bytes once, at load. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenloop/tokenizer.h"
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

/* ---- small helpers ---- */

static uint64_t hash_bytes(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = 0xcbf29ce484222325ull ^ n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
        s += 8;
        n -= 8;
    }
    while (n--)
        h = (h ^ *s++) * 0x100000001b3ull;
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ull;
    h ^= h >> 32;
    return h;
}

static uint64_t hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

static size_t pow2_at_least(size_t n)
{
    size_t s = 16;
    while (s < n)
        s <<= 1;
    return s;
}

/* GPT-2's table: printable Latin-1 bytes stand for themselves, the other 68 bytes map in order to
 * U+0100.. . byte_of_cp inverts it for code points below 0x144. */
static void byte_level_tables(int cp_of_byte[256], int byte_of_cp[0x144])
{
    for (int i = 0; i < 0x144; i++)
        byte_of_cp[i] = -1;
    int extra = 0;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae);
        cp_of_byte[b] = printable ? b : 0x100 + extra++;
        byte_of_cp[cp_of_byte[b]] = b;
    }
}

/* Length of the UTF-8 character at s (n bytes left), or 0 when the bytes there are not one. */
static int utf8_char_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    int len;
    unsigned lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0) lo = 0xa0;
        if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f;
    } else
        return 0;
    if (n < (size_t)len)
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (int i = 2; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return len;
}

/* How many bytes at the end of s are a proper but unfinished UTF-8 character (0..3). */
static int utf8_incomplete_tail(const unsigned char *s, size_t n)
{
    for (int back = 1; back <= 3 && (size_t)back <= n; back++) {
        unsigned c = s[n - back];
        if ((c & 0xc0) == 0x80)
            continue;
        int need = (c >= 0xc2 && c <= 0xdf) ? 2 : (c >= 0xe0 && c <= 0xef) ? 3 : (c >= 0xf0 && c <= 0xf4) ? 4 : 0;
        if (need <= back)
            return 0;
        if (back >= 2) {
            unsigned lo = 0x80, hi = 0xbf, c1 = s[n - back + 1];
            if (c == 0xe0) lo = 0xa0;
            if (c == 0xed) hi = 0x9f;
            if (c == 0xf0) lo = 0x90;
            if (c == 0xf4) hi = 0x8f;
            if (c1 < lo || c1 > hi)
                return 0;
        }
        return back;
    }
    return 0;
}

static long utf8_first_invalid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        int l = utf8_char_len(s + i, n - i);
        if (!l)
            return (long)i;
        i += (size_t)l;
    }
    return -1;
}

/* ---- growable arrays ---- */

typedef struct {
    int *v;
    size_t *start;
    size_t n, cap;
} idvec;

static int idvec_push(idvec *a, int id, size_t start)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        int *v = realloc(a->v, cap * sizeof *v);
        if (!v)
            return -1;
        a->v = v;
        size_t *st = realloc(a->start, cap * sizeof *st);
        if (!st)
            return -1;
        a->start = st;
        a->cap = cap;
    }
    a->v[a->n] = id;
    a->start[a->n] = start;
    a->n++;
    return 0;
}

/* Arena of bytes addressed by offset (it moves when it grows). */
static long arena_add(tl_tokenizer *t, const void *p, size_t n)
{
    if (t->arena_len + n + 1 > t->arena_cap) {
        size_t cap = t->arena_cap ? t->arena_cap : 1 << 20;
        while (t->arena_len + n + 1 > cap)
            cap *= 2;
        char *a = realloc(t->arena, cap);
        if (!a)
            return -1;
        t->arena = a;
        t->arena_cap = cap;
    }
    long off = (long)t->arena_len;
    memcpy(t->arena + off, p, n);
    t->arena[off + (long)n] = 0;
    t->arena_len += n + 1;
    return off;
}

/* ---- maps: open addressing, slots hold id+1, keys are compared through the per-id arrays ---- */

static const char *piece_ptr(const tl_tokenizer *t, int id) { return t->arena + t->piece_off[id]; }
static const char *tokstr_ptr(const tl_tokenizer *t, int id) { return t->arena + t->tokstr_off[id]; }

/* A slot holds id + 1 in its low half and the key hash's high half as a tag, so a probe that
 * meets another key rarely reads that key's bytes (a cache miss each). */
#define SLOT(h, id) (((h) & 0xffffffff00000000ull) | (uint32_t)((id) + 1))
#define SLOT_ID(s) ((int)(uint32_t)(s) - 1)
#define SLOT_TAG_OK(s, h) ((((s) ^ (h)) >> 32) == 0)

static int bytes_map_get(const tl_tokenizer *t, const void *key, size_t n)
{
    uint64_t h = hash_bytes(key, n);
    size_t mask = t->bytes_map_size - 1, i = h & mask;
    for (;;) {
        uint64_t s = t->bytes_map[i];
        if (!s)
            return -1;
        int id = SLOT_ID(s);
        if (SLOT_TAG_OK(s, h) && t->piece_len[id] == n && !memcmp(piece_ptr(t, id), key, n))
            return id;
        i = (i + 1) & mask;
    }
}

static void bytes_map_put(tl_tokenizer *t, int id)
{
    size_t n = t->piece_len[id];
    uint64_t h = hash_bytes(piece_ptr(t, id), n);
    size_t mask = t->bytes_map_size - 1, i = h & mask;
    for (;;) {
        uint64_t s = t->bytes_map[i];
        if (!s || (SLOT_TAG_OK(s, h) && t->piece_len[SLOT_ID(s)] == n &&
                   !memcmp(piece_ptr(t, SLOT_ID(s)), piece_ptr(t, id), n))) {
            t->bytes_map[i] = SLOT(h, id);  /* a later entry with the same key wins */
            return;
        }
        i = (i + 1) & mask;
    }
}

static int str_map_get(const tl_tokenizer *t, const char *key)
{
    uint64_t h = hash_bytes(key, strlen(key));
    size_t mask = t->str_map_size - 1, i = h & mask;
    for (;;) {
        uint64_t s = t->str_map[i];
        if (!s)
            return -1;
        if (SLOT_TAG_OK(s, h) && !strcmp(tokstr_ptr(t, SLOT_ID(s)), key))
            return SLOT_ID(s);
        i = (i + 1) & mask;
    }
}

static void str_map_put(tl_tokenizer *t, int id)
{
    const char *k = tokstr_ptr(t, id);
    uint64_t h = hash_bytes(k, strlen(k));
    size_t mask = t->str_map_size - 1, i = h & mask;
    for (;;) {
        uint64_t s = t->str_map[i];
        if (!s || (SLOT_TAG_OK(s, h) && !strcmp(tokstr_ptr(t, SLOT_ID(s)), k))) {
            t->str_map[i] = SLOT(h, id);
            return;
        }
        i = (i + 1) & mask;
    }
}

static const tl_merge *merge_get(const tl_tokenizer *t, int a, int b)
{
    uint64_t key = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    size_t mask = t->merge_map_size - 1, i = hash_u64(key) & mask;
    for (;;) {
        const tl_merge *m = &t->merge_map[i];
        if (m->result < 0)
            return NULL;
        if (m->key == key)
            return m;
        i = (i + 1) & mask;
    }
}

static void merge_put(tl_tokenizer *t, int a, int b, int rank, int result)
{
    uint64_t key = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    size_t mask = t->merge_map_size - 1, i = hash_u64(key) & mask;
    for (;;) {
        tl_merge *m = &t->merge_map[i];
        if (m->result < 0 || m->key == key) {  /* a later duplicate overwrites, as in HF */
            m->key = key;
            m->rank = rank;
            m->result = result;
            return;
        }
        i = (i + 1) & mask;
    }
}

/* ---- loading ---- */


static int set_id_entry(tl_tokenizer *t, int id, const char *tokstr, const void *bytes, size_t nbytes)
{
    long so = arena_add(t, tokstr, strlen(tokstr));
    long po = arena_add(t, bytes, nbytes);
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
        int l = utf8_char_len(p + i, n - i);
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

static int load_pretok(tl_tokenizer *t, const tj_doc *d, tj pt, const char *what, tl_error *err)
{
    if (pt < 0 || tj_type(d, pt) == TJ_NULL)
        return 0;
    const char *type = json_str(d, pt, "type");
    if (!type)
        return tl_error_set(err, "%s: pre_tokenizer without a type", what);
    if (!strcmp(type, "Sequence")) {
        tj list = tj_get(d, pt, "pretokenizers");
        if (!(tj_type(d, list) == TJ_ARR))
            return tl_error_set(err, "%s: pre_tokenizer Sequence without pretokenizers", what);
        TJ_FOR(d, it, list)
            if (load_pretok(t, d, it, what, err))
                return -1;
        return 0;
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
        int id = str_map_get(t, name);
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

static int load_postproc(tl_tokenizer *t, const tj_doc *d, tj pp, const char *what, tl_error *err)
{
    if (pp < 0 || tj_type(d, pp) == TJ_NULL)
        return 0;
    const char *type = json_str(d, pp, "type");
    if (!type)
        return tl_error_set(err, "%s: post_processor without a type", what);
    if (!strcmp(type, "Sequence")) {
        TJ_FOR(d, it, tj_get(d, pp, "processors"))
            if (load_postproc(t, d, it, what, err))
                return -1;
        return 0;
    }
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
static int load_normalizer(tl_tokenizer *t, const tj_doc *d, tj nm, const char *what, tl_error *err)
{
    if (nm < 0 || tj_type(d, nm) == TJ_NULL)
        return 0;
    const char *type = json_str(d, nm, "type");
    if (!type)
        return tl_error_set(err, "%s: normalizer without a type", what);
    if (!strcmp(type, "Sequence")) {
        TJ_FOR(d, it, tj_get(d, nm, "normalizers"))
            if (load_normalizer(t, d, it, what, err))
                return -1;
        return 0;
    }
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
    t->bos = t->bos_token ? str_map_get(t, t->bos_token) : -1;
    t->eos = t->eos_token ? str_map_get(t, t->eos_token) : -1;
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
    if (load_normalizer(t, d, tj_get(d, root, "normalizer"), what, err))
        return -1;
    t->ignore_merges = json_bool(d, model, "ignore_merges", 0);

    /* ids run to the largest of the vocab's and the added tokens' */
    int max_id = -1;
    TJ_FOR(d, it, vocab) {
        if (!(tj_type(d, it) == TJ_NUM) || tj_num(d, it) < 0 || tj_num(d, it) > 16777216)
            return tl_error_set(err, "%s: vocab entry '%s' has no valid id", what, tj_key(d, it));
        if ((int)tj_num(d, it) > max_id)
            max_id = (int)tj_num(d, it);
    }
    tj added = tj_get(d, root, "added_tokens");
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
    t->bytes_map_size = pow2_at_least(nv * 2 + 16);
    t->bytes_map = calloc(t->bytes_map_size, sizeof *t->bytes_map);
    if (!t->bytes_map)
        return tl_error_set(err, "%s: out of memory", what);
    for (int id = 0; id < t->n_vocab; id++)
        if (t->present[id])
            bytes_map_put(t, id);
    for (int b = 0; b < 256; b++) {
        unsigned char c = (unsigned char)b;
        t->byte_id[b] = bytes_map_get(t, &c, 1);
    }

    /* added tokens: their text is their content; they replace a vocab entry of the same id */
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

    t->str_map_size = pow2_at_least((size_t)t->n_vocab * 2 + 16);
    t->str_map = calloc(t->str_map_size, sizeof *t->str_map);
    if (!t->str_map)
        return tl_error_set(err, "%s: out of memory", what);
    for (int id = 0; id < t->n_vocab; id++)
        if (t->present[id])
            str_map_put(t, id);
    for (int i = 0; i < t->n_added; i++)  /* an added token's content finds its own id */
        str_map_put(t, t->added[i].id);

    /* merges: "a b" strings or ["a", "b"] pairs; rank = position */
    size_t nm = (size_t)tj_count(d, merges);
    t->merge_map_size = pow2_at_least(nm + nm / 2 + 16);
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
        int ia = str_map_get(t, a), ib = str_map_get(t, b);
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
        memcpy(cat, piece_ptr(t, ia), la);
        memcpy(cat + la, piece_ptr(t, ib), lb);
        int ic = bytes_map_get(t, cat, la + lb);
        if (ic < 0) {
            free(cat);
            return tl_error_set(err, "%s: merge %d: '%.40s%.40s' is not in the vocabulary", what, rank, a, b);
        }
        merge_put(t, ia, ib, rank, ic);
        rank++;
    }
    free(cat);

    if (load_pretok(t, d, tj_get(d, root, "pre_tokenizer"), what, err))
        return -1;
    if (load_postproc(t, d, tj_get(d, root, "post_processor"), what, err))
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
    byte_level_tables(t->cp_of_byte, t->byte_of_cp);
    int rc = tj_type(&doc, 0) == TJ_OBJ ? load_json(t, &doc, 0, path, err) : tl_error_set(err, "%s: not a JSON object", path);
    tj_free(&doc);
    if (!rc && dir)
        rc = load_config(t, dir, err);
    else if (!rc) {
        t->bos_token = bos_token ? strdup(bos_token) : NULL;
        t->eos_token = eos_token ? strdup(eos_token) : NULL;
        if ((bos_token && !t->bos_token) || (eos_token && !t->eos_token))
            rc = tl_error_set(err, "%s: out of memory", path);
        t->bos = t->bos_token ? str_map_get(t, t->bos_token) : -1;
        t->eos = t->eos_token ? str_map_get(t, t->eos_token) : -1;
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

int tl_tokenizer_load(tl_tokenizer **out, const char *dir, tl_error *err)
{
    *out = NULL;
    if (tl_model_is_gguf(dir))   /* a GGUF file carries its tokenizer: tok_gguf.c */
        return tl_tokenizer_load_gguf(out, dir, err);
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

/* ---- encoding ---- */

typedef struct {
    const unsigned char *p;
    size_t n;
    long src;  /* offset in the caller's text of p[0]; one less when a prefix space was added */
} span;

typedef struct {
    span *v;
    size_t n, cap;
} spanvec;

static int spanvec_push(spanvec *a, const unsigned char *p, size_t n, long src)
{
    if (!n)
        return 0;
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        span *v = realloc(a->v, cap * sizeof *v);
        if (!v)
            return -1;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = (span){p, n, src};
    return 0;
}

typedef struct {
    int id, prev, next;
    size_t len;
} sym;

typedef struct {
    int rank, pos, result;
} hent;

typedef struct {
    size_t a, b;
    int match;
} seg;

typedef struct {
    sym *syms;
    size_t syms_cap;
    hent *heap;
    size_t heap_n, heap_cap;
    pcre2_match_data *md, *md1;
    pcre2_match_context *mctx;
    pcre2_jit_stack *jstack;
    spanvec a, b;
    seg *segs;
    size_t segs_n, segs_cap;
    unsigned char **bufs;  /* prefix-space copies */
    size_t n_bufs;
    const unsigned char *orig;     /* the caller's text */
    const tl_span *plain;          /* ranges of orig where special tokens are text */
    size_t n_plain;
    size_t map_a, map_b, map_n;    /* a normalized copy of orig[map_a, map_b), map_n bytes */
} scratch;

static int hent_less(hent x, hent y) { return x.rank != y.rank ? x.rank < y.rank : x.pos < y.pos; }

static int heap_push(scratch *s, hent e)
{
    if (s->heap_n == s->heap_cap) {
        size_t cap = s->heap_cap ? s->heap_cap * 2 : 256;
        hent *h = realloc(s->heap, cap * sizeof *h);
        if (!h)
            return -1;
        s->heap = h;
        s->heap_cap = cap;
    }
    size_t i = s->heap_n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!hent_less(e, s->heap[p]))
            break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = e;
    return 0;
}

static hent heap_pop(scratch *s)
{
    hent top = s->heap[0], last = s->heap[--s->heap_n];
    size_t i = 0, n = s->heap_n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && hent_less(s->heap[c + 1], s->heap[c]))
            c++;
        if (!hent_less(s->heap[c], last))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (n)
        s->heap[i] = last;
    return top;
}

static int push_pair(const tl_tokenizer *t, scratch *s, int pos)
{
    int nx = s->syms[pos].next;
    if (nx < 0)
        return 0;
    const tl_merge *m = merge_get(t, s->syms[pos].id, s->syms[nx].id);
    return m ? heap_push(s, (hent){m->rank, pos, m->result}) : 0;
}

/* One pre-token to ids: the whole of it when it is a token and ignore_merges is set, else BPE
 * merging the lowest-ranked adjacent pair first (leftmost on ties). */
static int bpe(const tl_tokenizer *t, scratch *s, const span *sp, idvec *out)
{
    if (t->ignore_merges || sp->n == 1) {
        int id = bytes_map_get(t, sp->p, sp->n);
        if (id >= 0)
            return idvec_push(out, id, sp->src < 0 ? 0 : (size_t)sp->src);
    }
    if (sp->n > s->syms_cap) {
        size_t cap = sp->n * 2;
        sym *v = realloc(s->syms, cap * sizeof *v);
        if (!v)
            return -1;
        s->syms = v;
        s->syms_cap = cap;
    }
    int n = 0;
    for (size_t i = 0; i < sp->n; i++) {
        int id = t->byte_id[sp->p[i]];
        if (id < 0) {  /* no unknown token in byte-level BPE: the byte is dropped, as HF does */
            if (n)
                s->syms[n - 1].len++;
            continue;
        }
        s->syms[n] = (sym){id, n - 1, -1, 1};
        if (n)
            s->syms[n - 1].next = n;
        n++;
    }
    s->heap_n = 0;
    for (int i = 0; i < n - 1; i++)
        if (push_pair(t, s, i))
            return -1;
    while (s->heap_n) {
        hent e = heap_pop(s);
        sym *a = &s->syms[e.pos];
        if (!a->len || a->next < 0)
            continue;
        sym *b = &s->syms[a->next];
        const tl_merge *m = merge_get(t, a->id, b->id);
        if (!m || m->result != e.result)
            continue;
        a->id = m->result;
        a->len += b->len;
        b->len = 0;
        a->next = b->next;
        if (a->next >= 0)
            s->syms[a->next].prev = e.pos;
        if ((a->prev >= 0 && push_pair(t, s, a->prev)) || push_pair(t, s, e.pos))
            return -1;
    }
    long off = sp->src;
    for (int i = 0; i >= 0 && n; i = s->syms[i].next) {
        if (idvec_push(out, s->syms[i].id, off < 0 ? 0 : (size_t)off))
            return -1;
        off += (long)s->syms[i].len;
    }
    return 0;
}

static int seg_push(scratch *s, size_t a, size_t b, int match)
{
    if (b <= a)
        return 0;
    if (s->segs_n == s->segs_cap) {
        size_t cap = s->segs_cap ? s->segs_cap * 2 : 256;
        seg *v = realloc(s->segs, cap * sizeof *v);
        if (!v)
            return -1;
        s->segs = v;
        s->segs_cap = cap;
    }
    s->segs[s->segs_n++] = (seg){a, b, match};
    return 0;
}

/* Regex split of every span in `in` into `out`, as HF's Split: the text becomes matched and
 * unmatched segments, which the behaviour then keeps, drops or joins. */
static int run_split(const tl_pretok *p, scratch *s, const spanvec *in, spanvec *out, tl_error *err)
{
    out->n = 0;
    for (size_t k = 0; k < in->n; k++) {
        const span *sp = &in->v[k];
        size_t pos = 0, prev = 0;
        s->segs_n = 0;
        while (pos <= sp->n) {
            int rc = p->jit ? pcre2_jit_match(p->re, sp->p, sp->n, pos, 0, s->md, s->mctx)
                            : pcre2_match(p->re, sp->p, sp->n, pos, PCRE2_NO_UTF_CHECK, s->md, s->mctx);
            if (rc == PCRE2_ERROR_NOMATCH)
                break;
            if (rc < 0) {
                PCRE2_UCHAR msg[256];
                pcre2_get_error_message(rc, msg, sizeof msg);
                return tl_error_set(err, "text: pre-tokenizer regex failed: %s", (char *)msg);
            }
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(s->md);
            size_t ms = ov[0], me = ov[1];
            if (me == ms) {  /* an empty match cuts nothing; step over one character */
                if (ms >= sp->n)
                    break;
                int l = utf8_char_len(sp->p + ms, sp->n - ms);
                pos = ms + (size_t)(l ? l : 1);
                continue;
            }
            if (seg_push(s, prev, ms, 0) || seg_push(s, ms, me, 1))
                goto oom;
            prev = pos = me;
        }
        if (seg_push(s, prev, sp->n, 0))
            goto oom;
        size_t first = out->n;
        int prev_match = 0;
        for (size_t i = 0; i < s->segs_n; i++) {
            seg g = s->segs[i];
            if (p->invert)
                g.match = !g.match;
            int merge = 0;
            switch (p->behavior) {
            case TL_SPLIT_REMOVED:
                if (g.match)
                    continue;
                break;
            case TL_SPLIT_MERGED_PREV:
                merge = g.match && !prev_match && out->n > first;
                break;
            case TL_SPLIT_CONTIGUOUS:
                merge = i > 0 && g.match == prev_match && out->n > first;
                break;
            case TL_SPLIT_MERGED_NEXT:
                /* a match joins the segment after it when that one is not a match */
                if (i > 0 && prev_match && !g.match && out->n > first)
                    merge = 1;
                break;
            }
            prev_match = g.match;
            if (merge) {
                span *last = &out->v[out->n - 1];
                last->n = g.b - (size_t)(last->p - sp->p);
            } else if (spanvec_push(out, sp->p + g.a, g.b - g.a, sp->src + (long)g.a))
                goto oom;
        }
    }
    return 0;
oom:
    return tl_error_set(err, "text: out of memory");
}

static int encode_section(const tl_tokenizer *t, scratch *s, const unsigned char *text, size_t a, size_t b,
                          idvec *out, tl_error *err)
{
    if (b <= a)
        return 0;
    s->a.n = 0;
    if (spanvec_push(&s->a, text + a, b - a, (long)a))
        return tl_error_set(err, "text: out of memory");
    spanvec *cur = &s->a, *nxt = &s->b;
    for (int i = 0; i < t->n_pre; i++) {
        const tl_pretok *p = &t->pre[i];
        if (p->kind == TL_PRE_PREFIX_SPACE) {
            for (size_t k = 0; k < cur->n; k++) {
                span *sp = &cur->v[k];
                if (sp->p[0] == ' ')
                    continue;
                unsigned char *c = malloc(sp->n + 1), **bl = realloc(s->bufs, (s->n_bufs + 1) * sizeof *bl);
                if (!c || !bl) {
                    free(c);
                    if (bl)
                        s->bufs = bl;
                    return tl_error_set(err, "text: out of memory");
                }
                s->bufs = bl;
                s->bufs[s->n_bufs++] = c;
                c[0] = ' ';
                memcpy(c + 1, sp->p, sp->n);
                *sp = (span){c, sp->n + 1, sp->src - 1};
            }
            continue;
        }
        if (run_split(p, s, cur, nxt, err))
            return -1;
        spanvec *tmp = cur;
        cur = nxt;
        nxt = tmp;
    }
    for (size_t k = 0; k < cur->n; k++)
        if (bpe(t, s, &cur->v[k], out))
            return tl_error_set(err, "text: out of memory");
    return 0;
}

/* Leftmost, then longest added token of this stage (0: normalized false, 1: true) in
 * text[from, len); returns its index or -1. Added tokens are bucketed by first byte, longest first. */
static int find_added(const tl_tokenizer *t, const unsigned char *text, size_t from, size_t len, int stage,
                      size_t *at)
{
    for (size_t i = from; i < len; i++) {
        unsigned c = text[i];
        if (t->added_first[c] == t->added_first[c + 1])
            continue;
        for (int k = t->added_first[c]; k < t->added_first[c + 1]; k++) {
            const tl_added *a = &t->added[t->added_order[k]];
            if (a->normalized != stage)
                continue;
            if (a->len <= len - i && !memcmp(t->arena + a->off, text + i, a->len)) {
                *at = i;
                return t->added_order[k];
            }
        }
    }
    return -1;
}

/* Does the character at s[i] (n bytes in all) match the one-character regex re? */
static int char_matches(const void *re, scratch *s, const unsigned char *p, size_t n, size_t i)
{
    return pcre2_match(re, p, n, i, PCRE2_NO_UTF_CHECK, s->md1, NULL) > 0;
}

static size_t prev_char(const unsigned char *p, size_t i)
{
    do
        i--;
    while (i > 0 && (p[i] & 0xc0) == 0x80);
    return i;
}

static int encode_plain(const tl_tokenizer *t, scratch *s, const unsigned char *text, size_t a, size_t b, int stage,
                        int flags, idvec *out, tl_error *err);

/* Does text[ms, me) (text is orig or the normalized copy) overlap a plain range? */
static int in_plain(const scratch *s, const unsigned char *text, size_t ms, size_t me)
{
    if (!s->n_plain) return 0;
    if (text != s->orig) {  /* scaled back as the offsets are: approximate */
        size_t w = s->map_b - s->map_a;
        ms = s->map_a + (s->map_n ? ms * w / s->map_n : 0);
        me = s->map_a + (s->map_n ? (me * w + s->map_n - 1) / s->map_n : 0);
    }
    for (size_t i = 0; i < s->n_plain; i++)
        if (s->plain[i].start < s->plain[i].end && ms < s->plain[i].end && s->plain[i].start < me) return 1;
    return 0;
}

/* Added tokens out of text[a, b) as HF's AddedVocabulary does it: matches are found left to right
 * without overlap; one that is special under TL_TOK_NO_PARSE_SPECIAL, or single_word next to a
 * word character, stays in the text; lstrip/rstrip take the whitespace beside the token. */
static int split_added(const tl_tokenizer *t, scratch *s, const unsigned char *text, size_t a, size_t b, int stage,
                       int flags, idvec *out, tl_error *err)
{
    const unsigned char *p = text + a;
    size_t n = b - a, pos = 0, search = 0, at;
    int k;
    while ((k = find_added(t, p, search, n, stage, &at)) >= 0) {
        const tl_added *ad = &t->added[k];
        size_t ms = at, me = at + ad->len;
        search = me;
        if (ad->special && ((flags & TL_TOK_NO_PARSE_SPECIAL) || in_plain(s, text, a + ms, a + me)))
            continue;
        if (ad->single_word && ((ms > 0 && char_matches(t->word_re, s, p, n, prev_char(p, ms))) ||
                                (me < n && char_matches(t->word_re, s, p, n, me))))
            continue;
        if (ad->lstrip)
            while (ms > pos && char_matches(t->space_re, s, p, n, prev_char(p, ms)))
                ms = prev_char(p, ms);
        if (ad->rstrip)
            while (me < n && char_matches(t->space_re, s, p, n, me))
                me += (size_t)utf8_char_len(p + me, n - me);
        if (encode_plain(t, s, text, a + pos, a + ms, stage, flags, out, err))
            return -1;
        if (idvec_push(out, ad->id, a + ms))
            return tl_error_set(err, "text: out of memory");
        pos = search = me;
    }
    return encode_plain(t, s, text, a + pos, b, stage, flags, out, err);
}

static int encode_plain(const tl_tokenizer *t, scratch *s, const unsigned char *text, size_t a, size_t b, int stage,
                        int flags, idvec *out, tl_error *err)
{
    if (b <= a)
        return 0;
    if (stage)
        return encode_section(t, s, text, a, b, out, err);
    /* normalize, then the added tokens that match normalized text; offsets into a text the
     * normalizer changed are scaled back onto the original segment (approximate) */
    unsigned char *norm = NULL;
    size_t nlen = b - a;
    for (int i = 0; i < t->n_norm; i++) {
        utf8proc_uint8_t *dst = NULL;
        utf8proc_ssize_t r = utf8proc_map(norm ? norm : text + a, (utf8proc_ssize_t)nlen, &dst, t->norm[i]);
        free(norm);
        if (r < 0)
            return tl_error_set(err, "text: normalizer: %s", utf8proc_errmsg(r));
        norm = dst;
        nlen = (size_t)r;
    }
    if (!norm || (nlen == b - a && !memcmp(norm, text + a, nlen))) {
        free(norm);
        return split_added(t, s, text, a, b, 1, flags, out, err);
    }
    unsigned char **bl = realloc(s->bufs, (s->n_bufs + 1) * sizeof *bl);
    if (!bl) {
        free(norm);
        return tl_error_set(err, "text: out of memory");
    }
    s->bufs = bl;
    s->bufs[s->n_bufs++] = norm;
    size_t first = out->n;
    s->map_a = a;
    s->map_b = b;
    s->map_n = nlen;
    if (split_added(t, s, norm, 0, nlen, 1, flags, out, err))
        return -1;
    for (size_t i = first; i < out->n; i++)
        out->start[i] = a + (nlen ? out->start[i] * (b - a) / nlen : 0);
    return 0;
}

static int encode_all(const tl_tokenizer *t, const char *text_, size_t len, int flags, const tl_span *plain,
                      size_t n_plain, int **ids, size_t **starts, int *n, tl_error *err);

int tl_tokenizer_encode_offsets(const tl_tokenizer *t, const char *text, size_t len, int flags, int **ids,
                                size_t **starts, int *n, tl_error *err)
{
    return encode_all(t, text, len, flags, NULL, 0, ids, starts, n, err);
}

int tl_tokenizer_encode_plain(const tl_tokenizer *t, const char *text, size_t len, int flags,
                              const tl_span *plain, size_t n_plain, int **ids, int *n, tl_error *err)
{
    return encode_all(t, text, len, flags, plain, n_plain, ids, NULL, n, err);
}

static int encode_all(const tl_tokenizer *t, const char *text_, size_t len, int flags, const tl_span *plain,
                      size_t n_plain, int **ids, size_t **starts, int *n, tl_error *err)
{
    *ids = NULL;
    if (starts)
        *starts = NULL;
    *n = 0;
    const unsigned char *text = (const unsigned char *)text_;
    long bad = utf8_first_invalid(text, len);
    if (bad >= 0)
        return tl_error_set(err, "text: not valid UTF-8 at byte %ld", bad);
    if (len > (size_t)INT_MAX / 2)
        return tl_error_set(err, "text: too long");
    idvec out = {0};
    scratch s = {0};
    s.orig = text;
    s.plain = plain;
    s.n_plain = n_plain;
    int rc = 0;
    if (flags & TL_TOK_ADD_BOS)
        for (int i = 0; i < t->n_prefix && !rc; i++)
            rc = idvec_push(&out, t->prefix[i], 0);
    for (int i = 0; i < t->n_pre && !s.md; i++)
        if (t->pre[i].re)
            s.md = pcre2_match_data_create_from_pattern(t->pre[i].re, NULL);
    s.mctx = pcre2_match_context_create(NULL);
    s.md1 = pcre2_match_data_create(1, NULL);
    s.jstack = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, NULL);
    if (rc || !s.mctx || !s.md1 || !s.jstack || (t->n_pre && !s.md)) {
        rc = tl_error_set(err, "text: out of memory");
        goto done;
    }
    pcre2_jit_stack_assign(s.mctx, NULL, s.jstack);
    if (split_added(t, &s, text, 0, len, 0, flags, &out, err)) {
        rc = -1;
        goto done;
    }
    if (flags & TL_TOK_ADD_BOS)
        for (int i = 0; i < t->n_suffix; i++)
            if (idvec_push(&out, t->suffix[i], len)) {
                rc = tl_error_set(err, "text: out of memory");
                goto done;
            }
done:
    for (size_t i = 0; i < s.n_bufs; i++)
        free(s.bufs[i]);
    free(s.bufs);
    free(s.a.v);
    free(s.b.v);
    free(s.syms);
    free(s.heap);
    free(s.segs);
    if (s.md)
        pcre2_match_data_free(s.md);
    if (s.md1)
        pcre2_match_data_free(s.md1);
    if (s.mctx)
        pcre2_match_context_free(s.mctx);
    if (s.jstack)
        pcre2_jit_stack_free(s.jstack);
    if (rc) {
        free(out.v);
        free(out.start);
        return -1;
    }
    if (!out.v) {  /* empty text: still hand back an array the caller can free */
        out.v = malloc(sizeof *out.v);
        out.start = malloc(sizeof *out.start);
        if (!out.v || !out.start) {
            free(out.v);
            free(out.start);
            return tl_error_set(err, "text: out of memory");
        }
    }
    *ids = out.v;
    *n = (int)out.n;
    if (starts)
        *starts = out.start;
    else
        free(out.start);
    return 0;
}

int tl_tokenizer_encode(const tl_tokenizer *t, const char *text, size_t len, int flags, int **ids, int *n,
                        tl_error *err)
{
    return tl_tokenizer_encode_offsets(t, text, len, flags, ids, NULL, n, err);
}

/* ---- decoding and lookups ---- */

int tl_tokenizer_decode(const tl_tokenizer *t, const int *ids, int n, char **text, size_t *len,
                        int *incomplete_tail, tl_error *err)
{
    *text = NULL;
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->n_vocab || !t->present[ids[i]])
            return tl_error_set(err, "ids: %d is not a token id (vocabulary of %d)", ids[i], t->n_vocab);
        total += t->piece_len[ids[i]];
    }
    char *out = malloc(total + 1);
    if (!out)
        return tl_error_set(err, "ids: out of memory");
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        memcpy(out + o, piece_ptr(t, ids[i]), t->piece_len[ids[i]]);
        o += t->piece_len[ids[i]];
    }
    int tail = utf8_incomplete_tail((const unsigned char *)out, o);
    o -= (size_t)tail;
    out[o] = 0;
    *text = out;
    if (len)
        *len = o;
    if (incomplete_tail)
        *incomplete_tail = tail;
    return 0;
}

const char *tl_tokenizer_piece(const tl_tokenizer *t, int id, size_t *len)
{
    if (id < 0 || id >= t->n_vocab || !t->present[id])
        return NULL;
    if (len)
        *len = t->piece_len[id];
    return piece_ptr(t, id);
}

const char *tl_tokenizer_token(const tl_tokenizer *t, int id)
{
    if (id < 0 || id >= t->n_vocab || !t->present[id])
        return NULL;
    return tokstr_ptr(t, id);
}

size_t tl_tokenizer_display(const tl_tokenizer *t, int id, char *buf, size_t size)
{
    size_t n, o = 0;
    const unsigned char *p = (const unsigned char *)tl_tokenizer_piece(t, id, &n);
    char tmp[16];
#define PUT(str, l) do { size_t _l = (l); for (size_t _k = 0; _k < _l; _k++, o++) \
        if (o + 1 < size) buf[o] = (str)[_k]; } while (0)
    if (!p) {
        int l = snprintf(tmp, sizeof tmp, "<bad id>");
        PUT(tmp, (size_t)l);
    } else if (t->special[id]) {
        PUT((const char *)p, n);
    } else {
        for (size_t i = 0; i < n;) {
            unsigned c = p[i];
            int l = utf8_char_len(p + i, n - i);
            if (c == ' ') PUT("\xe2\x90\xa3", 3);        /* ␣ */
            else if (c == '\n') PUT("\xe2\x86\xb5", 3);  /* ↵ */
            else if (c == '\t') PUT("\xe2\x86\x92", 3);  /* → */
            else if (c == '\r') PUT("\xe2\x90\x8d", 3);  /* ␍ */
            else if (l && (c >= 0x20 && c != 0x7f)) {
                PUT((const char *)p + i, (size_t)l);
                i += (size_t)l;
                continue;
            } else {
                int k = snprintf(tmp, sizeof tmp, "<0x%02X>", c);
                PUT(tmp, (size_t)k);
            }
            i++;
        }
    }
#undef PUT
    if (size)
        buf[o < size ? o : size - 1] = 0;
    return o;
}

int tl_tokenizer_find(const tl_tokenizer *t, const char *token) { return token ? str_map_get(t, token) : -1; }
int tl_tokenizer_vocab_size(const tl_tokenizer *t) { return t->n_vocab; }
int tl_tokenizer_is_special(const tl_tokenizer *t, int id) { return id >= 0 && id < t->n_vocab && t->special[id] == 1; }
int tl_tokenizer_bos(const tl_tokenizer *t) { return t->bos; }
int tl_tokenizer_eos(const tl_tokenizer *t) { return t->eos; }
const char *tl_tokenizer_bos_token(const tl_tokenizer *t) { return t->bos_token; }
const char *tl_tokenizer_eos_token(const tl_tokenizer *t) { return t->eos_token; }

const char *tl_tokenizer_default_dir(void)
{
    const char *env = getenv("TOKENLOOP_MODEL");
    if (env && *env)  /* asked for by name: used as it is, an error shows if it has no tokenizer */
        return env;
    static char found[4096];
    tl_error e;
    if (tl_paths_default_tokenizer(found, sizeof found, &e) == 0)
        return found;
    return TL_SOURCE_DIR "/assets/tokenizer";
}
