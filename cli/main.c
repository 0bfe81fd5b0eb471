/* tokenloop: dispatch to a subcommand; with no arguments, open the TUI on the bundled model. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "tokenloop/backend.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"tui", cmd_tui, "step through generation in the terminal (the default)"},
    {"generate", cmd_generate, "run generation headlessly, one forward pass per step"},
    {"tokenize", cmd_tokenize, "text to token ids and pieces"},
    {"template", cmd_template, "render a chat template"},
    {"info", cmd_info, "describe a model directory"},
    {"bench", cmd_bench, "measure TTFT/TPOT against the bandwidth floor"},
    {"lesson", cmd_lesson, "list or check the lessons"},
#ifdef TL_HAVE_SERVE
    {"serve", cmd_serve, "an OpenAI-compatible chat server on the iterator streamer"},
#endif
};

static void print_usage(FILE *f)
{
    fprintf(f, "usage: tokenloop [COMMAND] [OPTIONS]   (no command: the TUI)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n  --version  version and compiled-in backends\n"
               "Each command takes --help.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return cmd_tui(argc, argv);
    if (!strcmp(argv[1], "--version")) {
        printf("tokenloop %s (backends: cpu%s)\n", TL_VERSION, tl_backend_cuda() ? ", cuda" : "");
        return 0;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        print_usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    if (argv[1][0] == '-')  /* options for the default command */
        return cmd_tui(argc, argv);
    print_usage(stderr);
    return cli_fail(2, "%s: unknown command", argv[1]);
}
