/* Chat templates: a Jinja engine that renders Hugging Face chat templates byte for byte as
 * transformers' apply_chat_template does (Jinja2, trim_blocks, lstrip_blocks, loop controls,
 * raise_exception, strftime_now, tojson as json.dumps). */
#ifndef TOKENLOOP_TEMPLATE_H
#define TOKENLOOP_TEMPLATE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "tokenloop/error.h"
#include "tokenloop/span.h"

typedef struct tl_template tl_template;

/* Syntax errors read "template:LINE:COL: <what> near '<text>'". */
int tl_template_compile(const char *src, tl_template **out, tl_error *err);
void tl_template_free(tl_template *tpl);

/* context: a JSON object whose members become the template's variables (NULL: none). cJSON
 * keeps no difference between 1 and 1.0, so integral numbers become Python ints here;
 * tl_chat_render reads JSON text and keeps it.
 * *out is malloc'd, NUL-terminated; *out_len (may be NULL) is its length. A failed render
 * (raise_exception, an undefined value used where Jinja2 errors, a limit) returns -1. */
int tl_template_render(const tl_template *tpl, const cJSON *context, char **out, size_t *out_len,
                       tl_error *err);

typedef struct tl_chat_result {
    char *text;          /* the render, NUL-terminated */
    size_t len;
    tl_span *spans;      /* sorted, disjoint: bytes copied from message content */
    size_t n_spans;
} tl_chat_result;

/* One extra template variable: name = JSON value ("true", "[...]", "\"26 Jul 2024\""). */
typedef struct tl_template_var {
    const char *name;
    const char *json;
} tl_template_var;

/* Renders tpl as apply_chat_template does: messages (a JSON array), tools = None and
 * documents = None unless vars set them, add_generation_prompt, bos_token/eos_token (NULL: left
 * undefined), then vars, which override everything before them. */
int tl_chat_render(const tl_template *tpl, const char *messages_json,
                   const tl_template_var *vars, size_t n_vars, int add_generation_prompt,
                   const char *bos_token, const char *eos_token, tl_chat_result *out,
                   tl_error *err);
void tl_chat_result_free(tl_chat_result *r);

/* The same with apply_chat_template's continue_final_message: the render ends where the final
 * message's text ends (no end-of-turn marker after it), for the model to continue that message
 * rather than start a new one; incompatible with add_generation_prompt (ValueError). */
typedef struct tl_chat_opts {
    int add_generation_prompt;
    int continue_final_message;
    const char *bos_token, *eos_token;   /* NULL: left undefined */
} tl_chat_opts;
int tl_chat_render_opts(const tl_template *tpl, const char *messages_json, const tl_template_var *vars,
                        size_t n_vars, const tl_chat_opts *opts, tl_chat_result *out, tl_error *err);

/* Checks that text is what apply_chat_template takes as messages, and says what is wrong in
 * the words of the file, not of the template: a UTF-8 byte-order mark, JSON that ends early or
 * has text after it, a lone surrogate escape (\ud800 is no character; Python would carry it
 * to the tokenizer, which cannot encode it), not an array, a message that is not an object
 * with a string "role". 0 when fine; else -1 and err ("messages: ..." — callers prefix the
 * file name). */
int tl_chat_messages_check(const char *text, size_t len, tl_error *err);

/* From DIR/tokenizer_config.json: chat_template (a string, or a list of {name, template}, of
 * which "default" is taken) and bos_token/eos_token (strings or {"content": ...}); a missing
 * token is NULL, a missing template is an error. */
typedef struct tl_chat_config {
    char *template_src;
    char *bos_token;
    char *eos_token;
} tl_chat_config;

int tl_chat_config_load(const char *model_dir, tl_chat_config *out, tl_error *err);
void tl_chat_config_free(tl_chat_config *cfg);

/* strftime_now() uses the time in the environment variable TOKENLOOP_NOW (Unix seconds, UTC)
 * when it is set, so renders can be reproduced; otherwise the local time now. */

#endif
