/* What tokenloop's iterator streamer hands a consumer, for check_iter_streamer.py to compare
 * with transformers' TextIteratorStreamer: generation runs on tl_iter's background thread and
 * this thread reads the queue, as a chat server would.
 *   iter_dump MODEL_DIR IDS MAX_NEW SKIP_PROMPT SKIP_SPECIAL
 * IDS: the prompt's ids, comma-separated. Prints {"generated_ids": [...], "chunks": [...]}.
 * Greedy; clean-up off (transformers 5 ignores it for BPE, see tests/hf/README.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tokenloop/session.h"

static int parse_ids(const char *s, int *ids, int cap)
{
    int n = 0;
    while (*s && n < cap) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s) return -1;
        ids[n++] = (int)v;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: iter_dump MODEL_DIR IDS MAX_NEW SKIP_PROMPT SKIP_SPECIAL\n");
        return 2;
    }
    static int ids[65536];
    int n = parse_ids(argv[2], ids, 65536);
    tl_error err = {{0}};
    tl_session_opts o = {.model_dir = argv[1], .threads = 2, .bandwidth_gbs = 10};
    tl_session *s = NULL;
    if (n <= 0 || tl_session_open(&s, &o, &err) != 0 || tl_session_set_prompt_ids(s, ids, n, &err) != 0) {
        fprintf(stderr, "iter_dump: %s\n", n <= 0 ? "bad ids" : err.msg);
        tl_session_free(s);
        return 1;
    }
    tl_sampling p = {.greedy = 1, .temperature = 1, .top_p = 1};
    tl_session_set_sampling(s, p);
    tl_session_set_max_new_tokens(s, atoi(argv[3]));
    tl_session_set_streamer_opts(s, atoi(argv[4]), atoi(argv[5]), 0);

    tl_iter *it;
    if (tl_iter_start(&it, s, &err) != 0) {
        fprintf(stderr, "iter_dump: %s\n", err.msg);
        tl_session_free(s);
        return 1;
    }
    cJSON *out = cJSON_CreateObject(), *chunks = cJSON_AddArrayToObject(out, "chunks");
    char *c;
    size_t len;
    int rc;
    while ((rc = tl_iter_next(it, &c, &len, -1)) == 1) {
        cJSON_AddItemToArray(chunks, cJSON_CreateString(c));
        free(c);
    }
    int fin = tl_iter_finish(it, &err);
    if (rc != 0 || fin != TL_SESSION_DONE) {
        fprintf(stderr, "iter_dump: the stream ended with %d/%d: %s\n", rc, fin, err.msg);
        cJSON_Delete(out);
        tl_session_free(s);
        return 1;
    }
    int ng;
    const int *gen = tl_session_generated_ids(s, &ng);
    cJSON_AddItemToObject(out, "generated_ids", cJSON_CreateIntArray(gen, ng));
    char *text = cJSON_PrintUnformatted(out);
    puts(text);
    free(text);
    cJSON_Delete(out);
    tl_session_free(s);
    return 0;
}
