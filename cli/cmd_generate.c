/* tokenloop generate: run generation headlessly through the session API, one forward pass per
 * step. Text streams to stdout as transformers' TextStreamer prints it (or as a server would,
 * --stream-mode server); metrics go to stderr. --json prints one object instead. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "commands.h"
#include "tokenloop/file.h"
#include "tokenloop/engine.h"
#include "tokenloop/paths.h"
#include "tokenloop/session.h"
#include "tokenloop/synthetic.h"
#include "tokenloop/tokenizer.h"

static const char usage[] =
    "usage: tokenloop generate [--model DIR | --synthetic NAME] (--ids 128000,791,... | --prompt TEXT [--system TEXT] |\n"
    "                          --messages FILE) [--no-generation-prompt] [--no-parse-special-in-content]\n"
    "                          [--max-new-tokens N]\n"
    "                          [--greedy | --temperature T --top-k K --top-p P] [--seed S] [--top N]\n"
    "                          [--stop STR]... [--stream-mode hf|server] [--device cpu|cuda]\n"
    "                          [--threads N] [--async] [--exact | --bf16-activations]\n"
    "                          [--dtype D] [--kv-cache fp32|bf16] [--json | --print-transformers-code]\n"
    "  Generates one forward pass at a time. The first pass (the prefill) reads the whole prompt\n"
    "  and chooses the first new token; each later pass (decode) reads one token.\n"
    "  --model DIR        Hugging Face Llama directory (default: $TOKENLOOP_MODEL, else the\n"
    "                     bundled model, assets/models/" TL_DEFAULT_MODEL_NAME ")\n"
    "  --synthetic NAME   random weights of a published shape (llama-3.2-1b, llama-3.1-8b), made\n"
    "                     in memory, with the bundled tokenizer: the tokens are noise, the timing\n"
    "                     is real (weights that reach memory); --dtype converts them, and a\n"
    "                     smaller dtype is taken, saying so, when memory is short\n"
    "  --ids LIST         prompt token ids, comma-separated (no template, no tokenizer)\n"
    "  --prompt TEXT      a user message, wrapped in the model's chat template\n"
    "  --system TEXT      a system message before it\n"
    "  --messages FILE    a JSON array of {\"role\", \"content\"} messages\n"
    "  --no-generation-prompt  do not append the assistant header\n"
    "  --no-parse-special-in-content  encode message content as plain text: \"<|eot_id|>\" typed\n"
    "                     in a message stays text (by default it is the special token, as in\n"
    "                     transformers, so a user can end their turn early: prompt injection)\n"
    "  --max-new-tokens N budget (default: generation_config.json, else 20)\n"
    "  --greedy           argmax; --temperature/--top-k/--top-p sample (defaults from\n"
    "                     generation_config.json, top_k 50)\n"
    "  --seed S           RNG seed (same seed, same tokens; default 0)\n"
    "  --top N            candidates reported per step (1..64, default 10)\n"
    "  --stop STR         stop when STR appears in the generated text (repeatable)\n"
    "  --stream-mode M    hf: TextStreamer (word by word); server: hold back only unfinished\n"
    "                     UTF-8 and a possible stop string\n"
    "  --device D         cpu (default) or cuda\n"
    "  --threads N        CPU threads (default: all cores)\n"
    "  --async            queue each pass's operations to a worker thread, as a GPU stream does,\n"
    "                     so the clock read before synchronizing (wrong reading 2) means\n"
    "                     something on the CPU too (CUDA always works this way)\n"
    CLI_PRECISION_USAGE
    "  --kv-cache bf16    keep K and V in bf16: half the cache's bytes a step, K and V rounded\n"
    "                     (default fp32: the logits transformers gives in float32; docs/accuracy.md)\n"
    "  --dtype D          convert the weights on load: bf16, f16, f32, q8_0 or q4_0 (llama.cpp's\n"
    "                     block formats: 8.5 and 4.5 bits a weight); fewer bytes a step, a faster\n"
    "                     pace, slightly different scores (default: as the files hold them)\n"
    "  --json             one JSON object on stdout instead of streamed text\n"
    "  --print-transformers-code  print a Python program that runs the same request with\n"
    "                     transformers (the TUI's c), and generate nothing\n";

static int parse_float(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

static int parse_ids(const char *s, int **ids, int *n)
{
    int cap = 16, k = 0;
    int *a = malloc(sizeof(int) * (size_t)cap);
    const char *p = s;
    if (!a) return -1;
    for (;;) {
        char *end;
        if (*p < '0' || *p > '9') {
            free(a);
            return -1;
        }
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno || v > INT_MAX) {
            free(a);
            return -1;
        }
        if (k == cap) {
            cap *= 2;
            int *b = realloc(a, sizeof(int) * (size_t)cap);
            if (!b) {
                free(a);
                return -1;
            }
            a = b;
        }
        a[k++] = (int)v;
        if (*end == 0) break;
        if (*end != ',') {
            free(a);
            return -1;
        }
        p = end + 1;
    }
    *ids = a;
    *n = k;
    return 0;
}

static cJSON *num_or_null(double v) { return v < 0 ? cJSON_CreateNull() : cJSON_CreateNumber(v); }

static int stream_step(void *ctx, tl_session *s, const tl_step *st)
{
    (void)ctx;
    (void)s;
    if (st->printed && st->printed[0]) {
        fputs(st->printed, stdout);
        fflush(stdout);
    }
    return 0;
}

static void print_metrics(tl_session *s)
{
    tl_metrics_report r = tl_session_metrics(s);
    const tl_stop_result *stop = tl_session_stop(s);
    const tl_stop_config *sc = tl_session_stop_config(s);
    fprintf(stderr, "\n--\nstop: %s (%s); budget %d new tokens from %s\n", tl_stop_reason_name(stop->reason),
            stop->detail, sc->max_new_tokens, tl_budget_source_name(sc->budget_source));
    const tl_tokenizer *tok = tl_session_tokenizer(s);
    fprintf(stderr, "EOS set (%s):", sc->eos_source ? sc->eos_source : "none");
    for (int i = 0; i < sc->n_eos; i++) {
        const char *nm = tok ? tl_tokenizer_token(tok, sc->eos_ids[i]) : NULL;
        fprintf(stderr, " %d%s%s", sc->eos_ids[i], nm ? " " : "", nm ? nm : "");
    }
    fprintf(stderr, "\nprompt %d tokens, generated %d", r.prompt_tokens, r.generated);
    if (r.template_ms >= 0) fprintf(stderr, "; templating %.2f ms, tokenizing %.2f ms", r.template_ms, r.tokenize_ms);
    fprintf(stderr, "\nTTFT %.2f ms (request start -> first id on the host)\n", r.ttft_ms);
    if (r.tpot_ms >= 0)
        fprintf(stderr, "TPOT %.2f ms, decode %.1f tokens/s (over the %d tokens after the first)\n", r.tpot_ms,
                r.decode_tokens_per_s, r.generated - 1);
    else
        fprintf(stderr, "TPOT n/a (needs two generated tokens)\n");
    if (r.floor_ms > 0) {
        fprintf(stderr, "floor %.2f ms = %.3g GB read per step / %.1f GB/s", r.floor_ms, r.step_bytes / 1e9,
                r.bandwidth_gbs);
        if (r.floor_reads > 0)
            fprintf(stderr, " (%d reads of the weights beside the steps: %.2f-%.2f ms)", r.floor_reads,
                    r.floor_lo_ms, r.floor_hi_ms);
        if (r.below_floor)
            fprintf(stderr, "; TPOT below the floor's spread: a measurement problem, no ratio");
        else if (r.tpot_over_floor > 0)
            fprintf(stderr, "; TPOT / floor %.2f", r.tpot_over_floor);
        fprintf(stderr, " (class reference: 16 GB / 3.35 TB/s = %.1f ms, Llama 3.1 8B bf16 on an H100)\n",
                r.ref_floor_ms);
        if (r.in_cache)
            fprintf(stderr, "the weights (%.1f MB) %s the %.1f MB last-level cache: a DRAM floor does not bind them,"
                            " the floor is the read from cache\n", r.weight_bytes / 1e6,
                    r.in_cache == 2 ? "fit" : "are within twice the size of", r.llc_bytes / 1e6);
    } else
        fprintf(stderr, "floor unknown (no bandwidth figure for this device); class reference %.1f ms\n",
                r.ref_floor_ms);
    fprintf(stderr, "wrong reading 1, prompt counted as output: %.1f tokens/s\n", r.prompt_as_output_tokens_per_s);
    if (r.unsynced_applicable && r.unsynced_tpot_ms >= 0)
        fprintf(stderr, "wrong reading 2, clock read before synchronizing: TPOT %.3f ms\n", r.unsynced_tpot_ms);
    else
        fprintf(stderr, "wrong reading 2, unsynchronized clock: not applicable (synchronous backend)\n");
}

static void print_json(tl_session *s)
{
    cJSON *o = cJSON_CreateObject();
    int n;
    const int *ids = tl_session_prompt_ids(s, &n);
    cJSON_AddItemToObject(o, "prompt_ids", cJSON_CreateIntArray(ids, n));
    ids = tl_session_generated_ids(s, &n);
    cJSON_AddItemToObject(o, "generated_ids", cJSON_CreateIntArray(ids, n));
    const char *pt = tl_session_prompt_text(s, NULL);
    if (pt) cJSON_AddStringToObject(o, "prompt_text", pt);
    else cJSON_AddNullToObject(o, "prompt_text");
    cJSON_AddStringToObject(o, "text", tl_session_text(s, NULL));
    cJSON_AddStringToObject(o, "streamed", tl_session_streamed(s, NULL));
    const tl_stop_result *stop = tl_session_stop(s);
    const tl_stop_config *sc = tl_session_stop_config(s);
    cJSON_AddStringToObject(o, "stop_reason", tl_stop_reason_name(stop->reason));
    cJSON_AddStringToObject(o, "stop_detail", stop->detail);
    if (stop->reason == TL_STOP_STRING) {
        cJSON_AddStringToObject(o, "stop_string", sc->stop[stop->stop_index]);
        cJSON_AddNumberToObject(o, "stop_match_start", (double)stop->match_start);
        cJSON_AddNumberToObject(o, "stop_match_end", (double)stop->match_end);
    }
    cJSON_AddStringToObject(o, "budget_source", tl_budget_source_name(sc->budget_source));
    cJSON_AddNumberToObject(o, "max_new_tokens", sc->max_new_tokens);
    cJSON_AddItemToObject(o, "eos_ids", cJSON_CreateIntArray(sc->eos_ids, sc->n_eos));
    cJSON *names = cJSON_AddArrayToObject(o, "eos_tokens");
    const tl_tokenizer *tok = tl_session_tokenizer(s);
    for (int i = 0; i < sc->n_eos; i++) {
        const char *nm = tok ? tl_tokenizer_token(tok, sc->eos_ids[i]) : NULL;
        cJSON_AddItemToArray(names, nm ? cJSON_CreateString(nm) : cJSON_CreateNull());
    }
    cJSON_AddStringToObject(o, "eos_source", sc->eos_source ? sc->eos_source : "");
    tl_metrics_report r = tl_session_metrics(s);
    cJSON_AddItemToObject(o, "template_ms", num_or_null(r.template_ms));
    cJSON_AddItemToObject(o, "tokenize_ms", num_or_null(r.tokenize_ms));
    cJSON_AddItemToObject(o, "ttft_ms", num_or_null(r.ttft_ms));
    cJSON_AddItemToObject(o, "tpot_ms", num_or_null(r.tpot_ms));
    cJSON_AddItemToObject(o, "decode_tokens_per_s", num_or_null(r.decode_tokens_per_s));
    cJSON_AddItemToObject(o, "prompt_as_output_tokens_per_s", num_or_null(r.prompt_as_output_tokens_per_s));
    if (r.unsynced_applicable) cJSON_AddItemToObject(o, "unsynced_tpot_ms", num_or_null(r.unsynced_tpot_ms));
    else cJSON_AddStringToObject(o, "unsynced_tpot_ms", "not applicable (synchronous backend)");
    /* the same decode passes read after synchronizing: trap 2 is the gap between the two */
    cJSON_AddItemToObject(o, "pass_mean_ms", num_or_null(r.pass_mean_ms));
    /* what those passes include beside the forward pass: the sampler's statistics, gathered by
     * the lm_head's kernel as it wrote the scores (CPU, AVX-512 BF16) */
    cJSON_AddBoolToObject(o, "pass_includes_sampler_stats", tl_session_pass_stats(s));
    cJSON_AddBoolToObject(o, "async", tl_engine_async(tl_session_engine(s)));
    cJSON_AddStringToObject(o, "precision", tl_precision_name(tl_engine_precision(tl_session_engine(s))));
    cJSON_AddItemToObject(o, "floor_ms", num_or_null(r.floor_ms));
    cJSON_AddItemToObject(o, "bandwidth_gbs", num_or_null(r.bandwidth_gbs));
    /* the floor's reads of the same weights beside the steps: how many, their spread; a pace
     * under the fastest read is a measurement problem (below_floor) and gets no ratio */
    cJSON_AddNumberToObject(o, "floor_reads", r.floor_reads);
    cJSON_AddNumberToObject(o, "floor_pairs", r.floor_pairs);   /* reads right after a decode pass */
    cJSON_AddItemToObject(o, "floor_lo_ms", num_or_null(r.floor_lo_ms));
    cJSON_AddItemToObject(o, "floor_hi_ms", num_or_null(r.floor_hi_ms));
    cJSON_AddItemToObject(o, "tpot_over_floor", num_or_null(r.tpot_over_floor));
    cJSON_AddBoolToObject(o, "below_floor", r.below_floor);
    cJSON_AddItemToObject(o, "floor_ratio_measured", num_or_null(r.floor_ratio_measured));
    cJSON_AddItemToObject(o, "llc_bytes", r.llc_bytes > 0 ? cJSON_CreateNumber(r.llc_bytes) : cJSON_CreateNull());
    cJSON_AddStringToObject(o, "weights_in_cache", r.in_cache == 2 ? "fit" : r.in_cache == 1 ? "near" : "no");
    cJSON_AddNumberToObject(o, "step_bytes", r.step_bytes);
    cJSON_AddStringToObject(o, "dtype", tl_dtype_name(tl_session_dtype(s)));
    cJSON_AddStringToObject(o, "file_dtype", tl_dtype_name(tl_session_file_dtype(s)));
    /* random weights of a published shape: the tokens are noise, the timing is real */
    if (tl_session_synthetic(s)) cJSON_AddStringToObject(o, "synthetic", tl_session_synthetic(s));
    else cJSON_AddNullToObject(o, "synthetic");
    cJSON_AddStringToObject(o, "kv_cache", tl_engine_kv_dtype(tl_session_engine(s)) == TL_BF16 ? "bf16" : "fp32");
    cJSON_AddNumberToObject(o, "weight_bytes", (double)tl_session_model(s)->weight_bytes);
    cJSON_AddNumberToObject(o, "ref_floor_ms", r.ref_floor_ms);
    cJSON_AddItemToObject(o, "pace_ms", num_or_null(r.pace_ms));
    cJSON_AddItemToObject(o, "pass_mean_ms", num_or_null(r.pass_mean_ms));
    cJSON_AddNumberToObject(o, "paused_gaps", r.paused_gaps);
    cJSON_AddItemToObject(o, "lesson_tokens_per_s", num_or_null(r.lesson_tokens_per_s));
    char *settings = tl_session_settings_json(s);
    cJSON *sj = settings ? cJSON_Parse(settings) : NULL;
    free(settings);
    cJSON_AddItemToObject(o, "settings", sj ? sj : cJSON_CreateNull());
    cJSON *steps = cJSON_AddArrayToObject(o, "steps");
    for (int i = 0; i < tl_session_n_steps(s); i++) {
        const tl_step *st = tl_session_step_at(s, i);
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "index", st->index);
        cJSON_AddStringToObject(j, "kind", st->kind == TL_STEP_PREFILL ? "prefill" : "decode");
        cJSON_AddNumberToObject(j, "ms", st->ms);
        cJSON_AddNumberToObject(j, "chosen", st->chosen);
        cJSON_AddStringToObject(j, "piece", st->piece);
        cJSON_AddStringToObject(j, "printed", st->printed ? st->printed : "");
        cJSON_AddStringToObject(j, "held_back", st->held ? st->held : "");
        cJSON_AddNumberToObject(j, "hold_reason", st->hold_reason);
        cJSON *c = cJSON_AddArrayToObject(j, "candidates");
        for (int k = 0; k < st->sample.n; k++) {
            const tl_candidate *cd = &st->sample.cand[k];
            cJSON *x = cJSON_CreateObject();
            cJSON_AddNumberToObject(x, "id", cd->id);
            cJSON_AddNumberToObject(x, "logit", cd->logit);
            cJSON_AddNumberToObject(x, "prob", cd->prob);
            cJSON_AddNumberToObject(x, "prob_final", cd->prob_final);
            cJSON_AddItemToArray(c, x);
        }
        cJSON_AddItemToArray(steps, j);
    }
    char *txt = cJSON_PrintUnformatted(o);
    if (txt) puts(txt);
    free(txt);
    cJSON_Delete(o);
}

