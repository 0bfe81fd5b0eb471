/* What a streamer prints and what it holds back, step by step.
 * TL_STREAM_HF is transformers' TextStreamer: decode the whole token cache after every put;
 * a text ending in "\n" is printed and the cache reset; a last character that is a CJK ideograph
 * prints everything; otherwise print up to and including the last space. Positions count code
 * points of the decoded text (an unfinished UTF-8 tail decodes to U+FFFD, as Python's
 * errors="replace"), so the U+FFFD stays held back until its bytes complete.
 * TL_STREAM_SERVER is what serving stacks do: print every byte at once except an unfinished
 * UTF-8 tail and a tail that could still grow into a stop string. */
#ifndef TOKENLOOP_STREAMER_H
#define TOKENLOOP_STREAMER_H

#include <stddef.h>

typedef enum { TL_STREAM_HF = 0, TL_STREAM_SERVER = 1 } tl_stream_mode;

/* Why the held-back buffer is held (bit flags; 0 when nothing is held). */
enum {
    TL_HOLD_PARTIAL_WORD = 1,     /* HF: no space (or newline, or CJK) after it yet */
    TL_HOLD_INCOMPLETE_UTF8 = 2,  /* the bytes end inside a UTF-8 character */
    TL_HOLD_STOP_PREFIX = 4,      /* the tail is the beginning of a stop string */
};

/* Where the streamer gets each token's bytes (a tokenizer, or a test's table). */
typedef struct tl_piece_source {
    void *ctx;
    /* Bytes of id (not NUL-terminated, may be part of a UTF-8 character); *special set for
     * special tokens. NULL for an unknown id. */
    const char *(*bytes)(void *ctx, int id, size_t *len, int *special);
} tl_piece_source;

typedef struct tl_streamer_opts {
    tl_stream_mode mode;
    int skip_prompt;            /* the first put (the prompt) prints nothing */
    int skip_special_tokens;    /* decode(..., skip_special_tokens=True) */
    int clean_up_spaces;        /* clean_up_tokenization_spaces (Llama 3 sets it) */
    const char *const *stop;    /* server mode holds back a tail that may grow into one */
    int n_stop;
} tl_streamer_opts;

typedef struct tl_streamer tl_streamer;

tl_streamer *tl_streamer_create(tl_piece_source src, const tl_streamer_opts *opts);
void tl_streamer_free(tl_streamer *s);
/* Back to the state after creation (and restores next_tokens_are_prompt). */
void tl_streamer_reset(tl_streamer *s);

/* TextStreamer.put(ids): the prompt is one put, each generated token one more. 0 or -1
 * (unknown id). */
int tl_streamer_put(tl_streamer *s, const int *ids, int n);
/* TextStreamer.end(): flushes what is held. */
int tl_streamer_end(tl_streamer *s);
/* Server mode only: the generation stopped at a stop string that starts at byte offset `at` of
 * the generated text; print what comes before it and drop the rest (as llama.cpp's server). */
int tl_streamer_end_at(tl_streamer *s, size_t at);

/* Text printed by the last put/end (NUL-terminated; valid until the next call). */
const char *tl_streamer_printed(const tl_streamer *s, size_t *len);
/* The held-back buffer after the last call, as decoded (U+FFFD for an unfinished tail). */
const char *tl_streamer_held(const tl_streamer *s, size_t *len);
int tl_streamer_hold_reason(const tl_streamer *s);
/* Everything printed since creation/reset. */
const char *tl_streamer_output(const tl_streamer *s, size_t *len);

/* tokenizer.decode(ids) as the streamer does it: bytes joined (specials dropped when asked),
 * errors="replace", then the clean-up. malloc'd; NULL on failure. Unknown ids decode to "". */
char *tl_streamer_decode(tl_piece_source src, const int *ids, int n, int skip_special, int clean_up,
                         size_t *len);

/* Python's bytes.decode("utf-8", errors="replace"): malloc'd UTF-8, U+FFFD per maximal invalid
 * subpart. *n_chars (may be NULL) receives the number of code points. */
char *tl_utf8_decode_replace(const char *b, size_t n, size_t *out_len, size_t *n_chars);
/* Length of the UTF-8 character at s (n bytes left, 1..4), or 0 when the bytes there are not a
 * whole valid one. */
int tl_utf8_char_len(const char *s, size_t n);
/* Length of an unfinished UTF-8 character at the end of b (0..3). */
size_t tl_utf8_incomplete_tail(const char *b, size_t n);
/* transformers' TextStreamer._is_chinese_char. */
int tl_is_chinese_char(unsigned cp);

#endif
