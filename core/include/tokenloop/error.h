/* Errors travel as one line of text: "<file or argument>: <what is wrong>".
 * Functions that can fail take a tl_error* (may be NULL) and return 0 on success. */
#ifndef TOKENLOOP_ERROR_H
#define TOKENLOOP_ERROR_H

typedef struct tl_error {
    char msg[1024];
} tl_error;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
int tl_error_set(tl_error *err, const char *fmt, ...); /* always returns -1 */

#endif