/* What the command line asks for. */
typedef struct {
    const char *model, *synthetic, *ids_arg, *prompt, *system, *messages, *device, *dtype;
    const char *stop[TL_MAX_STOP];
    tl_precision prec;
    int n_stop, json, print_code, async, kv_bf16, gen_prompt, parse_special, greedy;
    int have_t, have_k, have_p, have_seed;   /* given on the command line, so they override */
    long max_new, top_k, top_n, threads, seed;
    double temperature, top_p;
    tl_stream_mode mode;
} gen_opts;

/* The integer options: 0 with the value set (and the flag that says it was given, where there
 * is one), the status 2 when v is not in range (said), -1 when a is none of them. */
static int int_option(gen_opts *o, const char *a, const char *v)
{
    const struct {
        const char *name;
        long lo, hi, *out;
        int *given;
        const char *expected;   /* a format of hi */
    } opts[] = {
        {"--max-new-tokens", 1, 1 << 24, &o->max_new, NULL, "an integer in [1, %ld]"},
        {"--top-k", 0, INT_MAX, &o->top_k, &o->have_k, "an integer >= 0"},
        {"--seed", 0, LONG_MAX, &o->seed, &o->have_seed, "an integer >= 0"},
        {"--top", 1, TL_MAX_TOP, &o->top_n, NULL, "1..%ld"},
        {"--threads", 0, 4096, &o->threads, NULL, "an integer >= 0"},
    };
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++) {
        if (strcmp(a, opts[i].name))
            continue;
        if (cli_parse_int(v, opts[i].lo, opts[i].hi, opts[i].out)) {
            char want[64];
            snprintf(want, sizeof want, opts[i].expected, opts[i].hi);
            return cli_fail(2, "%s: %s: expected %s", a, v, want);
        }
        if (opts[i].given)
            *opts[i].given = 1;
        return 0;
    }
    return -1;
}

