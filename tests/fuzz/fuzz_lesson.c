/* A lesson file (lessons/NAME.json): steps, actions, expectations and narration with
 * placeholders, validated on load so that a class never meets a broken step halfway through. */
#include "fuzz.h"
#include "tokenloop/lesson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = tlf_write("lesson.json", data, size);
    tl_lesson *l = NULL;
    tl_error err = {{0}};
    if (tl_lesson_load(&l, path, &err)) {
        tlf_check_error(&err);
        return 0;
    }
    if (tl_lesson_n_steps(l) <= 0) tlf_fail("a lesson loaded with no steps");
    if (!tl_lesson_id(l) || !tl_lesson_title(l, "en") || !tl_lesson_title(l, "vi")) tlf_fail("a lesson without id or title");
    tl_lesson_free(l);
    return 0;
}
