/* `tokenloop tui`: step through generation in the terminal. Arguments and the model are checked
 * before the terminal is touched, so a bad one is one line on stderr and exit status 2 or 1. */
#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "commands.h"
#ifdef TL_HAVE_SERVE
#include "lesson_serve.h"
#endif
#include "tokenloop/paths.h"
#include "tokenloop/session.h"
#include "tokenloop/synthetic.h"

static const char *default_user = "What is the capital of France?";

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tokenloop tui [--model DIR | --synthetic NAME] [--prompt TEXT] [--system TEXT] [--device cpu|cuda]\n"
            "                     [--threads N] [--async] [--exact | --bf16-activations] [--dtype D]\n"
            "                     [--lang en|vi] [--kv-cache fp32|bf16] [--mono] [--bench-frame [N]]\n"
            "  Steps through generation one forward pass at a time. Without --model: $TOKENLOOP_MODEL,\n"
            "  else the bundled model (assets/models/tl-mini-instruct).\n"
            "  --synthetic NAME random weights of a published shape (llama-3.2-1b, llama-3.1-8b) with the\n"
            "                   bundled tokenizer, labelled as such: the tokens are noise, the timing is\n"
            "                   real; a smaller dtype when memory is short (it says so)\n"
            "  --async          queue each pass to a worker thread as a GPU stream does, so the Timing\n"
            "                   pane's unsynchronized reading (trap 2) shows on the CPU too\n"
            "  --exact          fp32 activations in every product with bf16 weights (default: only\n"
            "                   q/k/v keep them, the rest round them to bf16; docs/accuracy.md)\n"
            "  --bf16-activations  round them in every product, q/k/v too, as llama.cpp does\n"
            "  --dtype D        convert the weights on load: bf16, f16, f32, q8_0 or q4_0 (llama.cpp's\n"
            "                   blocks); d in the UI cycles the file's dtype, q8_0 and q4_0\n"
            "  --kv-cache bf16  keep K and V in bf16: half the cache's bytes a step, K and V rounded\n"
            "                   (default fp32; docs/accuracy.md)\n"
            "  --bench-frame N  draw N full frames at 160x48 off screen and print ms per frame\n"
            "  Keys: Space step, r run, \xE2\x86\x90 back, Enter force, ? all keys, q quit.\n");
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    long v;
    if (cli_parse_int(s, lo, hi, &v))
        return -1;
    *out = (int)v;
    return 0;
}

static void utf8_locale(void)
{
    setlocale(LC_ALL, "");
    const char *cs = nl_langinfo(CODESET);
    if (!cs || strcmp(cs, "UTF-8"))
        if (!setlocale(LC_CTYPE, "C.UTF-8"))
            setlocale(LC_CTYPE, "en_US.UTF-8");
}

/* What the command line asks for. */
typedef struct {
    const char *model, *synthetic, *prompt, *system, *device, *lang, *dtype;
    int threads, bench, mono, async, kv_bf16;
    tl_precision prec;
} tui_opts;

