/* PLACEHOLDER: replaced by the helper that owns the tokenizer. */
#include "commands.h"

int cmd_bench_tokenizer(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return cli_fail(2, "bench --tokenizer: not built yet");
}
