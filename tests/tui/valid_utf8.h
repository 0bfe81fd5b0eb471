/* For the TUI's table tests: 1 when s is valid UTF-8 (Format_utf8Next's reading of it). */
#ifndef TL_TESTS_TUI_VALID_UTF8_H
#define TL_TESTS_TUI_VALID_UTF8_H

#include <string.h>

#include "format.h"

static inline int valid_utf8(const char *s)
{
    size_t len = strlen(s);
    for (size_t i = 0; i < len;) {
        int32_t cp;
        i += (size_t)Format_utf8Next(s + i, len - i, &cp);
        if (cp < 0)
            return 0;
    }
    return 1;
}

#endif
