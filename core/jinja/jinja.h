/* Private interface between the Jinja engine (core/jinja/engine.c) and the chat layer. */
#ifndef TOKENLOOP_JINJA_H
#define TOKENLOOP_JINJA_H

#include <stddef.h>

#include "tokenloop/template.h"

/* One template variable given as JSON text. mark_content: strings under a "content" key of
 * the value's objects (and the "text" of content parts) count as message content for the
 * provenance spans. */
typedef struct tl_jinja_var {
    const char *name;
    const char *json;
    int mark_content;
    int chat_messages;          /* the messages of apply_chat_template: prepared as it does (chat_prep.c) */
    const char *continue_tag;   /* with chat_messages: appended to the final message's text */
} tl_jinja_var;

int tl_jinja_render_vars(const tl_template *tpl, const tl_jinja_var *vars, size_t n_vars,
                         char **out, size_t *out_len, tl_span **spans, size_t *n_spans,
                         tl_error *err);

/* Python's str.strip() on UTF-8 text, with its Unicode whitespace (str.isspace): where s[i, n)
 * begins after the leading whitespace, and where s[lo, e) ends before the trailing one. The
 * lexer's whitespace control and the chat layer's continue_final_message use them. */
size_t jinja_ws_fwd(const char *s, size_t i, size_t n);
size_t jinja_ws_back(const char *s, size_t lo, size_t e);

#endif
