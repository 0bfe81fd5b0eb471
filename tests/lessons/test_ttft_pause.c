/* Item 4 of issue 38: a lesson's TTFT runs from the request, not from when the step appeared.
 * The lesson in pause/ shows a prompt (step 1) and runs it (step 2), played as the TUI plays it:
 * narrate step 1, wait, then step 2. With a 5 s wait on screen (twice, the faster kept) the TTFT
 * must stay within 2x of the slowest of three without one (the bug it guards against added the whole 5,000 ms).
 * argv[1]: the lesson file, argv[2]: the bundled model. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tl_test.h"
#include "tokenloop/lesson.h"
#include "tokenloop/session.h"

static double play(tl_lesson *l, tl_session *s, double pause_s)
{
    tl_error err = {{0}};
    char why[512];
    TL_CHECK_MSG(tl_lesson_apply(l, 0, s, NULL, &err) == 0, "step 1: %s", err.msg);
    free(tl_lesson_narrate(l, 0, "en", s));   /* renders and tokenizes the prompt */
    if (pause_s > 0) {
        struct timespec ts = {(time_t)pause_s, 0};
        nanosleep(&ts, NULL);
    }
    TL_CHECK_MSG(tl_lesson_apply(l, 1, s, NULL, &err) == 0, "step 2: %s", err.msg);
    TL_CHECK_MSG(tl_lesson_check(l, 1, s, why, sizeof why) == 0, "step 2: %s", why);
    return tl_session_metrics(s).ttft_ms;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_ttft_pause LESSON.json MODEL_DIR\n");
        return 2;
    }
    tl_error err = {{0}};
    tl_lesson *l = NULL;
    tl_session *s = NULL;
    tl_session_opts o = {.model_dir = argv[2], .threads = 1, .bandwidth_gbs = 10};
    TL_CHECK_MSG(tl_lesson_load(&l, argv[1], &err) == 0, "%s", err.msg);
    TL_CHECK_MSG(tl_session_open(&s, &o, &err) == 0, "%s", err.msg);
    if (!l || !s)
        return 1;
    double plain = 0;
    for (int i = 0; i < 3; i++) {   /* the slowest of three unpaused runs: a busy machine's noise */
        double t = play(l, s, 0);
        plain = t > plain ? t : plain;
    }
    /* the faster of two paused runs: a step after 5 s idle may find cold caches */
    double p1 = play(l, s, 5), p2 = play(l, s, 5), paused = p1 < p2 ? p1 : p2;
    printf("TTFT without a pause: up to %.2f ms; after 5 s on screen: %.2f and %.2f ms\n", plain, p1, p2);
    TL_CHECK(plain > 0 && paused > 0);
    TL_CHECK_MSG(paused <= 2 * plain, "TTFT %.2f ms after a 5 s pause, %.2f ms without one", paused, plain);
    tl_session_free(s);
    tl_lesson_free(l);
    return TL_TEST_END("lesson_ttft_pause");
}
