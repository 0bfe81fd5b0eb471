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

int cmd_tui(int argc, char **argv)
{
    const char *model = NULL, *synthetic = NULL, *prompt = NULL, *system = NULL, *device = NULL, *lang = NULL, *dtype = NULL;
    int threads = 0, bench = 0, mono = 0, async = 0, kv_bf16 = 0, pf;
    tl_precision prec = TL_PRECISION_MIXED;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--model") || !strcmp(a, "--synthetic") || !strcmp(a, "--prompt") || !strcmp(a, "--system") ||
                   !strcmp(a, "--device") || !strcmp(a, "--threads") || !strcmp(a, "--lang") ||
                   !strcmp(a, "--dtype") || !strcmp(a, "--kv-cache")) {
            if (!has)
                return cli_fail(2, "%s: needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--model"))
                model = v;
            else if (!strcmp(a, "--synthetic"))
                synthetic = v;
            else if (!strcmp(a, "--prompt"))
                prompt = v;
            else if (!strcmp(a, "--system"))
                system = v;
            else if (!strcmp(a, "--device")) {
                if (strcmp(v, "cpu") && strcmp(v, "cuda"))
                    return cli_fail(2, "--device: %s: expected cpu or cuda", v);
                device = v;
            } else if (!strcmp(a, "--kv-cache")) {
                if (strcmp(v, "fp32") && strcmp(v, "bf16"))
                    return cli_fail(2, "--kv-cache: %s: expected fp32 or bf16", v);
                kv_bf16 = !strcmp(v, "bf16");
            } else if (!strcmp(a, "--dtype")) {
                tl_dtype dt;
                if (tl_dtype_parse(v, &dt))
                    return cli_fail(2, "--dtype: %s: expected bf16, f16, f32, q8_0 or q4_0", v);
                dtype = v;
            } else if (!strcmp(a, "--threads")) {
                if (parse_int(v, 0, 1024, &threads))
                    return cli_fail(2, "--threads: %s: expected a number 0..1024", v);
            } else {
                if (strcmp(v, "en") && strcmp(v, "vi"))
                    return cli_fail(2, "--lang: %s: expected en or vi", v);
                lang = v;
            }
        } else if (!strcmp(a, "--mono")) {
            mono = 1;
        } else if (!strcmp(a, "--async")) {
            async = 1;
        } else if ((pf = cli_precision_flag(a, &prec)) != 0) {
            if (pf < 0)
                return 2;
        } else if (!strcmp(a, "--bench-frame")) {
            bench = 200;
            if (has && argv[i + 1][0] != '-') {
                if (parse_int(argv[++i], 1, 1000000, &bench))
                    return cli_fail(2, "--bench-frame: %s: expected a number of frames", argv[i]);
            }
        } else {
            fputs("tokenloop: ", stderr);
            fprintf(stderr, "%s: unknown option (tokenloop tui --help)\n", a);
            return 2;
        }
    }
    if (prompt && !*prompt)
        return cli_fail(2, "--prompt: empty");
    if (!bench && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)))
        return cli_fail(2, "tui: needs a terminal on stdin and stdout (tokenloop generate runs headless)");

    char bundled[4096];
    tl_error err;
    tl_config syn_cfg;
    if (model && synthetic)
        return cli_fail(2, "tui: give one of --model DIR and --synthetic NAME");
    if (synthetic && tl_synthetic_config(&syn_cfg, synthetic, &err))
        return cli_fail(2, "--synthetic %s", err.msg);
    if (!model && !synthetic) {
        /* tokenloop/paths.h: $TOKENLOOP_MODEL, the install, a checkout, the source tree */
        if (tl_paths_default_model(bundled, sizeof bundled, &err))
            return cli_fail(1, "%s", err.msg);
        model = bundled;
    }
    utf8_locale();

    tl_session_opts so;
    memset(&so, 0, sizeof so);
    so.model_dir = model;
    so.device = device;
    so.threads = threads;
    so.async = async;
    so.precision = prec;
    so.kv_bf16 = kv_bf16;
    so.dtype = dtype;
    so.synthetic = synthetic;
    tl_session *s = NULL;
    if (synthetic) {   /* random bf16 weights, converted by the session when another dtype runs */
        tl_dtype want = TL_BF16, got;
        char note[256];
        tl_model *m = NULL;
        if (dtype)
            tl_dtype_parse(dtype, &want);
        if (tl_synthetic_pick_dtype(synthetic, want, tl_synthetic_mem_available(), &got, note, sizeof note, &err))
            return cli_fail(1, "%s", err.msg);
        if (note[0])
            fprintf(stderr, "tokenloop: %s\n", note);
        fprintf(stderr, "tokenloop: filling %s with random weights...\n", synthetic);
        so.dtype = got == TL_BF16 ? NULL : tl_dtype_name(got);
        if (tl_model_synthetic(&m, &syn_cfg, TL_BF16, 0, &err) || tl_session_open_model(&s, m, 1, &so, &err))
            return cli_fail(1, "%s", err.msg);
    } else if (tl_session_open(&s, &so, &err))
        return cli_fail(1, "%s", err.msg);
    if (!tl_session_tokenizer(s)) {
        tl_session_free(s);
        return cli_fail(1, "%s: no tokenizer.json for this model", model ? model : synthetic);
    }

    const char *nc = getenv("NO_COLOR");
    tl_app_opts ao = {system, prompt ? prompt : default_user, lang, !mono && !(nc && *nc), NULL};
#ifdef TL_HAVE_SERVE
    ao.lesson_server = lesson_serve_request;
#endif
    int rc = bench ? tl_tui_bench_frame(s, &ao, bench, 160, 48) : tl_tui_run(s, &ao);
    tl_session_free(s);
    return rc;
}
