/* The iterator streamer: chunks arrive in order and add up to the streamed text, the end of the
 * stream is explicit, a cancel from the consumer stops generation at the next token and the
 * thread joins. Runs under ThreadSanitizer (label tsan). argv[1]: make_models.py's folder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tl_test.h"
#include "tokenloop/session.h"

static const int prompt[] = {128000, 9906, 11, 1917, 0};

static tl_session *open_llama31(const char *root, int max_new)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/llama31", root);
    tl_session_opts o = {.model_dir = dir, .threads = 2, .bandwidth_gbs = 10};
    tl_session *s = NULL;
    tl_error err = {{0}};
    TL_CHECK_MSG(tl_session_open(&s, &o, &err) == 0, "%s", err.msg);
    if (!s) return NULL;
    tl_session_set_prompt_ids(s, prompt, 5, &err);
    tl_sampling p = {.greedy = 1, .temperature = 1, .top_p = 1};
    tl_session_set_sampling(s, p);
    tl_session_set_max_new_tokens(s, max_new);
    return s;
}

int main(int argc, char **argv)
{
    const char *root = argc > 1 ? argv[1] : "models";
    tl_error err = {{0}};

    /* to the end */
    tl_session *s = open_llama31(root, 30);
    if (!s) return TL_TEST_END("generate_iter");
    tl_iter *it;
    TL_CHECK_INT(tl_iter_start(&it, s, &err), 0);
    char got[4096] = "";
    int chunks = 0, rc;
    char *c;
    size_t len;
    while ((rc = tl_iter_next(it, &c, &len, 5000)) != 0) {
        TL_CHECK_MSG(rc == 1, "next returned %d", rc);
        if (rc != 1) break;
        TL_CHECK_INT(strlen(c), len);
        TL_CHECK(len > 0);
        strncat(got, c, sizeof got - strlen(got) - 1);
        free(c);
        chunks++;
    }
    TL_CHECK_INT(tl_iter_next(it, &c, &len, 0), 0);   /* the end stays the end */
    TL_CHECK_INT(tl_iter_finish(it, &err), TL_SESSION_DONE);
    TL_CHECK(chunks > 0);
    TL_CHECK_STR(got, tl_session_streamed(s, NULL));
    TL_CHECK_INT(tl_session_n_steps(s), 30);
    tl_session_free(s);

    /* cancelled by the consumer straight away */
    s = open_llama31(root, 200);
    if (!s) return TL_TEST_END("generate_iter");
    TL_CHECK_INT(tl_iter_start(&it, s, &err), 0);
    tl_iter_cancel(it);
    while ((rc = tl_iter_next(it, &c, &len, -1)) == 1) free(c);
    TL_CHECK_INT(rc, 0);
    TL_CHECK_INT(tl_iter_finish(it, &err), TL_GENERATE_CANCELLED);
    TL_CHECK(tl_session_n_steps(s) >= 1 && tl_session_n_steps(s) < 200);
    TL_CHECK_INT(tl_session_done(s), 0);

    /* cancelled after the first chunk, with a short timeout polled in between */
    tl_session_reset(s);
    TL_CHECK_INT(tl_iter_start(&it, s, &err), 0);
    int first = 0, timeouts = 0;
    for (;;) {
        rc = tl_iter_next(it, &c, &len, 1);
        if (rc == -1) { timeouts++; continue; }
        if (rc == 0) break;
        free(c);
        if (!first++) tl_iter_cancel(it);
    }
    rc = tl_iter_finish(it, &err);
    TL_CHECK(rc == TL_GENERATE_CANCELLED || rc == TL_SESSION_DONE);
    printf("after cancel: %d steps, %d chunks, %d timeouts\n", tl_session_n_steps(s), first, timeouts);

    /* finishing without reading joins cleanly and frees what was queued (from a fresh answer:
     * how far the cancelled run got before it saw the cancel depends on the scheduler) */
    tl_session_reset(s);
    tl_session_set_max_new_tokens(s, 10);
    TL_CHECK_INT(tl_iter_start(&it, s, &err), 0);
    TL_CHECK_INT(tl_iter_finish(it, &err), TL_SESSION_DONE);
    TL_CHECK_INT(tl_session_n_steps(s), 10);
    tl_session_free(s);
    return TL_TEST_END("generate_iter");
}
