/* The opening screen's example questions are ones the shipped model answers: each is asked of
 * the bundled tl-mini-instruct, greedy and sampled with generation_config.json's settings over
 * several seeds, in both languages, and every answer must contain the word Welcome_expect names
 * and end by the model's own EOS within the budget. argv[1]: the model directory. */
#include <stdio.h>
#include <string.h>

#include "tl_test.h"
#include "tokenloop/session.h"
#include "welcome.h"

#define SEEDS 5
#define BUDGET 64

static void ask(tl_session *s, const char *q, const char *want, const char *how, tl_sampling p)
{
    tl_error err = { { 0 } };
    tl_session_set_sampling(s, p);
    TL_CHECK_MSG(tl_session_set_user(s, NULL, q, &err) == 0, "%s: %s", q, err.msg);
    tl_session_reset(s);
    int rc = tl_generate(s, NULL, NULL, &err);
    TL_CHECK_MSG(rc == TL_SESSION_DONE, "%s (%s): generate %d %s", q, how, rc, err.msg);
    size_t len = 0;
    const char *text = tl_session_text(s, &len);
    TL_CHECK_MSG(text && strstr(text, want), "%s (%s): \"%s\" lacks \"%s\"", q, how, text ? text : "", want);
    TL_CHECK_MSG(tl_session_stop(s)->reason == TL_STOP_EOS, "%s (%s): stopped by %s, not eos", q, how,
                 tl_stop_reason_name(tl_session_stop(s)->reason));
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_welcome MODEL_DIR\n");
        return 2;
    }
    tl_session_opts o = { .model_dir = argv[1], .bandwidth_gbs = 10 };
    tl_session *s = NULL;
    tl_error err = { { 0 } };
    if (tl_session_open(&s, &o, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    tl_session_set_max_new_tokens(s, BUDGET);
    tl_sampling defaults = tl_session_sampling(s);
    TL_CHECK(!defaults.greedy);   /* the bundled model samples by default, as a student sees it */
    TL_CHECK(Welcome_count() >= 4);
    const char *langs[] = { "en", "vi" };
    for (int i = 0; i < Welcome_count(); i++)
        for (int k = 0; k < 2; k++) {
            const char *q = Welcome_example(i, langs[k]), *want = Welcome_expect(i, langs[k]);
            TL_CHECK(q && *q && want && *want);
            if (!q || !want)
                continue;
            tl_sampling g = defaults;
            g.greedy = 1;
            ask(s, q, want, "greedy", g);
            for (int seed = 0; seed < SEEDS; seed++) {
                tl_sampling p = defaults;
                p.seed = (uint64_t)seed;
                char how[32];
                snprintf(how, sizeof how, "sampled, seed %d", seed);
                ask(s, q, want, how, p);
            }
        }
    /* cycling: the index wraps both ways */
    TL_CHECK_STR(Welcome_example(Welcome_count(), "en"), Welcome_example(0, "en"));
    TL_CHECK_STR(Welcome_example(-1, "vi"), Welcome_example(Welcome_count() - 1, "vi"));
    TL_CHECK(strcmp(Welcome_intro("en"), Welcome_intro("vi")) != 0);
    TL_CHECK_STR(Welcome_intro("fr"), Welcome_intro("en"));
    tl_session_free(s);
    return TL_TEST_END("welcome");
}