/* One option that takes a value, checked: 0, or the status to exit with. */
static int parse_value(gen_opts *o, const char *a, const char *v)
{
    int rc = int_option(o, a, v);
    if (rc >= 0)
        return rc;
    if (!strcmp(a, "--model")) o->model = v;
    else if (!strcmp(a, "--synthetic")) o->synthetic = v;
    else if (!strcmp(a, "--ids")) o->ids_arg = v;
    else if (!strcmp(a, "--prompt")) o->prompt = v;
    else if (!strcmp(a, "--system")) o->system = v;
    else if (!strcmp(a, "--messages")) o->messages = v;
    else if (!strcmp(a, "--device")) o->device = v;
    else if (!strcmp(a, "--kv-cache")) {
        if (strcmp(v, "fp32") && strcmp(v, "bf16")) return cli_fail(2, "--kv-cache: %s: expected fp32 or bf16", v);
        o->kv_bf16 = !strcmp(v, "bf16");
    }
    else if (!strcmp(a, "--dtype")) {
        tl_dtype dt;
        if (tl_dtype_parse(v, &dt)) return cli_fail(2, "--dtype: %s: expected bf16, f16, f32, q8_0 or q4_0", v);
        o->dtype = v;
    }
    else if (!strcmp(a, "--temperature")) {
        if (parse_float(v, &o->temperature) || o->temperature <= 0)
            return cli_fail(2, "--temperature: %s: expected a number > 0 (use --greedy for argmax)", v);
        o->have_t = 1;
    } else if (!strcmp(a, "--top-p")) {
        if (parse_float(v, &o->top_p) || o->top_p <= 0 || o->top_p > 1)
            return cli_fail(2, "--top-p: %s: expected a number in (0, 1]", v);
        o->have_p = 1;
    } else if (!strcmp(a, "--stream-mode")) {
        if (!strcmp(v, "hf")) o->mode = TL_STREAM_HF;
        else if (!strcmp(v, "server")) o->mode = TL_STREAM_SERVER;
        else return cli_fail(2, "--stream-mode: %s: expected hf or server", v);
    } else if (!strcmp(a, "--stop")) {
        if (!v[0]) return cli_fail(2, "--stop: empty stop string");
        if (o->n_stop == TL_MAX_STOP) return cli_fail(2, "--stop: at most %d stop strings", TL_MAX_STOP);
        o->stop[o->n_stop++] = v;
    }
    return 0;
}

