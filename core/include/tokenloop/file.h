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

/* A regular, non-empty file mapped read-only (weights are read in place, never copied):
 * *map and *size, or -1 with "<path>: cannot open: ...", "not a regular file", "file is
 * empty", "cannot map: ...". Release with munmap(*map, *size). */
int tl_file_map(const char *path, const void **map, size_t *size, tl_error *err);

#endif
