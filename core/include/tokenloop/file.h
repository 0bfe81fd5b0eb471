/* Reading a whole file, with one set of error messages for every caller. */
#ifndef TOKENLOOP_FILE_H
#define TOKENLOOP_FILE_H

#include <stddef.h>
#include "tokenloop/error.h"

/* *out: malloc'd, NUL-terminated; *len (may be NULL): its length. Files longer than max_bytes
 * are refused. Errors: "<path>: cannot open: <reason>", "<path>: larger than N bytes",
 * "<path>: cannot read: <reason>", "<path>: out of memory". */
int tl_file_read(const char *path, size_t max_bytes, char **out, size_t *len, tl_error *err);

/* The same for text handed on as a C string: a NUL byte anywhere is refused,
 * "<path>: a NUL byte at offset N". */
int tl_file_read_text(const char *path, size_t max_bytes, char **out, size_t *len, tl_error *err);

#endif