/* The command line into o: 0, -1 when --help was printed, or the status to exit with. */
static int parse_args(int argc, char **argv, gen_opts *o)
{
    *o = (gen_opts){.prec = TL_PRECISION_MIXED, .gen_prompt = 1, .parse_special = 1, .top_n = 10, .temperature = 1,
                    .top_p = 1, .mode = TL_STREAM_HF};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return -1;
        }
        if (!strcmp(a, "--json")) { o->json = 1; continue; }
        if (!strcmp(a, "--print-transformers-code")) { o->print_code = 1; continue; }
        if (!strcmp(a, "--greedy")) { o->greedy = 1; continue; }
        int pf = cli_engine_flag(a, &o->async, &o->prec);
        if (pf < 0) return 2;
        if (pf) continue;
        if (!strcmp(a, "--no-generation-prompt")) { o->gen_prompt = 0; continue; }
        if (!strcmp(a, "--no-parse-special-in-content")) { o->parse_special = 0; continue; }
        static const char *const with_value[] = {"--model", "--synthetic", "--ids", "--prompt", "--system", "--messages",
            "--max-new-tokens", "--temperature", "--top-k", "--top-p", "--seed", "--top", "--stop",
            "--stream-mode", "--device", "--threads", "--dtype", "--kv-cache"};
        int known = 0;
        for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++)
            if (!strcmp(a, with_value[k])) known = 1;
        if (!known) {
            fputs(usage, stderr);
            return cli_fail(2, "generate: %s: unknown option", a);
        }
        if (i + 1 >= argc) return cli_fail(2, "generate: %s: missing value", a);
        int rc = parse_value(o, a, argv[++i]);
        if (rc) return rc;
    }
    int n_sources = (o->ids_arg != NULL) + (o->prompt != NULL) + (o->messages != NULL);
    if (n_sources != 1) return cli_fail(2, "generate: give exactly one of --ids, --prompt, --messages");
    if (o->system && !o->prompt) return cli_fail(2, "--system: only with --prompt");
    if (o->greedy && (o->have_t || o->have_k || o->have_p)) return cli_fail(2, "--greedy: cannot be combined with --temperature/--top-k/--top-p");
    if (o->json && o->print_code) return cli_fail(2, "--print-transformers-code: cannot be combined with --json");
    if (o->device && strcmp(o->device, "cpu") && strcmp(o->device, "cuda")) return cli_fail(2, "--device: %s: expected cpu or cuda", o->device);
    return 0;
}

