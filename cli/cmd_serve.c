/* `tokenloop serve`: the command line around serve/'s server (serve/serve.h). It parses the
 * options, starts the server, and waits for SIGINT or SIGTERM. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "serve.h"
#include "tokenloop/paths.h"

static const char usage[] =
    "usage: tokenloop serve [--model DIR] [--host ADDR] [--port N] [--slots N] [--queue N]\n"
    "                       [--api-key KEY] [--threads N] [--exact | --bf16-activations]\n"
    "  An OpenAI-compatible chat server on the iterator streamer: POST /v1/chat/completions\n"
    "  (messages, stream, max_tokens / max_completion_tokens, temperature (0: greedy), top_p,\n"
    "  top_k, seed, stop, logprobs + top_logprobs (<= 20), stream_options.include_usage);\n"
    "  POST /v1/completions (prompt: raw text, no chat template: the model continues it);\n"
    "  GET /v1/models; GET /health (slots busy, requests waiting); GET / the class page: a\n"
    "  streamed request with the client's clock beside the server's. Fields it does not serve\n"
    "  (n > 1, penalties, logit_bias, tools...) are refused with 400, not ignored.\n"
    "  logprobs are the model's own (log softmax of the logits, before temperature and cuts).\n"
    "  Without max_tokens the budget is generate()'s: generation_config.json's, else 20 new\n"
    "  tokens (vLLM and llama.cpp's server run to the context's end); every answer says which\n"
    "  in tokenloop.budget_source, and finish_reason \"length\" when the budget stopped it.\n"
    "  --model DIR   default $TOKENLOOP_MODEL, else the bundled model\n"
    "  --host ADDR   IPv4 address to listen on (default 127.0.0.1: this machine only)\n"
    "  --port N      default 8080; 0 picks a free port (printed on stderr)\n"
    "  --slots N     requests served at once, each with its own KV cache, all on one copy of\n"
    "                the weights (default 1)\n"
    "  --queue N     requests that may wait for a slot (default 8); past that, 429 + Retry-After\n"
    "  --api-key K   require \"Authorization: Bearer K\"\n"
    CLI_PRECISION_USAGE;

int cmd_serve(int argc, char **argv)
{
    const char *model = getenv("TOKENLOOP_MODEL"), *host = "127.0.0.1", *key = NULL;
    long port = 8080, threads = 0, slots = 1, queue = 8;
    tl_precision prec = TL_PRECISION_MIXED;
    int pf;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_val = i + 1 < argc;
        char *end;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(usage, stdout); return 0; }
        else if (!strcmp(a, "--model") && has_val) model = argv[++i];
        else if (!strcmp(a, "--host") && has_val) host = argv[++i];
        else if (!strcmp(a, "--api-key") && has_val) key = argv[++i];
        else if ((pf = cli_precision_flag(a, &prec)) != 0) {
            if (pf < 0) return 2;
        }
        else if ((!strcmp(a, "--port") || !strcmp(a, "--threads") || !strcmp(a, "--slots") ||
                  !strcmp(a, "--queue")) && has_val) {
            const char *v = argv[++i];
            long lo = !strcmp(a, "--slots") ? 1 : 0;
            long hi = !strcmp(a, "--port") ? 65535 : !strcmp(a, "--slots") ? SERVE_MAX_SLOTS : 1024;
            errno = 0;
            long x = strtol(v, &end, 10);
            if (errno || end == v || *end || x < lo || x > hi)
                return cli_fail(2, "%s %s: expected an integer from %ld to %ld", a, v, lo, hi);
            *(!strcmp(a, "--port") ? &port : !strcmp(a, "--threads") ? &threads : !strcmp(a, "--slots") ? &slots : &queue) = x;
        } else if (!strcmp(a, "--model") || !strcmp(a, "--host") || !strcmp(a, "--api-key") ||
                   !strcmp(a, "--port") || !strcmp(a, "--threads") || !strcmp(a, "--slots") ||
                   !strcmp(a, "--queue")) {
            return cli_fail(2, "%s: needs a value", a);
        } else {
            fputs(usage, stderr);
            return cli_fail(2, "%s: unknown option", a);
        }
    }
    struct in_addr probe;
    if (inet_pton(AF_INET, host, &probe) != 1)
        return cli_fail(2, "--host %s: expected an IPv4 address such as 127.0.0.1", host);
    tl_error err = {{0}};
    char default_model[4096];
    if (!model) {
        if (tl_paths_default_model(default_model, sizeof default_model, &err))
            return cli_fail(2, "--model: no model given, and %s", err.msg);
        model = default_model;
    }
    /* SIGINT/SIGTERM end the server: blocked before its threads start, so every one inherits
     * the mask and sigwait below takes them */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    serve_opts o = {.model_dir = model, .host = host, .port = (int)port, .slots = (int)slots,
                    .queue = (int)queue, .threads = (int)threads, .api_key = key, .precision = prec};
    server *srv;
    if (serve_start(&srv, &o, &err)) return cli_fail(1, "%s", err.msg);
    fprintf(stderr, "tokenloop serve: %s on http://%s:%u, %d slot%s (POST /v1/chat/completions; Ctrl-C stops)\n",
            serve_model_id(srv), host, serve_port(srv), serve_slots(srv), serve_slots(srv) == 1 ? "" : "s");
    int sig;
    sigwait(&stop, &sig);
    serve_stop(srv);
    return 0;
}
