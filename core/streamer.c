/* TextStreamer (transformers/generation/streamers.py), transcribed, and the serving-stack
 * variant. See streamer.h. */
#include "tokenloop/streamer.h"

#include <stdlib.h>
#include <string.h>

typedef struct buf {
    char *p;
    size_t n, cap;
} buf;

static int buf_reserve(buf *b, size_t extra)
{
    if (b->n + extra + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->n + extra + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

static int buf_add(buf *b, const char *s, size_t n)
{
    if (buf_reserve(b, n)) return -1;
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}

static void buf_set(buf *b, const char *s, size_t n) { b->n = 0; buf_add(b, s, n); }
static const char *buf_str(const buf *b) { return b->p ? b->p : ""; }

int tl_is_chinese_char(unsigned cp)
{
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
           (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
           (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

/* Length of the valid UTF-8 sequence starting at b[0] (1..4), or -k where k (>= 1) is the
 * length of the maximal valid-but-unfinished prefix (the bytes one U+FFFD replaces). *trunc
 * tells whether it failed only because the input ended. */
static int utf8_seq(const unsigned char *b, size_t n, int *trunc)
{
    *trunc = 0;
    unsigned c = b[0];
    int need;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return -1;
    }
    for (int i = 1; i <= need; i++) {
        if ((size_t)i >= n) {
            *trunc = 1;
            return -i;
        }
        unsigned d = b[i];
        unsigned l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
        if (d < l || d > h) return -i;
    }
    return need + 1;
}

int tl_utf8_char_len(const char *s, size_t n)
{
    int trunc;
    int r = n ? utf8_seq((const unsigned char *)s, n, &trunc) : 0;
    return r > 0 ? r : 0;
}

size_t tl_utf8_incomplete_tail(const char *s, size_t n)
{
    const unsigned char *b = (const unsigned char *)s;
    for (size_t k = 1; k <= 3 && k <= n; k++) {
        size_t at = n - k;
        if ((b[at] & 0xC0) == 0x80) continue;   /* a continuation byte: look further back */
        int trunc;
        int r = utf8_seq(b + at, k, &trunc);
        return (r < 0 && trunc && (size_t)(-r) == k) ? k : 0;
    }
    return 0;
}

/* The decoding into out (room for n * 3 + 1: one byte becomes at most 3, U+FFFD); returns
 * its length. */
static size_t replace_into(char *out, const char *s, size_t n, size_t *n_chars)
{
    const unsigned char *b = (const unsigned char *)s;
    size_t o = 0, chars = 0;
    for (size_t i = 0; i < n;) {
        int trunc;
        int r = utf8_seq(b + i, n - i, &trunc);
        if (r > 0) {
            memcpy(out + o, b + i, (size_t)r);
            o += (size_t)r;
            i += (size_t)r;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i += (size_t)(-r);
        }
        chars++;
    }
    out[o] = 0;
    if (n_chars) *n_chars = chars;
    return o;
}

char *tl_utf8_decode_replace(const char *s, size_t n, size_t *out_len, size_t *n_chars)
{
    char *out = malloc(n * 3 + 1);
    if (!out) return NULL;
    size_t o = replace_into(out, s, n, n_chars);
    if (out_len) *out_len = o;
    return out;
}

static unsigned decode_cp(const unsigned char *b)
{
    if (b[0] < 0x80) return b[0];
    if (b[0] < 0xE0) return ((b[0] & 0x1Fu) << 6) | (b[1] & 0x3Fu);
    if (b[0] < 0xF0) return ((b[0] & 0x0Fu) << 12) | ((b[1] & 0x3Fu) << 6) | (b[2] & 0x3Fu);
    return ((b[0] & 0x07u) << 18) | ((b[1] & 0x3Fu) << 12) | ((b[2] & 0x3Fu) << 6) | (b[3] & 0x3Fu);
}

static size_t cp_len(unsigned char c) { return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4; }

/* Whether any of clean_up_text's patterns occurs: each starts with a space, then one of
 * . ? ! , ' or n't. When none does, no replacement makes one, and the ten passes can go. */
static int has_clean_up_pattern(const char *p, size_t n)
{
    for (const char *q = n ? memchr(p, ' ', n) : NULL; q; q = memchr(q + 1, ' ', n - (size_t)(q + 1 - p))) {
        size_t left = n - (size_t)(q - p) - 1;
        if (!left) break;
        char c = q[1];
        if (c == '.' || c == '?' || c == '!' || c == ',' || c == '\'') return 1;
        if (c == 'n' && left >= 3 && q[2] == '\'' && q[3] == 't') return 1;
    }
    return 0;
}

/* transformers' clean_up_tokenization: Python str.replace, one pattern after another. */
static void clean_up_text(buf *t)
{
    if (!has_clean_up_pattern(t->p, t->n)) return;
    static const char *pat[][2] = {
        {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
        {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
    };
    for (size_t k = 0; k < sizeof pat / sizeof pat[0]; k++) {
        size_t pl = strlen(pat[k][0]), rl = strlen(pat[k][1]), o = 0;
        if (!t->n) return;
        for (size_t i = 0; i < t->n;) {
            if (i + pl <= t->n && !memcmp(t->p + i, pat[k][0], pl)) {
                memmove(t->p + o, pat[k][1], rl);   /* rl < pl, so o + rl <= i */
                o += rl;
                i += pl;
            } else {
                t->p[o++] = t->p[i++];
            }
        }
        t->n = o;
        t->p[o] = 0;
    }
}

struct tl_streamer {
    tl_piece_source src;
    tl_streamer_opts o;
    char **stop;
    size_t *stop_len;
    /* HF */
    int *cache;
    size_t n_cache, cap_cache;
    buf raw;                    /* the cache's bytes, one piece added per token */
    buf text;                   /* the cache decoded (each put, reused) */
    size_t *cps, cap_cps;       /* offsets of text's code points (reused) */
    size_t print_len;           /* code points */
    int next_is_prompt;
    /* server */
    buf bytes;                  /* everything not skipped */
    size_t emitted;             /* bytes of `bytes` printed */
    int stopped_at_string;
    /* both */
    buf printed, held, output;
    int reason;
};

tl_streamer *tl_streamer_create(tl_piece_source src, const tl_streamer_opts *opts)
{
    tl_streamer *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->src = src;
    if (opts) s->o = *opts;
    s->o.stop = NULL;
    if (opts && opts->n_stop > 0) {
        s->stop = calloc((size_t)opts->n_stop, sizeof *s->stop);
        s->stop_len = calloc((size_t)opts->n_stop, sizeof *s->stop_len);
        if (!s->stop || !s->stop_len) {
            tl_streamer_free(s);
            return NULL;
        }
        for (int i = 0; i < opts->n_stop; i++) {
            s->stop[i] = strdup(opts->stop[i] ? opts->stop[i] : "");
            if (!s->stop[i]) {
                s->o.n_stop = i;
                tl_streamer_free(s);
                return NULL;
            }
            s->stop_len[i] = strlen(s->stop[i]);
        }
    } else {
        s->o.n_stop = 0;
    }
    tl_streamer_reset(s);
    return s;
}

void tl_streamer_free(tl_streamer *s)
{
    if (!s) return;
    for (int i = 0; s->stop && i < s->o.n_stop; i++) free(s->stop[i]);
    free(s->stop);
    free(s->stop_len);
    free(s->cache);
    free(s->raw.p);
    free(s->text.p);
    free(s->cps);
    free(s->bytes.p);
    free(s->printed.p);
    free(s->held.p);
    free(s->output.p);
    free(s);
}

void tl_streamer_reset(tl_streamer *s)
{
    s->n_cache = 0;
    s->raw.n = 0;
    s->print_len = 0;
    s->next_is_prompt = 1;
    s->bytes.n = 0;
    s->emitted = 0;
    s->stopped_at_string = 0;
    buf_set(&s->printed, "", 0);
    buf_set(&s->held, "", 0);
    buf_set(&s->output, "", 0);
    buf_set(&s->bytes, "", 0);
    s->reason = 0;
}

static int piece(tl_streamer *s, int id, buf *out)
{
    size_t len = 0;
    int special = 0;
    const char *p = s->src.bytes(s->src.ctx, id, &len, &special);
    if (!p) return -1;
    if (special && s->o.skip_special_tokens) return 0;
    return buf_add(out, p, len);
}

/* tokenizer.decode(token_cache): bytes (s->raw, kept as tokens come) -> str (errors="replace")
 * -> clean-up, into s->text; offsets of each code point to s->cps (n + 1 entries). */
static int decode_cache(tl_streamer *s, size_t *n_cp, int *incomplete)
{
    const buf *raw = &s->raw;
    buf *text = &s->text;
    *incomplete = tl_utf8_incomplete_tail(raw->p, raw->n) > 0;
    text->n = 0;
    if (buf_reserve(text, raw->n * 3)) return -1;
    text->n = replace_into(text->p, raw->p ? raw->p : "", raw->n, NULL);
    if (s->o.clean_up_spaces) clean_up_text(text);
    if (text->n + 2 > s->cap_cps) {
        size_t cap = text->n + 64;
        size_t *c = realloc(s->cps, sizeof(size_t) * cap);
        if (!c) return -1;
        s->cps = c;
        s->cap_cps = cap;
    }
    size_t k = 0;
    for (size_t i = 0; i < text->n; i += cp_len((unsigned char)text->p[i])) s->cps[k++] = i;
    s->cps[k] = text->n;
    *n_cp = k;
    return 0;
}

/* The pieces of ids added to s->raw; on failure s->raw is as it was. */
static int add_pieces(tl_streamer *s, const int *ids, size_t n)
{
    size_t before = s->raw.n;
    for (size_t i = 0; i < n; i++)
        if (piece(s, ids[i], &s->raw)) {
            s->raw.n = before;
            return -1;
        }
    return 0;
}

static int put_hf(tl_streamer *s, const int *ids, int n)
{
    if (s->n_cache + (size_t)n > s->cap_cache) {
        size_t cap = s->cap_cache ? s->cap_cache : 64;
        while (cap < s->n_cache + (size_t)n) cap *= 2;
        int *c = realloc(s->cache, cap * sizeof(int));
        if (!c) return -1;
        s->cache = c;
        s->cap_cache = cap;
    }
    memcpy(s->cache + s->n_cache, ids, sizeof(int) * (size_t)n);
    size_t raw_before = s->raw.n;
    if (add_pieces(s, ids, (size_t)n)) return -1;
    s->n_cache += (size_t)n;

    size_t ncp = 0;
    int incomplete = 0;
    if (decode_cache(s, &ncp, &incomplete)) {
        s->n_cache -= (size_t)n;
        s->raw.n = raw_before;
        return -1;
    }
    const buf text = s->text;
    const size_t *cp = s->cps;
    size_t from = s->print_len < ncp ? s->print_len : ncp;
    if (text.n && text.p[text.n - 1] == '\n') {
        buf_set(&s->printed, text.p + cp[from], text.n - cp[from]);
        s->n_cache = 0;
        s->raw.n = 0;
        s->print_len = 0;
        buf_set(&s->held, "", 0);
        incomplete = 0;
    } else {
        size_t to;   /* end of the printable slice, in code points */
        if (ncp && tl_is_chinese_char(decode_cp((unsigned char *)text.p + cp[ncp - 1]))) {
            to = ncp;
        } else {
            size_t r = 0;   /* rfind(" ") + 1 */
            for (size_t k = ncp; k > 0; k--)
                if (text.p[cp[k - 1]] == ' ') { r = k; break; }
            to = r;
        }
        if (to < from) to = from;   /* Python: text[a:b] with b < a is "" */
        buf_set(&s->printed, text.p + cp[from], cp[to] - cp[from]);
        s->print_len += to - from;
        size_t h = s->print_len < ncp ? s->print_len : ncp;
        buf_set(&s->held, text.p + cp[h], text.n - cp[h]);
    }
    s->reason = 0;
    if (s->held.n) s->reason = TL_HOLD_PARTIAL_WORD | (incomplete ? TL_HOLD_INCOMPLETE_UTF8 : 0);
    return 0;
}

/* Server mode: print all but an unfinished UTF-8 tail and a tail that may become a stop
 * string; at a complete stop string, print what precedes it and nothing after. */
static void server_update(tl_streamer *s, int final)
{
    const char *b = buf_str(&s->bytes);
    size_t n = s->bytes.n, limit = n;
    s->reason = 0;
    if (!s->stopped_at_string) {
        size_t first = (size_t)-1;
        for (int k = 0; k < s->o.n_stop; k++) {
            size_t L = s->stop_len[k];
            if (!L) continue;
            for (size_t i = s->emitted; i + L <= n; i++)
                if (!memcmp(b + i, s->stop[k], L)) {
                    if (i < first) first = i;
                    break;
                }
        }
        if (first != (size_t)-1) {
            s->stopped_at_string = 1;
            s->bytes.n = n = first;   /* what follows the stop string is never printed */
            limit = first;
            final = 1;
        }
    } else {
        limit = n;
    }
    if (!final) {
        size_t tail = tl_utf8_incomplete_tail(b, n);
        if (tail) s->reason |= TL_HOLD_INCOMPLETE_UTF8;
        size_t safe = n - tail, hold = 0;
        for (int k = 0; k < s->o.n_stop; k++) {
            for (size_t L = s->stop_len[k]; L > 0; L--) {   /* longest suffix = prefix of stop */
                if (L <= n - s->emitted && L > hold && !memcmp(b + n - L, s->stop[k], L)) {
                    hold = L;
                    break;
                }
            }
        }
        if (hold) s->reason |= TL_HOLD_STOP_PREFIX;
        limit = n - (hold > n - safe ? hold : n - safe);
        if (limit < s->emitted) limit = s->emitted;
    }
    size_t dl;
    char *d = tl_utf8_decode_replace(b + s->emitted, limit - s->emitted, &dl, NULL);
    buf_set(&s->printed, d ? d : "", d ? dl : 0);
    free(d);
    s->emitted = limit;
    d = tl_utf8_decode_replace(b + limit, n - limit, &dl, NULL);
    buf_set(&s->held, d ? d : "", d ? dl : 0);
    free(d);
    if (final) {
        s->emitted = n;
        buf_set(&s->held, "", 0);
        s->reason = 0;
    }
}

int tl_streamer_put(tl_streamer *s, const int *ids, int n)
{
    if (s->o.skip_prompt && s->next_is_prompt) {
        s->next_is_prompt = 0;
        buf_set(&s->printed, "", 0);
        return 0;
    }
    int rc;
    if (s->o.mode == TL_STREAM_SERVER) {
        rc = 0;
        size_t before = s->bytes.n;
        for (int i = 0; i < n && !rc; i++) rc = piece(s, ids[i], &s->bytes);
        if (rc) {
            s->bytes.n = before;
            return -1;
        }
        if (s->stopped_at_string) {
            s->bytes.n = before;
            buf_set(&s->printed, "", 0);
            return 0;
        }
        server_update(s, 0);
    } else {
        rc = put_hf(s, ids, n);
        if (rc) return -1;
    }
    return buf_add(&s->output, s->printed.p, s->printed.n);
}

int tl_streamer_end(tl_streamer *s)
{
    if (s->o.mode == TL_STREAM_SERVER) {
        server_update(s, 1);
    } else {
        if (s->n_cache) {
            size_t ncp = 0;
            int incomplete;
            if (decode_cache(s, &ncp, &incomplete)) return -1;
            size_t from = s->print_len < ncp ? s->print_len : ncp;
            buf_set(&s->printed, s->text.p + s->cps[from], s->text.n - s->cps[from]);
        } else {
            buf_set(&s->printed, "", 0);
        }
        s->n_cache = 0;
        s->raw.n = 0;
        s->print_len = 0;
        buf_set(&s->held, "", 0);
        s->reason = 0;
    }
    s->next_is_prompt = 1;
    return buf_add(&s->output, s->printed.p, s->printed.n);
}

int tl_streamer_end_at(tl_streamer *s, size_t at)
{
    if (s->o.mode == TL_STREAM_SERVER && at < s->bytes.n) {
        if (at < s->emitted) at = s->emitted;
        s->bytes.n = at;
    }
    return tl_streamer_end(s);
}

const char *tl_streamer_printed(const tl_streamer *s, size_t *len)
{
    if (len) *len = s->printed.n;
    return buf_str(&s->printed);
}

const char *tl_streamer_held(const tl_streamer *s, size_t *len)
{
    if (len) *len = s->held.n;
    return buf_str(&s->held);
}

int tl_streamer_hold_reason(const tl_streamer *s) { return s->reason; }

const char *tl_streamer_output(const tl_streamer *s, size_t *len)
{
    if (len) *len = s->output.n;
    return buf_str(&s->output);
}

char *tl_streamer_decode(tl_piece_source src, const int *ids, int n, int skip_special, int clean_up,
                         size_t *len)
{
    buf raw = {0}, text = {0};
    buf_set(&raw, "", 0);
    for (int i = 0; i < n; i++) {
        size_t l = 0;
        int special = 0;
        const char *p = src.bytes(src.ctx, ids[i], &l, &special);
        if (p && !(special && skip_special)) buf_add(&raw, p, l);
    }
    size_t dl;
    char *d = tl_utf8_decode_replace(buf_str(&raw), raw.n, &dl, NULL);
    free(raw.p);
    if (!d) return NULL;
    text.p = d;
    text.n = dl;
    text.cap = dl + 1;
    if (clean_up) clean_up_text(&text);
    if (len) *len = text.n;
    return text.p;
}
