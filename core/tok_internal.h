/* The tokenizer's private layout, shared by core/tok*.c only. */
#ifndef TOKENLOOP_TOK_INTERNAL_H
#define TOKENLOOP_TOK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#define TL_TOK_MAX_PRE 8
#define TL_TOK_MAX_TEMPLATE 8

enum { TL_PRE_SPLIT, TL_PRE_PREFIX_SPACE };
enum { TL_SPLIT_REMOVED, TL_SPLIT_ISOLATED, TL_SPLIT_MERGED_PREV, TL_SPLIT_MERGED_NEXT, TL_SPLIT_CONTIGUOUS };

struct pcre2_real_code_8;

typedef struct {
    int kind;
    struct pcre2_real_code_8 *re;
    int behavior, invert, prefix_space, jit;
} tl_pretok;

typedef struct {
    uint64_t key;  /* left id << 32 | right id */
    int rank, result;  /* result < 0: empty slot */
} tl_merge;

typedef struct {
    int id;
    uint32_t off;  /* content in the arena */
    size_t len;
    unsigned char special, lstrip, rstrip, single_word, normalized;
} tl_added;

struct tl_tokenizer {
    int n_vocab;
    char *arena;
    size_t arena_len, arena_cap;
    uint32_t *piece_off, *piece_len, *tokstr_off;  /* per id: raw bytes and HF string in the arena */
    unsigned char *present, *special;              /* special: 1 special added token, 2 other added */
    uint64_t *bytes_map, *str_map;                 /* raw bytes -> id (BPE vocab); HF string -> id */
    size_t bytes_map_size, str_map_size;
    tl_merge *merge_map;
    size_t merge_map_size;
    int byte_id[256];
    int cp_of_byte[256], byte_of_cp[0x144];
    int ignore_merges;
    tl_added *added;
    int n_added;
    int *added_order, added_first[257];  /* by first byte, longest first: [first[c], first[c+1]) */
    int norm[TL_TOK_MAX_PRE], n_norm;  /* utf8proc option sets, applied in order */
    tl_pretok pre[TL_TOK_MAX_PRE];
    int n_pre;
    int prefix[TL_TOK_MAX_TEMPLATE], suffix[TL_TOK_MAX_TEMPLATE], n_prefix, n_suffix;
    struct pcre2_real_code_8 *word_re, *space_re;  /* \w and \s as HF's added tokens see them */
    int bos, eos;
    char *bos_token, *eos_token;
};

/* tok_maps.c: the machinery loading, encoding and lookups share */
size_t tl_tok_pow2_at_least(size_t n);
void tl_tok_byte_level_tables(int cp_of_byte[256], int byte_of_cp[0x144]);
long tl_tok_utf8_first_invalid(const unsigned char *s, size_t n);
long tl_tok_arena_add(struct tl_tokenizer *t, const void *p, size_t n);
int tl_tok_bytes_map_get(const struct tl_tokenizer *t, const void *key, size_t n);
void tl_tok_bytes_map_put(struct tl_tokenizer *t, int id);
int tl_tok_str_map_get(const struct tl_tokenizer *t, const char *key);
void tl_tok_str_map_put(struct tl_tokenizer *t, int id);
const tl_merge *tl_tok_merge_get(const struct tl_tokenizer *t, int a, int b);
void tl_tok_merge_put(struct tl_tokenizer *t, int a, int b, int rank, int result);
static inline const char *tl_tok_piece_ptr(const struct tl_tokenizer *t, int id) { return t->arena + t->piece_off[id]; }
static inline const char *tl_tok_tokstr_ptr(const struct tl_tokenizer *t, int id) { return t->arena + t->tokstr_off[id]; }

struct tl_error;
/* tok_load.c: loads from tokenizer.json text made elsewhere (text[len] writable; the text is
 * rewritten, not freed); bos_token and eos_token stand for tokenizer_config.json's (NULL: none);
 * what names the source in errors. */
int tl_tokenizer_load_text(struct tl_tokenizer **out, char *text, size_t len, const char *what,
                           const char *bos_token, const char *eos_token, struct tl_error *err);
/* tok_load.c: a model directory's tokenizer.json and tokenizer_config.json (tl_tokenizer_load
 * in tokenizer.c picks this or the GGUF file's). */
int tl_tokenizer_load_dir(struct tl_tokenizer **out, const char *dir, struct tl_error *err);
/* tok_gguf.c: the tokenizer a GGUF file carries (llama.cpp's gpt2 / llama-bpe). */
int tl_tokenizer_load_gguf(struct tl_tokenizer **out, const char *path, struct tl_error *err);

#endif
