/* tokenloop lesson list | check: the lessons, played headlessly on the bundled model. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TL_HAVE_SERVE
#include "lesson_serve.h"
#endif
#include "commands.h"
#include "tokenloop/lesson.h"
#include "tokenloop/paths.h"
#include "tokenloop/session.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: tokenloop lesson list [--lang en|vi] [--dir DIR]\n"
               "       tokenloop lesson check [ID] [--lang en|vi] [--model DIR] [--dir DIR] [--verbose]\n"
               "       tokenloop lesson settings [ID] [--model DIR] [--dir DIR]\n"
               "check plays every step of every lesson (or lesson ID) on the model and verifies\n"
               "every expectation; without --lang the narration is checked in both languages.\n"
               "settings plays them the same way and prints, after each step, one JSON line with the\n"
               "session's settings and state (what the TUI's headers must show).\n");
}

/* A {name} left in narration means the lesson names a field that does not exist. */
static const char *unresolved(const char *text)
{
    for (const char *p = strchr(text, '{'); p; p = strchr(p + 1, '{')) {
        const char *q = p + 1;
        while ((*q >= 'a' && *q <= 'z') || *q == '_' || *q == '.' || (*q >= '0' && *q <= '9'))
            q++;
        if (*q == '}' && q > p + 1)
            return p;
    }
    return NULL;
}

/* One JSON line: the step, the pane it points at, and the session as it stands. */
static void print_settings(const tl_lesson *l, int i, const tl_lesson_ui *ui, tl_session *s)
{
    char *settings = tl_session_settings_json(s);
    const tl_stop_result *r = tl_session_stop(s);
    printf("{\"lesson\":\"%s\",\"step\":%d,\"steps\":%d,\"highlight\":\"%s\",\"generated\":%d,\"stop_reason\":\"%s\",\"settings\":%s}\n",
           tl_lesson_id(l), i + 1, tl_lesson_n_steps(l), ui->highlight, tl_session_n_steps(s),
           tl_stop_reason_name(r->reason), settings ? settings : "null");
    free(settings);
}

static int dump_settings;

static int check_one(const char *path, const char *model_dir, const char *lang, int verbose, int *steps_ok)
{
    tl_error err;
    tl_lesson *l = NULL;
    if (tl_lesson_load(&l, path, &err))
        return cli_fail(1, "%s", err.msg);
#ifdef TL_HAVE_SERVE
    tl_lesson_set_server(l, lesson_serve_request, NULL);
#endif
    tl_session_opts opts = { .model_dir = model_dir };
    tl_session *s = NULL;
    if (tl_session_open(&s, &opts, &err)) {
        tl_lesson_free(l);
        return cli_fail(1, "%s", err.msg);
    }
    const char *langs[2] = { lang ? lang : "en", "vi" };
    int n_langs = lang ? 1 : 2, rc = 0;
    if (verbose)
        printf("== %s: %s\n", tl_lesson_id(l), tl_lesson_title(l, langs[0]));
    for (int i = 0; i < tl_lesson_n_steps(l) && !rc; i++) {
        char why[512];
        tl_lesson_ui ui = { "", -1 };
        if (tl_lesson_apply(l, i, s, &ui, &err)) {
            rc = cli_fail(1, "%s", err.msg);
            break;
        }
        int bad = tl_lesson_check_lang(l, i, s, langs[0], why, sizeof why);   /* --lang vi: in Vietnamese */
        if (bad == 2) {   /* a comparison this machine's noise left open: said so, not a failure */
            if (!dump_settings)   /* settings prints JSON lines only */
                printf("lesson %s: step %d: undecided (the runs' spread hides the answer): %s\n", tl_lesson_id(l),
                       i + 1, why);
            bad = 0;
        }
        if (bad) {
            rc = cli_fail(1, "%s: step %d: %s", path, i + 1, why);
            break;
        }
        for (int k = 0; k < n_langs; k++) {
            char *text = tl_lesson_narrate(l, i, langs[k], s);
            const char *left = text ? unresolved(text) : "?";
            if (left) {
                rc = cli_fail(1, "%s: step %d: narration (%s) names an unknown field near \"%.24s\"",
                              path, i + 1, langs[k], left);
            } else if (verbose && k == 0) {
                printf("-- step %d\n%s\n", i + 1, text);
            }
            free(text);
        }
        for (int k = 0; verbose && k < tl_lesson_n_compares(l); k++) {   /* what chose the sentences */
            tl_cmp c;
            double w;
            const char *name = tl_lesson_compare_at(l, k, &c, &w);
            printf("cmp %s %s a %.6g [%.6g %.6g] b %.6g [%.6g %.6g] runs %d same_within %.6g\n", name,
                   tl_cmp_outcome_name(c.outcome), c.med_a, c.lo_a, c.hi_a, c.med_b, c.lo_b, c.hi_b, c.n_a, w);
        }
        if (!rc)
            (*steps_ok)++;
        if (!rc && dump_settings) {
            tl_session_prepare(s, NULL);   /* as the TUI renders what a step set up */
            print_settings(l, i, &ui, s);
        }
    }
    if (!rc && !dump_settings)
        printf("lesson %s: %d steps ok\n", tl_lesson_id(l), tl_lesson_n_steps(l));
    tl_session_free(s);
    tl_lesson_free(l);
    return rc;
}

