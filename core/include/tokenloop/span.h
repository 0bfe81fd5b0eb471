/* A byte range [start, end) of a text: a render's message content, a tokenizer's plain-text
 * ranges. */
#ifndef TOKENLOOP_SPAN_H
#define TOKENLOOP_SPAN_H

#include <stddef.h>

typedef struct tl_span {
    size_t start, end;
} tl_span;

#endif