/* The command line into o: 0, -1 when --help was printed, or the status to exit with. */
static int parse_args(int argc, char **argv, tui_opts *o)
{
    int pf;
    *o = (tui_opts){.prec = TL_PRECISION_MIXED};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return -1;
        } else if (!strcmp(a, "--model") || !strcmp(a, "--synthetic") || !strcmp(a, "--prompt") || !strcmp(a, "--system") ||
                   !strcmp(a, "--device") || !strcmp(a, "--threads") || !strcmp(a, "--lang") ||
                   !strcmp(a, "--dtype") || !strcmp(a, "--kv-cache")) {
            if (!has)
                return cli_fail(2, "%s: needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--model"))
                o->model = v;
            else if (!strcmp(a, "--synthetic"))
                o->synthetic = v;
            else if (!strcmp(a, "--prompt"))
                o->prompt = v;
            else if (!strcmp(a, "--system"))
                o->system = v;
            else if (!strcmp(a, "--device")) {
                if (strcmp(v, "cpu") && strcmp(v, "cuda"))
                    return cli_fail(2, "--device: %s: expected cpu or cuda", v);
                o->device = v;
            } else if (!strcmp(a, "--kv-cache")) {
                if (strcmp(v, "fp32") && strcmp(v, "bf16"))
                    return cli_fail(2, "--kv-cache: %s: expected fp32 or bf16", v);
                o->kv_bf16 = !strcmp(v, "bf16");
            } else if (!strcmp(a, "--dtype")) {
                tl_dtype dt;
                if (tl_dtype_parse(v, &dt))
                    return cli_fail(2, "--dtype: %s: expected bf16, f16, f32, q8_0 or q4_0", v);
                o->dtype = v;
            } else if (!strcmp(a, "--threads")) {
                if (parse_int(v, 0, 1024, &o->threads))
                    return cli_fail(2, "--threads: %s: expected a number 0..1024", v);
            } else {
                if (strcmp(v, "en") && strcmp(v, "vi"))
                    return cli_fail(2, "--lang: %s: expected en or vi", v);
                o->lang = v;
            }
        } else if (!strcmp(a, "--mono")) {
            o->mono = 1;
        } else if ((pf = cli_engine_flag(a, &o->async, &o->prec)) != 0) {
            if (pf < 0)
                return 2;
        } else if (!strcmp(a, "--bench-frame")) {
            o->bench = 200;
            if (has && argv[i + 1][0] != '-') {
                if (parse_int(argv[++i], 1, 1000000, &o->bench))
                    return cli_fail(2, "--bench-frame: %s: expected a number of frames", argv[i]);
            }
        } else {
            fputs("tokenloop: ", stderr);
            fprintf(stderr, "%s: unknown option (tokenloop tui --help)\n", a);
            return 2;
        }
    }
    if (o->prompt && !*o->prompt)
        return cli_fail(2, "--prompt: empty");
    if (!o->bench && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)))
        return cli_fail(2, "tui: needs a terminal on stdin and stdout (tokenloop generate runs headless)");
    return 0;
}

/* The session on the model directory (default: the bundled model), or on random weights of a
 * published shape. 0, or the status to exit with (said). */
static int open_session(tl_session **s, const tui_opts *o)
{
    char bundled[4096];
    tl_error err;
    tl_config syn_cfg;
    const char *model = o->model;
    if (model && o->synthetic)
        return cli_fail(2, "tui: give one of --model DIR and --synthetic NAME");
    if (o->synthetic && tl_synthetic_config(&syn_cfg, o->synthetic, &err))
        return cli_fail(2, "--synthetic %s", err.msg);
    if (!model && !o->synthetic) {
        /* tokenloop/paths.h: $TOKENLOOP_MODEL, the install, a checkout, the source tree */
        if (tl_paths_default_model(bundled, sizeof bundled, &err))
            return cli_fail(1, "%s", err.msg);
        model = bundled;
    }
    utf8_locale();
    tl_session_opts so = {.model_dir = model, .device = o->device, .threads = o->threads, .async = o->async,
                          .precision = o->prec, .kv_bf16 = o->kv_bf16, .dtype = o->dtype, .synthetic = o->synthetic};
    tl_dtype got;
    if (!o->synthetic) {
        if (tl_session_open(s, &so, &err))
            return cli_fail(1, "%s", err.msg);
    } else {
        if (cli_synthetic_dtype(o->synthetic, o->dtype, &got, &err))
            return cli_fail(1, "%s", err.msg);
        fprintf(stderr, "tokenloop: filling %s with random weights...\n", o->synthetic);
        if (cli_open_synthetic(s, so, &syn_cfg, got, &err))
            return cli_fail(1, "%s", err.msg);
    }
    if (!tl_session_tokenizer(*s)) {
        tl_session_free(*s);
        *s = NULL;
        return cli_fail(1, "%s: no tokenizer.json for this model", model ? model : o->synthetic);
    }
    return 0;
}

int cmd_tui(int argc, char **argv)
{
    tui_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    tl_session *s = NULL;
    if ((rc = open_session(&s, &o)))
        return rc;
    const char *nc = getenv("NO_COLOR");
    tl_app_opts ao = {o.system, o.prompt ? o.prompt : default_user, o.lang, !o.mono && !(nc && *nc), NULL};
#ifdef TL_HAVE_SERVE
    ao.lesson_server = lesson_serve_request;
#endif
    rc = o.bench ? tl_tui_bench_frame(s, &ao, o.bench, 160, 48) : tl_tui_run(s, &ao);
    tl_session_free(s);
    return rc;
}
