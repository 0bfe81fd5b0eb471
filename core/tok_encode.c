/* Encoding: added tokens split out first (leftmost, longest), the pre-tokenizer chain (Split
 * regexes, ByteLevel, Digits) cuts the rest into pre-tokens, and each pre-token is merged by rank
 * with a heap of candidate pairs. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenloop/tokenizer.h"
#include "tokenloop/streamer.h"
#include "tokenloop/paths.h"
#include "tokenloop/file.h"
#include "tokenloop/buf.h"

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

/* ids and where each starts in the text, growable */
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
    span *v = tl_grow(a->v, &a->cap, a->n + 1, sizeof *v, 64);
    if (!v)
        return -1;
    a->v = v;
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
    hent *h = tl_grow(s->heap, &s->heap_cap, s->heap_n + 1, sizeof *h, 256);
    if (!h)
        return -1;
    s->heap = h;
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
    const tl_merge *m = tl_tok_merge_get(t, s->syms[pos].id, s->syms[nx].id);
    return m ? heap_push(s, (hent){m->rank, pos, m->result}) : 0;
}

/* One pre-token to ids: the whole of it when it is a token and ignore_merges is set, else BPE
 * merging the lowest-ranked adjacent pair first (leftmost on ties). */
static int bpe(const tl_tokenizer *t, scratch *s, const span *sp, idvec *out)
{
    if (t->ignore_merges || sp->n == 1) {
        int id = tl_tok_bytes_map_get(t, sp->p, sp->n);
        if (id >= 0)
            return idvec_push(out, id, sp->src < 0 ? 0 : (size_t)sp->src);
    }
    sym *syms = tl_grow(s->syms, &s->syms_cap, sp->n, sizeof *syms, 256);
    if (!syms)
        return -1;
    s->syms = syms;
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
        const tl_merge *m = tl_tok_merge_get(t, a->id, b->id);
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
    seg *v = tl_grow(s->segs, &s->segs_cap, s->segs_n + 1, sizeof *v, 256);
    if (!v)
        return -1;
    s->segs = v;
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
                int l = tl_utf8_char_len((const char *)(sp->p + ms), sp->n - ms);
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
                me += (size_t)tl_utf8_char_len((const char *)(p + me), n - me);
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
    long bad = tl_tok_utf8_first_invalid(text, len);
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
