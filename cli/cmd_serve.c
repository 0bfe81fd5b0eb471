/* `tokenloop serve`: the command line around serve/'s server (serve/serve.h). It parses the
 * options, starts the server, says where students can reach it, and on SIGINT or SIGTERM drains
 * it (running answers end with a final chunk that says why) before stopping. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "serve.h"
#include "tokenloop/paths.h"

/* How long a shutdown waits for running answers to end at their next token. */
static const double DRAIN_S = 5;

static const char usage[] =
    "usage: tokenloop serve [--model DIR] [--host ADDR] [--port N] [--slots N] [--queue N]\n"
    "                       [--per-client N] [--api-key-file FILE] [--default-max-tokens N]\n"
    "                       [--allow-special-in-content] [--idle-timeout S] [--body-timeout S]\n"
    "                       [--log FILE] [--threads N] [--no-batch] [--exact | --bf16-activations]\n"
    "  An OpenAI-compatible chat server on the iterator streamer: POST /v1/chat/completions\n"
    "  (messages, content as a string or a list of text parts, stream, max_tokens /\n"
    "  max_completion_tokens, temperature (0: greedy), top_p, top_k, seed, stop, logprobs +\n"
    "  top_logprobs (<= 20), stream_options.include_usage, response_format text, store);\n"
    "  POST /v1/completions (prompt: raw text, no chat template: the model continues it);\n"
    "  GET /v1/models, /v1/models/ID; GET /health (slots busy, requests waiting); GET / the class\n"
    "  page: a streamed request with the client's clock beside the server's. Fields it does not\n"
    "  serve (n > 1, penalties, logit_bias, tools...) are refused with 400, not ignored.\n"
    "  logprobs are the model's own (log softmax of the logits, before temperature and cuts).\n"
    "  Without max_tokens the budget is the rest of the context (as OpenAI, vLLM and llama.cpp's\n"
    "  server); every answer says so in tokenloop.budget_source, and finish_reason \"length\"\n"
    "  when the budget stopped it. Without seed each request draws a fresh one (tokenloop.seed\n"
    "  says which: send it back to reproduce the answer).\n"
    "  --model DIR   default $TOKENLOOP_MODEL, else the bundled model\n"
    "  --host ADDR   address or name to listen on, IPv4 or IPv6 (default 127.0.0.1: this machine\n"
    "                only; 0.0.0.0 or :: the whole network: the URLs students can use are printed)\n"
    "  --port N      default 8080; 0 picks a free port (printed on stderr)\n"
    "  --slots N     requests served at once, each with its own KV cache, all on one copy of\n"
    "                the weights (default 1). Their decodes run as one batch: each pass reads the\n"
    "                weights once for all of them (tokenloop.batch in each chunk, /health)\n"
    "  --no-batch    each slot runs its own passes: N busy slots read the weights N times a step,\n"
    "                but a seeded answer is the same bits whatever else runs (a batched pass\n"
    "                rounds differently: a seeded sample near a tie can go the other way)\n"
    "  --queue N     requests that may wait for a slot (default 8); past that, 429 + Retry-After\n"
    "  --per-client N  requests one client address may have in flight (default: no cap); past\n"
    "                that, 429\n"
    "  --api-key-file FILE  require \"Authorization: Bearer KEY\" with the key in FILE (its first\n"
    "                line); or $TOKENLOOP_API_KEY; --api-key KEY also works but shows in `ps`\n"
    "  --default-max-tokens N  the budget when a request has no max_tokens (20: transformers')\n"
    "  --allow-special-in-content  \"<|eot_id|>\" typed in a message is the special token, as in\n"
    "                the TUI's prompt-injection demo (default: plain text, so no student can forge\n"
    "                a turn)\n"
    "  --idle-timeout S  close a connection that has not sent its request's headers within S\n"
    "                seconds (default 15)\n"
    "  --body-timeout S  close one whose body has not arrived within S seconds (default 60)\n"
    "  --log FILE    the access log, one line a request (default stderr)\n"
    CLI_PRECISION_USAGE;

