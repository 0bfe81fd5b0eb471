/* The batch runner (tl_batcher): requests that join at different times and leave when they stop
 * give the same greedy ids and text as each run alone with tl_generate, some of their tokens
 * come from passes shared with others (tl_iter_token.batch > 1), a long prompt's prefill goes
 * in chunks beside the others' decodes, and a request cancelled in the middle ends without
 * holding the others up. Runs under ThreadSanitizer (label tsan).
 * argv[1]: the bundled model's directory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tl_test.h"
#include "tokenloop/session.h"

#define N_REQ 5

static const char *const questions[N_REQ] = {
    "What is the capital of France?",
    "Tell me a short story about a cat.",
    "Hi",
    "Spell the word flower.",
    /* a long prompt: its prefill goes in chunks, each pass shared with the others' decodes */
    "Here is a list of fruits: apple, banana, cherry, date, elderberry, fig, grape, honeydew, kiwi, lemon, "
    "mango, nectarine, orange, papaya, quince, raspberry, strawberry, tangerine, ugli fruit, vanilla, "
    "watermelon, and yellow passion fruit. Which of them is red?",
};
/* Request 1 is cancelled as soon as its first chunk is read, the test thread waiting on it alone:
 * cancelled after the third chunk, read in turn with the others, a loaded 2-core machine under ASan
 * had finished all 40 tokens of its budget first (the fresh-clone CI failed). Its budget is long,
 * so a cancel that comes late still lands in the middle (the bundled model stops at 59 tokens). */
static const int budget[N_REQ] = {24, 400, 12, 30, 20};

static tl_session *open_on(const char *dir, tl_model *shared, int q)
{
    tl_session_opts o = {.model_dir = dir, .threads = 2, .bandwidth_gbs = 10, .no_floor_reads = 1,
                         .precision = TL_PRECISION_EXACT};
    tl_session *s = NULL;
    tl_error err = {{0}};
    int rc = shared ? tl_session_open_model(&s, shared, 0, &o, &err) : tl_session_open(&s, &o, &err);
    TL_CHECK_MSG(rc == 0, "%s", err.msg);
    if (!s) return NULL;
    TL_CHECK_INT(tl_session_set_user(s, NULL, questions[q], &err), 0);
    tl_sampling p = tl_session_sampling(s);
    p.greedy = 1;
    tl_session_set_sampling(s, p);
    tl_session_set_max_new_tokens(s, budget[q]);
    return s;
}

/* Drains whatever is ready; 1 when it ended. */
static int drain(tl_iter *it, char *text, size_t cap, int *shared_tokens)
{
    char *c;
    size_t len;
    int rc;
    while ((rc = tl_iter_next(it, &c, &len, 0)) == 1) {
        const tl_iter_token *t;
        int n = tl_iter_last_tokens(it, &t);
        for (int i = 0; i < n; i++)
            *shared_tokens += t[i].batch > 1;
        strncat(text, c, cap - strlen(text) - 1);
        free(c);
    }
    return rc == 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_batcher MODEL_DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    tl_error err = {{0}};

    /* each alone: the reference */
    static int alone_ids[N_REQ][512];
    int alone_n[N_REQ];
    char alone_text[N_REQ][2048];
    tl_session *first = open_on(dir, NULL, 0);
    if (!first) return TL_TEST_END("generate_batcher");
    tl_model *m = (tl_model *)tl_session_model(first);
    for (int q = 0; q < N_REQ; q++) {
        tl_session *s = open_on(dir, m, q);
        if (!s) return TL_TEST_END("generate_batcher");
        TL_CHECK_INT(tl_generate(s, NULL, NULL, &err), TL_SESSION_DONE);
        const int *ids = tl_session_generated_ids(s, &alone_n[q]);
        memcpy(alone_ids[q], ids, sizeof(int) * (size_t)alone_n[q]);
        snprintf(alone_text[q], sizeof alone_text[q], "%s", tl_session_streamed(s, NULL));
        tl_session_free(s);
    }

    /* together: two start, the rest join after the first chunks; request 1 is cancelled */
    tl_batcher *b = NULL;
    TL_CHECK_INT(tl_batcher_create(&b, &err), 0);
    tl_session *ss[N_REQ];
    tl_iter *its[N_REQ] = {0};
    char text[N_REQ][2048] = {{0}};
    int ended[N_REQ] = {0}, shared = 0, started = 0;
    for (int q = 0; q < N_REQ; q++)
        ss[q] = open_on(dir, m, q);
    for (; started < 2; started++)
        TL_CHECK_INT(tl_iter_start_batched(&its[started], ss[started], b, &err), 0);
    {
        char *c;
        size_t len;
        TL_CHECK_INT(tl_iter_next(its[1], &c, &len, -1), 1);   /* its first chunk, then the cancel */
        strncat(text[1], c, sizeof text[1] - 1);
        free(c);
        tl_iter_cancel(its[1]);
    }
    for (int round = 0; round < 100000; round++) {
        int open = 0;
        for (int q = 0; q < started; q++) {
            if (ended[q]) continue;
            ended[q] = drain(its[q], text[q], sizeof text[q], &shared);
            open += !ended[q];
        }
        if (started < N_REQ && (strlen(text[0]) > 0 || round > 2000)) {
            TL_CHECK_INT(tl_iter_start_batched(&its[started], ss[started], b, &err), 0);
            started++;
        }
        if (!open && started == N_REQ) break;
        if (round % 64 == 63) {   /* wait for the runner rather than spin */
            char *c;
            size_t len;
            for (int q = 0; q < started; q++)
                if (!ended[q] && tl_iter_next(its[q], &c, &len, 50) == 1) {
                    strncat(text[q], c, sizeof text[q] - strlen(text[q]) - 1);
                    free(c);
                    break;
                }
        }
    }
    for (int q = 0; q < N_REQ; q++) {
        int rc = tl_iter_finish(its[q], &err);
        if (q == 1) {
            TL_CHECK_MSG(rc == TL_GENERATE_CANCELLED || rc == TL_SESSION_DONE, "request 1: %d", rc);
            int n;
            tl_session_generated_ids(ss[q], &n);
            TL_CHECK_MSG(n < alone_n[q], "request 1 was cancelled and still made %d of %d tokens", n, alone_n[q]);
            continue;
        }
        TL_CHECK_MSG(rc == TL_SESSION_DONE, "request %d: %d (%s)", q, rc, err.msg);
        int n;
        const int *ids = tl_session_generated_ids(ss[q], &n);
        TL_CHECK_MSG(n == alone_n[q] && !memcmp(ids, alone_ids[q], sizeof(int) * (size_t)n),
                     "request %d: %d ids batched, %d alone", q, n, alone_n[q]);
        TL_CHECK_MSG(!strcmp(text[q], alone_text[q]), "request %d: \"%s\" batched, \"%s\" alone", q, text[q],
                     alone_text[q]);
    }
    TL_CHECK_MSG(shared > 0, "no token came from a pass shared by two requests");
    int np = 0;
    tl_session_prompt_ids(ss[4], &np);
    const tl_step *pre = tl_session_step_at(ss[4], 0);
    TL_CHECK_MSG(np > 64 && pre && pre->kind == TL_STEP_PREFILL && pre->n_input == np,
                 "the long prompt: %d tokens, its prefill step %d", np, pre ? pre->n_input : -1);
    printf("generate_batcher: %d tokens from shared passes\n", shared);
    tl_batcher_free(b);
    for (int q = 0; q < N_REQ; q++)
        tl_session_free(ss[q]);
    tl_session_free(first);
    return TL_TEST_END("generate_batcher");
}