/* The session: on the model directory, or on random weights of a published shape (syn_cfg). */
static int open_session(tl_session **s, const gen_opts *go, const tl_config *syn_cfg, tl_error *err)
{
    tl_session_opts o = {.model_dir = go->model, .device = go->device, .threads = (int)go->threads,
                         .async = go->async, .precision = go->prec, .kv_bf16 = go->kv_bf16, .dtype = go->dtype,
                         .synthetic = go->synthetic};
    if (!go->synthetic)
        return tl_session_open(s, &o, err);
    tl_dtype got;
    if (cli_synthetic_dtype(go->synthetic, go->dtype, &got, err))
        return -1;
    if (!go->json)
        fprintf(stderr, "%s: random weights of the published shape, %s: the tokens are noise, the timing is real\n",
                go->synthetic, tl_dtype_name(got));
    return cli_open_synthetic(s, o, syn_cfg, got, err);
}

/* The prompt (ids, a user message or a messages file) and every setting of o on the session.
 * *msgs: the messages file's text, the caller's to free. */
static int set_request(tl_session *s, const gen_opts *o, const int *ids, int n_ids, char **msgs, tl_error *err)
{
    if (ids) {
        if (tl_session_set_prompt_ids(s, ids, n_ids, err)) return -1;
    } else if (o->prompt) {
        if (tl_session_set_user(s, o->system, o->prompt, err)) return -1;
    } else {
        size_t mlen = 0;
        if (tl_file_read(o->messages, 16u << 20, msgs, &mlen, err))
            return -1;
        /* the file's fault is named as the file's, before the template sees it */
        tl_error merr;
        if (tl_chat_messages_check(*msgs, mlen, &merr) || tl_session_set_messages(s, *msgs, &merr))
            return tl_error_set(err, "%s: %s", o->messages, merr.msg);
    }
    tl_session_set_add_generation_prompt(s, o->gen_prompt);
    tl_session_set_parse_special_in_content(s, o->parse_special);
    tl_sampling p = tl_session_sampling(s);
    if (o->greedy) p.greedy = 1;
    if (o->have_t || o->have_k || o->have_p) p.greedy = 0;
    if (o->have_t) p.temperature = (float)o->temperature;
    if (o->have_k) p.top_k = (int)o->top_k;
    if (o->have_p) p.top_p = (float)o->top_p;
    if (o->have_seed) p.seed = (uint64_t)o->seed;
    tl_session_set_sampling(s, p);
    tl_session_set_max_new_tokens(s, (int)o->max_new);
    if (tl_session_set_stop_strings(s, o->stop, o->n_stop, err)) return -1;
    tl_session_set_stream_mode(s, o->mode);
    tl_session_set_top_n(s, (int)o->top_n);
    return 0;
}

