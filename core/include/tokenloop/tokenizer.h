/* A Hugging Face byte-level BPE tokenizer (Llama 3, GPT-2, Qwen ...) read from a model
 * directory's tokenizer.json and tokenizer_config.json. Ids match transformers'
 * PreTrainedTokenizerFast: added/special tokens written in the text are matched first, then
 * the pre-tokenizer regex splits the rest, then BPE. */
#ifndef TOKENLOOP_TOKENIZER_H
#define TOKENLOOP_TOKENIZER_H

#include <stddef.h>
#include "tokenloop/error.h"
#include "tokenloop/span.h"

typedef struct tl_tokenizer tl_tokenizer;

enum {
    TL_TOK_ADD_BOS = 1,           /* apply the post-processor (add_special_tokens=True) */
    TL_TOK_NO_PARSE_SPECIAL = 2,  /* special-token literals are plain text (untrusted input) */
};

/* dir holds tokenizer.json (required) and tokenizer_config.json (optional). */
int tl_tokenizer_load(tl_tokenizer **tok, const char *dir, tl_error *err);
void tl_tokenizer_free(tl_tokenizer *tok);

/* text must be valid UTF-8. *ids is malloc'ed (free it); starts, if not NULL, receives a malloc'ed
 * array with the byte offset in text where each token begins: tokens the post-processor puts
 * before the text get 0, after it len; approximate only where a normalizer (NFC ...) changed
 * the text. Thread-safe: encode, decode and the lookups never modify the tokenizer. */
int tl_tokenizer_encode(const tl_tokenizer *tok, const char *text, size_t len, int flags,
                        int **ids, int *n, tl_error *err);
int tl_tokenizer_encode_offsets(const tl_tokenizer *tok, const char *text, size_t len, int flags,
                                int **ids, size_t **starts, int *n, tl_error *err);
/* As tl_tokenizer_encode, but a special token whose text overlaps one of the ranges plain[i]
 * of text is encoded as plain text there: message content typed by a user, while the
 * template's own markers stay special. Everything else (splits, merges) is as in one encode of
 * the whole text, so content without special-token strings gets the same ids; n_plain 0 is
 * tl_tokenizer_encode. */
int tl_tokenizer_encode_plain(const tl_tokenizer *tok, const char *text, size_t len, int flags,
                              const tl_span *plain, size_t n_plain, int **ids, int *n, tl_error *err);

/* The bytes the ids stand for (special tokens as their text), NUL-terminated and malloc'ed.
 * When the bytes end inside a UTF-8 character, that unfinished tail is left out of *text and its
 * length (1..3) goes to *incomplete_tail (else 0): a streamer holds those bytes back. Invalid
 * UTF-8 elsewhere is kept byte for byte. Ids out of range: error. */
int tl_tokenizer_decode(const tl_tokenizer *tok, const int *ids, int n, char **text, size_t *len,
                        int *incomplete_tail, tl_error *err);

/* Raw bytes of one token (not NUL-terminated); NULL when id is out of range. */
const char *tl_tokenizer_piece(const tl_tokenizer *tok, int id, size_t *len);
/* Hugging Face's token string ("Ġhello", "<|eot_id|>"), as convert_ids_to_tokens gives it. */
const char *tl_tokenizer_token(const tl_tokenizer *tok, int id);
/* Printable form for the TUI: space ␣, newline ↵, tab →, CR ␍, other control bytes and bytes
 * that are not valid UTF-8 on their own as <0xNN>. snprintf semantics: returns the full length. */
size_t tl_tokenizer_display(const tl_tokenizer *tok, int id, char *buf, size_t size);

/* Id of a token by its Hugging Face string (added tokens by content); -1 when absent. */
int tl_tokenizer_find(const tl_tokenizer *tok, const char *token);
int tl_tokenizer_vocab_size(const tl_tokenizer *tok);  /* highest id + 1 */
int tl_tokenizer_is_special(const tl_tokenizer *tok, int id);
/* From tokenizer_config.json; -1 / NULL when not set. */
int tl_tokenizer_bos(const tl_tokenizer *tok);
int tl_tokenizer_eos(const tl_tokenizer *tok);
const char *tl_tokenizer_bos_token(const tl_tokenizer *tok);
const char *tl_tokenizer_eos_token(const tl_tokenizer *tok);

/* $TOKENLOOP_MODEL when set (as it is), else tl_paths_default_tokenizer(), else the source tree's
 * assets/tokenizer. The result may live in a static buffer: call it from one thread. */
const char *tl_tokenizer_default_dir(void);

#endif
