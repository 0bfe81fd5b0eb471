/* PLACEHOLDER: replaced by the helper that owns this command. */
#include "commands.h"

int cmd_bench(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return cli_fail(2, "bench: not built yet");
}
