/* The small JSON reader tokenizer.json goes through (core/tok_json.c). Oracle: it agrees with
 * cJSON on whether the text is JSON at all, and on the number of top-level members. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fuzz.h"
#include "tok_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    tj_doc d = {0};
    size_t off = 0;
    const char *why = NULL;
    int rc = tj_parse(&d, text, size, &off, &why);
    if (rc && (!why || off > size)) tlf_fail("tj_parse failed without a reason or offset");
    if (!rc && !memchr(data, 0, size)) {
        /* cJSON stops at a NUL, so compare only NUL-free texts; tj accepts what JSON accepts */
        cJSON *j = cJSON_ParseWithLengthOpts((const char *)data, size, NULL, 1);
        if (!j) {
            /* cJSON refuses nesting deeper than 1000 and numbers it cannot hold: not a finding */
        } else {
            if (cJSON_IsObject(j) != (tj_type(&d, 0) == TJ_OBJ)) tlf_fail("tj and cJSON disagree on the top-level type");
            if (cJSON_IsObject(j) || cJSON_IsArray(j))
                if ((size_t)cJSON_GetArraySize(j) != tj_count(&d, 0)) tlf_fail("tj and cJSON disagree on the member count");
            cJSON_Delete(j);
        }
    }
    tj_free(&d);
    free(text);
    return 0;
}
