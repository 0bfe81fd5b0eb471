/* Byte-level BPE as Hugging Face tokenizers does it: added tokens split out first (leftmost,
 * longest), the pre-tokenizer chain (Split regexes, ByteLevel, Digits) cuts the rest into
 * pre-tokens, and each pre-token is merged by rank. Work happens on raw bytes: GPT-2's
 * byte<->unicode mapping is a bijection, so token strings are turned into bytes once, at load.
 * This file: decoding ids to bytes and the lookups; loading is tok_load.c, encoding
 * tok_encode.c, the maps tok_maps.c. */
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

int tl_tokenizer_load(tl_tokenizer **out, const char *dir, tl_error *err)
{
    *out = NULL;
    if (tl_model_is_gguf(dir))   /* a GGUF file carries its tokenizer: tok_gguf.c */
        return tl_tokenizer_load_gguf(out, dir, err);
    return tl_tokenizer_load_dir(out, dir, err);
}

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
        memcpy(out + o, tl_tok_piece_ptr(t, ids[i]), t->piece_len[ids[i]]);
        o += t->piece_len[ids[i]];
    }
    int tail = (int)tl_utf8_incomplete_tail(out, o);
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
    return tl_tok_piece_ptr(t, id);
}

const char *tl_tokenizer_token(const tl_tokenizer *t, int id)
{
    if (id < 0 || id >= t->n_vocab || !t->present[id])
        return NULL;
    return tl_tok_tokstr_ptr(t, id);
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
            int l = tl_utf8_char_len((const char *)(p + i), n - i);
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

int tl_tokenizer_find(const tl_tokenizer *t, const char *token) { return token ? tl_tok_str_map_get(t, token) : -1; }
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
