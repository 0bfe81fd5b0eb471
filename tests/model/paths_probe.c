/* Prints what tl_paths_default_model / _tokenizer / _lessons return (for test_paths.sh, which
 * runs copies of this binary from fake checkouts and installs). Built with its own copy of
 * core/paths.c whose recorded source tree and data directory are folders the test controls. */
#include <stdio.h>
#include "tokenloop/paths.h"

int main(void)
{
    char buf[4096];
    tl_error err;
    if (tl_paths_default_model(buf, sizeof buf, &err)) printf("model-error %s\n", err.msg);
    else printf("model %s\n", buf);
    if (tl_paths_default_tokenizer(buf, sizeof buf, &err)) printf("tokenizer-error %s\n", err.msg);
    else printf("tokenizer %s\n", buf);
    if (tl_paths_default_lessons(buf, sizeof buf, &err)) printf("lessons-error %s\n", err.msg);
    else printf("lessons %s\n", buf);
    return 0;
}
