/* The tokenizer's shared machinery: hashing, UTF-8 checks, the byte arena and the three maps
 * (raw bytes -> id, HF token string -> id, merge pair -> rank), used by loading (tok_load.c),
 * encoding (tok_encode.c) and lookups (tokenizer.c). */
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

size_t tl_tok_pow2_at_least(size_t n)
{
    size_t s = 16;
    while (s < n)
        s <<= 1;
    return s;
}

/* GPT-2's table: printable Latin-1 bytes stand for themselves, the other 68 bytes map in order to
 * U+0100.. . byte_of_cp inverts it for code points below 0x144. */
void tl_tok_byte_level_tables(int cp_of_byte[256], int byte_of_cp[0x144])
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

long tl_tok_utf8_first_invalid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        int l = tl_utf8_char_len((const char *)s + i, n - i);
        if (!l)
            return (long)i;
        i += (size_t)l;
    }
    return -1;
}


/* Arena of bytes addressed by offset (it moves when it grows). */
long tl_tok_arena_add(tl_tokenizer *t, const void *p, size_t n)
{
    char *a = tl_grow(t->arena, &t->arena_cap, t->arena_len + n + 1, 1, 1 << 20);
    if (!a)
        return -1;
    t->arena = a;
    long off = (long)t->arena_len;
    memcpy(t->arena + off, p, n);
    t->arena[off + (long)n] = 0;
    t->arena_len += n + 1;
    return off;
}

/* ---- maps: open addressing, slots hold id+1, keys are compared through the per-id arrays ---- */

/* A slot holds id + 1 in its low half and the key hash's high half as a tag, so a probe that
 * meets another key rarely reads that key's bytes (a cache miss each). */
#define SLOT(h, id) (((h) & 0xffffffff00000000ull) | (uint32_t)((id) + 1))
#define SLOT_ID(s) ((int)(uint32_t)(s) - 1)
#define SLOT_TAG_OK(s, h) ((((s) ^ (h)) >> 32) == 0)

int tl_tok_bytes_map_get(const tl_tokenizer *t, const void *key, size_t n)
{
    uint64_t h = hash_bytes(key, n);
    size_t mask = t->bytes_map_size - 1, i = h & mask;
    for (;;) {
        uint64_t s = t->bytes_map[i];
        if (!s)
            return -1;
        int id = SLOT_ID(s);
        if (SLOT_TAG_OK(s, h) && t->piece_len[id] == n && !memcmp(tl_tok_piece_ptr(t, id), key, n))
            return id;
        i = (i + 1) & mask;
    }
}

void tl_tok_bytes_map_put(tl_tokenizer *t, int id)
{
    size_t n = t->piece_len[id];
    uint64_t h = hash_bytes(tl_tok_piece_ptr(t, id), n);
    size_t mask = t->bytes_map_size - 1, i = h & mask;
    for (;;) {
        uint64_t s = t->bytes_map[i];
        if (!s || (SLOT_TAG_OK(s, h) && t->piece_len[SLOT_ID(s)] == n &&
                   !memcmp(tl_tok_piece_ptr(t, SLOT_ID(s)), tl_tok_piece_ptr(t, id), n))) {
            t->bytes_map[i] = SLOT(h, id);  /* a later entry with the same key wins */
            return;
        }
        i = (i + 1) & mask;
    }
}

int tl_tok_str_map_get(const tl_tokenizer *t, const char *key)
{
    uint64_t h = hash_bytes(key, strlen(key));
    size_t mask = t->str_map_size - 1, i = h & mask;
    for (;;) {
        uint64_t s = t->str_map[i];
        if (!s)
            return -1;
        if (SLOT_TAG_OK(s, h) && !strcmp(tl_tok_tokstr_ptr(t, SLOT_ID(s)), key))
            return SLOT_ID(s);
        i = (i + 1) & mask;
    }
}

void tl_tok_str_map_put(tl_tokenizer *t, int id)
{
    const char *k = tl_tok_tokstr_ptr(t, id);
    uint64_t h = hash_bytes(k, strlen(k));
    size_t mask = t->str_map_size - 1, i = h & mask;
    for (;;) {
        uint64_t s = t->str_map[i];
        if (!s || (SLOT_TAG_OK(s, h) && !strcmp(tl_tok_tokstr_ptr(t, SLOT_ID(s)), k))) {
            t->str_map[i] = SLOT(h, id);
            return;
        }
        i = (i + 1) & mask;
    }
}

const tl_merge *tl_tok_merge_get(const tl_tokenizer *t, int a, int b)
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

void tl_tok_merge_put(tl_tokenizer *t, int a, int b, int rank, int result)
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