int cmd_lesson(int argc, char **argv)
{
    static const struct option opts[] = {
        { "lang", required_argument, 0, 'l' }, { "model", required_argument, 0, 'm' },
        { "dir", required_argument, 0, 'd' },  { "verbose", no_argument, 0, 'v' },
        { "help", no_argument, 0, 'h' },       { 0, 0, 0, 0 },
    };
    const char *lang = NULL, *model = NULL, *dir = NULL;
    int verbose = 0, c;
    optind = 1;
    opterr = 0;   /* getopt's own two-line complaint would not name the command: ours does */
    while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        switch (c) {
        case 'l':
            if (strcmp(optarg, "en") && strcmp(optarg, "vi"))
                return cli_fail(2, "--lang: %s: expected en or vi", optarg);
            lang = optarg;
            break;
        case 'm': model = optarg; break;
        case 'd': dir = optarg; break;
        case 'v': verbose = 1; break;
        case 'h': usage(stdout); return 0;
        case ':': return cli_fail(2, "lesson: %s: missing value", argv[optind - 1]);
        default:
            usage(stderr);
            /* getopt_long sets optopt for a known long option given a value it does not take */
            if (optopt && !strncmp(argv[optind - 1], "--", 2))
                return cli_fail(2, "lesson: %s: takes no value", argv[optind - 1]);
            return cli_fail(2, "lesson: %s: unknown option", argv[optind - 1]);
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return cli_fail(2, "lesson: expected list, check or settings");
    }
    const char *verb = argv[optind++];
    const char *only = optind < argc ? argv[optind++] : NULL;
    if (optind < argc)
        return cli_fail(2, "lesson: unexpected argument %s", argv[optind]);
    if (strcmp(verb, "list") && strcmp(verb, "check") && strcmp(verb, "settings"))
        return cli_fail(2, "lesson: %s: expected list, check or settings", verb);
    dump_settings = !strcmp(verb, "settings");
    if (dump_settings)
        verb = "check";

    char dirbuf[4096];
    if (!dir) {
        if (tl_lesson_dir(dirbuf, sizeof dirbuf))
            return cli_fail(1, "lessons: folder not found (set TOKENLOOP_LESSONS)");
        dir = dirbuf;
    }
    tl_error err;
    char **paths = NULL;
    int n = 0;
    if (tl_lesson_list(dir, &paths, &n, &err))
        return cli_fail(1, "%s", err.msg);
    if (n == 0) {
        tl_lesson_list_free(paths, n);
        return cli_fail(1, "%s: no lessons", dir);
    }

    int rc = 0, found = 0, lessons_ok = 0, steps_ok = 0;
    char modelbuf[4096];
    if (!strcmp(verb, "check") && !model) {
        if (tl_paths_default_model(modelbuf, sizeof modelbuf, &err)) {
            tl_lesson_list_free(paths, n);
            return cli_fail(1, "%s", err.msg);
        }
        model = modelbuf;
    }
    for (int i = 0; i < n; i++) {
        tl_lesson *l = NULL;
        if (tl_lesson_load(&l, paths[i], &err)) {
            rc = cli_fail(1, "%s", err.msg);
            continue;
        }
        int match = !only || !strcmp(only, tl_lesson_id(l));
        if (match && !strcmp(verb, "list"))
            printf("%-24s %s\n", tl_lesson_id(l), tl_lesson_title(l, lang ? lang : tl_lesson_default_lang()));
        tl_lesson_free(l);
        if (!match)
            continue;
        found++;
        if (!strcmp(verb, "check")) {
            if (check_one(paths[i], model, lang, verbose, &steps_ok))
                rc = 1;
            else
                lessons_ok++;
        }
    }
    tl_lesson_list_free(paths, n);
    if (only && !found)
        return cli_fail(2, "lesson: %s: no such lesson", only);
    /* the tally, unless one lesson was checked and failed: then its error line is the verdict */
    if (!strcmp(verb, "check") && !dump_settings && (found > 1 || lessons_ok == found))
        printf("lessons: %d passed, %d failed\n", lessons_ok, found - lessons_ok);
    return rc;
}
