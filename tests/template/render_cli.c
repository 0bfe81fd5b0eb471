/* template_render TEMPLATE_FILE CONTEXT_JSON_FILE: prints the render (a helper for the golden
 * script's cross-checks and for debugging; the ctest goldens use test_template_goldens). */
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "tokenloop/template.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); b = NULL; }
    if (b) b[n] = 0;
    fclose(f);
    return b;
}

int main(int argc, char **argv)
{
    if (argc != 3) { fprintf(stderr, "usage: template_render TEMPLATE CONTEXT.json\n"); return 2; }
    char *src = slurp(argv[1]), *ctx = slurp(argv[2]);
    if (!src || !ctx) { fprintf(stderr, "cannot read input\n"); return 2; }
    tl_error err = {{0}};
    tl_template *t = NULL;
    cJSON *c = cJSON_Parse(ctx);
    char *out = NULL;
    size_t len = 0;
    int rc = 0;
    if (tl_template_compile(src, &t, &err) || tl_template_render(t, c, &out, &len, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        rc = 1;
    } else
        fwrite(out, 1, len, stdout);
    free(out);
    tl_template_free(t);
    cJSON_Delete(c);
    free(src);
    free(ctx);
    return rc;
}