int cmd_generate(int argc, char **argv)
{
    gen_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    int *ids = NULL, n_ids = 0;
    if (o.ids_arg && !o.ids_arg[0]) return cli_fail(2, "--ids: empty (expected comma-separated token ids)");
    if (o.ids_arg && parse_ids(o.ids_arg, &ids, &n_ids))
        return cli_fail(2, "--ids: %s: expected comma-separated token ids (integers >= 0)", o.ids_arg);
    tl_error err = {{0}};
    if (o.model && o.synthetic) {
        free(ids);
        return cli_fail(2, "generate: give one of --model DIR and --synthetic NAME");
    }
    tl_config syn_cfg;
    if (o.synthetic && tl_synthetic_config(&syn_cfg, o.synthetic, &err)) {
        free(ids);
        return cli_fail(2, "--synthetic %s", err.msg);
    }
    char default_model[4096];
    if (!o.model && !o.synthetic) {
        tl_error perr = {{0}};
        if (tl_paths_default_model(default_model, sizeof default_model, &perr)) {
            free(ids);
            return cli_fail(2, "--model: no model given, and %s", perr.msg);
        }
        o.model = default_model;
    }

    tl_session *s = NULL;
    int status = 1;
    char *msgs = NULL;
    if (open_session(&s, &o, &syn_cfg, &err) || set_request(s, &o, ids, n_ids, &msgs, &err)) goto fail;
    if (o.print_code) {   /* rendered first: the budget may come from the prompt's length */
        if (tl_session_prepare(s, &err)) goto fail;
        char *code = tl_session_hf_call(s);
        if (!code) {
            tl_error_set(&err, "--print-transformers-code: out of memory");
            goto fail;
        }
        fputs(code, stdout);
        free(code);
        status = 0;
        goto fail;
    }
    /* the JSON shows each candidate's model probability (prob, prob_final); the text nothing */
    tl_session_set_report(s, o.json ? TL_REPORT_MODEL : 0);
    if (tl_generate(s, o.json ? NULL : stream_step, NULL, &err) < 0) goto fail;
    if (o.json) {
        print_json(s);
    } else {
        /* a terminal's next prompt starts on a line of its own (TextStreamer ends with a newline
         * too); piped, stdout stays exactly the streamed text */
        size_t slen = 0;
        const char *streamed = tl_session_streamed(s, &slen);
        if (isatty(STDOUT_FILENO) && slen > 0 && streamed[slen - 1] != '\n')
            putchar('\n');
        fflush(stdout);
        print_metrics(s);
    }
    status = 0;
fail:
    if (status) cli_fail(1, "%s", err.msg);
    free(msgs);
    free(ids);
    tl_session_free(s);
    return status;
}
