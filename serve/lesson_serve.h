/* The chat server the lesson player borrows for serve_request (a tl_lesson_server_fn). */
#ifndef TOKENLOOP_LESSON_SERVE_H
#define TOKENLOOP_LESSON_SERVE_H

#include "tokenloop/lesson.h"

int lesson_serve_request(void *ctx, tl_session *s, tl_lesson_served *out, tl_error *err);

#endif
