/* A chat template as input, rendered with fixed messages as apply_chat_template would. The
 * engine's own limits (nesting, output size, loop steps) must turn any template into a render
 * or a one-line error. Oracle: content spans are sorted, disjoint and inside the render. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "tokenloop/template.h"

static const char messages[] =
    "[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"Hi <|eot_id|>\"},"
    "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Hello\"}]},"
    "{\"role\":\"user\",\"content\":\"2 + 2?\"}]";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *src = malloc(size + 1);
    memcpy(src, data, size);
    src[size] = 0;
    tl_template *tpl = NULL;
    tl_error err = {{0}};
    if (tl_template_compile(src, &tpl, &err)) {
        tlf_check_error(&err);
        free(src);
        return 0;
    }
    static const tl_template_var vars[] = {{"date_string", "\"26 Jul 2024\""}, {"tools", "[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]"}};
    tl_chat_result r = {0};
    for (int k = 0; k < 2; k++) {
        err.msg[0] = 0;
        if (tl_chat_render(tpl, messages, vars, (size_t)k * 2, k, "<|begin_of_text|>", "<|eot_id|>", &r, &err)) {
            tlf_check_error(&err);
            continue;
        }
        if (strlen(r.text) > r.len) tlf_fail("render length and text disagree");
        for (size_t i = 0; i < r.n_spans; i++)
            if (r.spans[i].start > r.spans[i].end || r.spans[i].end > r.len ||
                (i && r.spans[i].start < r.spans[i - 1].end))
                tlf_fail("content spans not sorted, disjoint and inside the render");
        tl_chat_result_free(&r);
    }
    tl_template_free(tpl);
    free(src);
    return 0;
}