/* The key from a file's first line, without its newline. */
static int read_key(const char *path, char *key, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f) return cli_fail(2, "--api-key-file %s: %s", path, strerror(errno));
    int ok = fgets(key, (int)cap, f) != NULL;
    fclose(f);
    key[strcspn(key, "\r\n")] = 0;
    if (!ok || !key[0]) return cli_fail(2, "--api-key-file %s: the first line is empty", path);
    return 0;
}

static int loopback_only(const char *url_host)
{
    return !strncmp(url_host, "127.", 4) || !strcmp(url_host, "[::1]");
}

/* Listening on every address: the URLs that reach this machine, from its interfaces. */
static void print_urls(const char *url_host, unsigned port)
{
    int any4 = !strcmp(url_host, "0.0.0.0"), any6 = !strcmp(url_host, "[::]");
    if (!any4 && !any6) return;
    struct ifaddrs *ifs;
    if (getifaddrs(&ifs)) return;
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
        if (!i->ifa_addr || !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
        int fam = i->ifa_addr->sa_family;
        if (fam != AF_INET && !(any6 && fam == AF_INET6)) continue;
        char num[INET6_ADDRSTRLEN];
        socklen_t len = fam == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
        if (getnameinfo(i->ifa_addr, len, num, sizeof num, NULL, 0, NI_NUMERICHOST)) continue;
        if (fam == AF_INET6 && strchr(num, '%')) continue;   /* link-local: needs a zone, not for a class */
        fprintf(stderr, "  students: http://%s%s%s:%u/\n", fam == AF_INET6 ? "[" : "", num, fam == AF_INET6 ? "]" : "", port);
    }
    freeifaddrs(ifs);
}

typedef struct serve_args {
    const char *model, *host, *key, *key_file, *log;
    long port, threads, slots, queue, per_client, default_max;
    double idle_s, body_s;
    int special, no_batch;
    tl_precision prec;
} serve_args;

static int int_option(const char *a, const char *v, serve_args *s)
{
    static const struct { const char *name; long lo, hi; size_t off; } opts[] = {
        {"--port", 0, 65535, offsetof(serve_args, port)}, {"--threads", 0, 1024, offsetof(serve_args, threads)},
        {"--slots", 1, SERVE_MAX_SLOTS, offsetof(serve_args, slots)}, {"--queue", 0, 1024, offsetof(serve_args, queue)},
        {"--per-client", 0, 1024, offsetof(serve_args, per_client)},
        {"--default-max-tokens", 1, 1 << 20, offsetof(serve_args, default_max)}};
    for (size_t k = 0; k < sizeof opts / sizeof *opts; k++) {
        if (strcmp(a, opts[k].name)) continue;
        long x;
        if (cli_parse_int(v, opts[k].lo, opts[k].hi, &x))
            return cli_fail(2, "%s %s: expected an integer from %ld to %ld", a, v, opts[k].lo, opts[k].hi);
        *(long *)((char *)s + opts[k].off) = x;
        return 1;
    }
    if (!strcmp(a, "--idle-timeout") || !strcmp(a, "--body-timeout")) {
        char *end;
        double x = strtod(v, &end);
        if (end == v || *end || !(x >= 0.1 && x <= 3600))
            return cli_fail(2, "%s %s: expected seconds from 0.1 to 3600", a, v);
        *(!strcmp(a, "--idle-timeout") ? &s->idle_s : &s->body_s) = x;
        return 1;
    }
    return 0;
}

