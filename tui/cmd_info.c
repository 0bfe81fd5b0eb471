/* PLACEHOLDER: replaced by the helper that owns this command. */
#include "commands.h"

int cmd_info(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return cli_fail(2, "info: not built yet");
}
