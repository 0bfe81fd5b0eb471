/* Prints what tl_paths_default_model / tl_paths_default_tokenizer return (for test_paths.sh,
 * which runs copies of this binary from inside fake checkouts). */
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
    return 0;
}