static int parse_args(int argc, char **argv, serve_args *s)
{
    static const char *const with_value[] = {"--model", "--host", "--api-key", "--api-key-file", "--log", "--port",
        "--threads", "--slots", "--queue", "--per-client", "--default-max-tokens", "--idle-timeout", "--body-timeout", NULL};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int needs = 0, pf, r;
        for (int k = 0; with_value[k]; k++) needs |= !strcmp(a, with_value[k]);
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(usage, stdout); return 1; }
        if (!strcmp(a, "--allow-special-in-content")) { s->special = 1; continue; }
        if (!strcmp(a, "--no-batch")) { s->no_batch = 1; continue; }
        if ((pf = cli_precision_flag(a, &s->prec)) != 0) {
            if (pf < 0) return 2;
            continue;
        }
        if (needs && i + 1 >= argc) return cli_fail(2, "%s: needs a value", a);
        if (!needs) {
            fputs(usage, stderr);
            return cli_fail(2, "%s: unknown option", a);
        }
        const char *v = argv[++i];
        if ((r = int_option(a, v, s)) != 0) {
            if (r != 1) return r;
        } else if (!strcmp(a, "--model")) s->model = v;
        else if (!strcmp(a, "--host")) s->host = v;
        else if (!strcmp(a, "--api-key")) s->key = v;
        else if (!strcmp(a, "--api-key-file")) s->key_file = v;
        else s->log = v;
    }
    return 0;
}

int cmd_serve(int argc, char **argv)
{
    serve_args s = {.model = getenv("TOKENLOOP_MODEL"), .host = "127.0.0.1", .port = 8080, .slots = 1, .queue = 8,
                    .prec = TL_PRECISION_MIXED};
    int rc = parse_args(argc, argv, &s);
    if (rc) return rc == 1 ? 0 : rc;
    char key[512];
    if (s.key_file) {
        if ((rc = read_key(s.key_file, key, sizeof key))) return rc;
        s.key = key;
    } else if (!s.key && getenv("TOKENLOOP_API_KEY") && getenv("TOKENLOOP_API_KEY")[0]) {
        s.key = getenv("TOKENLOOP_API_KEY");
    }
    tl_error err = {{0}};
    char default_model[4096];
    if (!s.model) {
        if (tl_paths_default_model(default_model, sizeof default_model, &err))
            return cli_fail(2, "--model: no model given, and %s", err.msg);
        s.model = default_model;
    }
    FILE *log = NULL;
    if (s.log && !(log = fopen(s.log, "a"))) return cli_fail(2, "--log %s: %s", s.log, strerror(errno));
    /* SIGINT/SIGTERM end the server: blocked before its threads start, so every one inherits
     * the mask and sigwait below takes them */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    serve_opts o = {.model_dir = s.model, .host = s.host, .port = (int)s.port, .slots = (int)s.slots,
                    .queue = (int)s.queue, .threads = (int)s.threads, .per_client = (int)s.per_client, .api_key = s.key,
                    .precision = s.prec, .parse_special = s.special, .default_max_tokens = (int)s.default_max,
                    .idle_s = s.idle_s, .body_s = s.body_s, .log = log, .no_batch = s.no_batch};
    server *srv;
    if (serve_start(&srv, &o, &err)) {
        if (log) fclose(log);
        return cli_fail(strncmp(err.msg, "--host", 6) ? 1 : 2, "%s", err.msg);
    }
    const char *h = serve_host(srv);
    fprintf(stderr, "tokenloop serve: %s on http://%s:%u, %d slot%s (POST /v1/chat/completions; Ctrl-C stops)\n",
            serve_model_id(srv), h, serve_port(srv), serve_slots(srv), serve_slots(srv) == 1 ? "" : "s");
    print_urls(h, serve_port(srv));
    if (!loopback_only(h) && !s.key)
        fprintf(stderr, "tokenloop serve: warning: listening beyond this machine without a key: anyone on the "
                "network can use it (--api-key-file FILE or TOKENLOOP_API_KEY)\n");
    int sig;
    sigwait(&stop, &sig);
    fprintf(stderr, "tokenloop serve: %s: draining (new requests get 503; running answers end within %.0f s)\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM", DRAIN_S);
    serve_drain(srv, DRAIN_S);
    serve_stop(srv);
    if (log) fclose(log);
    return 0;
}
