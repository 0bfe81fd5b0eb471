/* Growing arrays and text, one way for every caller. */
#ifndef TOKENLOOP_BUF_H
#define TOKENLOOP_BUF_H

#include <stddef.h>

/* Room for `need` elements of `elem` bytes: p (holding *cap of them) itself when it has it,
 * else p reallocated to the smallest doubling of *cap (of `first` when *cap is 0) that fits,
 * with *cap set to it. NULL when memory runs out: p and *cap are then untouched and p is
 * still the caller's to free. */
void *tl_grow(void *p, size_t *cap, size_t need, size_t elem, size_t first);

/* Text built a piece at a time, always NUL-terminated once non-empty. When memory runs out
 * the text is freed (p NULL) and oom set; later calls then do nothing. {0} is empty. */
typedef struct {
    char *p;
    size_t n, cap;
    int oom;
} tl_strbuf;

void tl_strbuf_put(tl_strbuf *b, const char *s, size_t n);
void tl_strbuf_printf(tl_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
