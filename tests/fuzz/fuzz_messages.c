/* A --messages file: first tl_chat_messages_check, as the CLI does, then, if it passes, a render
 * with each real chat template the project carries (the bundled Llama 3.1 one, the seven in
 * tools/template-goldens/templates, and ../shared/conformance/templates when present). Oracle:
 * accepted messages render or fail with one line; spans stay inside the render. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fuzz.h"
#include "tokenloop/file.h"
#include "tokenloop/template.h"

static tl_template *tpls[32];
static int ntpl;

static void add_src(const char *src, const char *from)
{
    tl_error err;
    if (ntpl == 32) return;
    if (tl_template_compile(src, &tpls[ntpl], &err)) { fprintf(stderr, "%s: %s\n", from, err.msg); abort(); }
    ntpl++;
}

static void add_json_file(const char *path)
{
    char *text = NULL;
    tl_error err;
    if (tl_file_read(path, 1 << 24, &text, NULL, &err)) { fprintf(stderr, "%s\n", err.msg); abort(); }
    cJSON *j = cJSON_Parse(text);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "chat_template");
    if (cJSON_IsArray(t)) t = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(t, 0), "template");
    if (!cJSON_IsString(t)) { fprintf(stderr, "%s: no chat_template\n", path); abort(); }
    add_src(t->valuestring, path);
    cJSON_Delete(j);
    free(text);
}

static void add_dir(const char *dir, const char *ext, int json)
{
    DIR *d = opendir(dir);
    if (!d) return;  /* ../shared is optional */
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name), k = strlen(ext);
        if (n <= k || strcmp(e->d_name + n - k, ext)) continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (json) add_json_file(p);
        else {
            char *src = NULL;
            tl_error err;
            if (tl_file_read(p, 1 << 24, &src, NULL, &err)) { fprintf(stderr, "%s\n", err.msg); abort(); }
            add_src(src, p);
            free(src);
        }
    }
    closedir(d);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    char p[4096];
    snprintf(p, sizeof p, "%s/assets/tokenizer/tokenizer_config.json", tlf_source_dir());
    add_json_file(p);
    snprintf(p, sizeof p, "%s/tools/template-goldens/templates", tlf_source_dir());
    add_dir(p, ".json", 1);
    snprintf(p, sizeof p, "%s/../shared/conformance/templates", tlf_source_dir());
    add_dir(p, ".jinja", 0);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tl_error err = {{0}};
    if (tl_chat_messages_check((const char *)data, size, &err)) {
        tlf_check_error(&err);
        return 0;
    }
    /* the check passed, so the text is one JSON value with nothing after it */
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    static const tl_template_var vars[] = {{"date_string", "\"26 Jul 2024\""}};
    for (int i = 0; i < ntpl; i++) {
        tl_chat_result r = {0};
        err.msg[0] = 0;
        if (tl_chat_render(tpls[i], text, vars, 1, i & 1, "<|begin_of_text|>", "<|eot_id|>", &r, &err)) {
            tlf_check_error(&err);
            continue;
        }
        for (size_t k = 0; k < r.n_spans; k++)
            if (r.spans[k].start > r.spans[k].end || r.spans[k].end > r.len) tlf_fail("span outside the render");
        tl_chat_result_free(&r);
    }
    free(text);
    return 0;
}
