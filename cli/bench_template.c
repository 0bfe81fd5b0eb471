/* tokenloop bench --template: how long the Jinja engine takes to compile and render large and
 * deeply nested templates, and how much memory it needs at its peak. Inputs are generated, so
 * every run measures the same bytes. Deep nesting must end in the depth limit's error, quickly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "tokenloop/buf.h"
#include "tokenloop/template.h"
#include "tokenloop/system.h"

/* A kB value from /proc/self/status, or -1 where there is none (not Linux). */
static long status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long v = -1;
    size_t n = strlen(field);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, n) && line[n] == ':') {
            v = strtol(line + n + 1, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

/* Sets the peak resident size (VmHWM) back to the current one, so a later VmHWM is this case's
 * peak. 0 when the kernel took it. */
static int peak_reset(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return -1;
    int ok = fputs("5", f) >= 0;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

typedef struct {
    char *buf;
    size_t len, cap;
} sbuf;

static int sb_add(sbuf *b, const char *s)
{
    size_t l = strlen(s);
    char *nb = tl_grow(b->buf, &b->cap, b->len + l + 1, 1, 4096);
    if (!nb)
        return -1;
    b->buf = nb;
    memcpy(b->buf + b->len, s, l + 1);
    b->len += l;
    return 0;
}

/* One line of about `bytes`: text, output expressions, filters and conditionals, the pieces a
 * chat template is made of, with no newline anywhere (the old lexer's worst case). */
static char *make_flat(size_t bytes)
{
    static const char *const piece[] = {
        "<|start_header_id|>user<|end_header_id|> ",
        "{{ messages[0]['role'] }} ",
        "{% if messages | length > 0 %}yes{% else %}no{% endif %} ",
        "{{ 'text ' ~ (3 * 7) | string }} ",
        "{% set x = messages[0]['content'] | trim %}{{ x }} ",
    };
    sbuf b = {0};
    for (unsigned i = 0; b.len < bytes; i++)
        if (sb_add(&b, piece[i % 5])) {
            free(b.buf);
            return NULL;
        }
    return b.buf;
}

/* n nested blocks: "{% if true %}" n times, then as many endifs. */
static char *make_nested_ifs(int n)
{
    sbuf b = {0};
    int bad = 0;
    for (int i = 0; i < n; i++) bad |= sb_add(&b, "{% if true %}");
    bad |= sb_add(&b, "x");
    for (int i = 0; i < n; i++) bad |= sb_add(&b, "{% endif %}");
    if (bad) {
        free(b.buf);
        return NULL;
    }
    return b.buf;
}

/* {{ [[[...1...]]] }} with n brackets: expression nesting rather than block nesting. */
static char *make_nested_brackets(int n)
{
    sbuf b = {0};
    int bad = sb_add(&b, "{{ ");
    for (int i = 0; i < n; i++) bad |= sb_add(&b, "[");
    bad |= sb_add(&b, "1");
    for (int i = 0; i < n; i++) bad |= sb_add(&b, "]");
    bad |= sb_add(&b, " }}");
    if (bad) {
        free(b.buf);
        return NULL;
    }
    return b.buf;
}

typedef struct {
    double best_s;      /* compile + render, best of the runs */
    long peak_kb;       /* peak resident growth over the case's start, worst of the runs; -1: unknown */
    size_t out_len;     /* bytes rendered, 0 on an error */
    char error[1024];   /* the engine's error, "" when it rendered */
} bench_case;

static void run_case(const char *src, int runs, bench_case *c)
{
    static const char messages[] = "[{\"role\": \"user\", \"content\": \"  Hello there  \"}]";
    c->best_s = 1e9;
    c->peak_kb = -1;
    for (int r = 0; r < runs; r++) {
        long before = status_kb("VmRSS");
        int peak_ok = before >= 0 && peak_reset() == 0;
        tl_error err = {{0}};
        tl_template *tpl = NULL;
        tl_chat_result res = {0};
        double t0 = tl_now_s();
        int rc = tl_template_compile(src, &tpl, &err);
        if (!rc)
            rc = tl_chat_render(tpl, messages, NULL, 0, 1, "<|begin_of_text|>", "<|eot_id|>", &res, &err);
        double dt = tl_now_s() - t0;
        long hwm = status_kb("VmHWM");
        if (dt < c->best_s)
            c->best_s = dt;
        if (peak_ok && hwm >= 0 && hwm - before > c->peak_kb)
            c->peak_kb = hwm - before;
        c->out_len = rc ? 0 : res.len;
        snprintf(c->error, sizeof c->error, "%s", rc ? err.msg : "");
        tl_chat_result_free(&res);
        tl_template_free(tpl);
    }
}

static void print_case(const char *name, size_t in_len, const bench_case *c, double limit_ms, double limit_mb)
{
    printf("%-22s %9zu B  %9.2f ms  ", name, in_len, c->best_s * 1e3);
    if (c->peak_kb >= 0)
        printf("%7.1f MB", c->peak_kb / 1024.0);
    else
        printf("%7s   ", "?");
    if (c->error[0])
        printf("  error: %s", c->error);
    else
        printf("  rendered %zu B", c->out_len);
    if (limit_ms > 0) {
        int ok = c->best_s * 1e3 < limit_ms && (c->peak_kb < 0 || c->peak_kb / 1024.0 < limit_mb);
        printf("  [%s: < %.0f ms, < %.0f MB]", ok ? "within" : "OVER", limit_ms, limit_mb);
    }
    putchar('\n');
}

static const char usage[] =
    "usage: tokenloop bench --template [--runs N]\n"
    "  compile + render time (best of --runs, default 3) and peak memory growth (worst\n"
    "  of the runs) of generated one-line templates of 64 KB and 1 MB and of 10,000\n"
    "  nested blocks and brackets, which must stop at the depth limit with an error\n";

int cmd_bench_template(int argc, char **argv)
{
    int runs = 3;
    if (cli_help(argc, argv, usage))
        return 0;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && !strcmp(argv[i], "--runs")) {
            if (cli_runs(argv[++i], &runs))
                return 2;
        } else
            return cli_fail(2, "%s: unknown option (see bench --template --help)", argv[i]);
    }
    char *src[4] = {make_flat(64 << 10), make_flat(1 << 20), make_nested_ifs(10000), make_nested_brackets(10000)};
    static const char *const name[4] = {"one line, 64 KB", "one line, 1 MB", "10,000 nested ifs",
                                        "10,000 nested brackets"};
    int status = 0;
    for (int i = 0; i < 4; i++)
        if (!src[i])
            status = cli_fail(1, "bench: out of memory");
    if (!status) {
        printf("template engine: compile + render, best of %d; memory: peak resident growth (VmHWM - VmRSS "
               "before), worst of %d\n", runs, runs);
        printf("%-22s %11s  %12s  %10s\n", "case", "input", "time", "peak");
        for (int i = 0; i < 4; i++) {
            bench_case c;
            run_case(src[i], runs, &c);
            /* the target for a 1 MB template; the deep cases must be refused */
            print_case(name[i], strlen(src[i]), &c, i == 1 ? 100 : 0, 50);
            if (i >= 2 && !c.error[0])
                status = cli_fail(1, "bench: %s rendered; the depth limit should have refused it", name[i]);
        }
    }
    for (int i = 0; i < 4; i++) free(src[i]);
    return status;
}
