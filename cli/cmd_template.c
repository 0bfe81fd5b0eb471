/* tokenloop template: render a chat template as apply_chat_template does, optionally tokenized. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "commands.h"
#include "tokenloop/file.h"
#include "tokenloop/template.h"
#include "tokenloop/tokenizer.h"

static const char usage[] =
    "usage: tokenloop template [--model DIR | --template FILE] --messages FILE\n"
    "                          [--no-generation-prompt | --continue-final-message]\n"
    "                          [--no-parse-special-in-content] [--var NAME=JSON]... [--json]\n"
    "  --model DIR      chat_template, bos_token and eos_token from DIR/tokenizer_config.json;\n"
    "                   with --json the render is also tokenized (special tokens parsed);\n"
    "                   the default is $TOKENLOOP_MODEL, else the bundled assets/tokenizer\n"
    "  --template FILE  a Jinja chat template\n"
    "  --messages FILE  a JSON array of messages\n"
    "  --continue-final-message  end the render inside the final message, for the model to\n"
    "                   continue it (transformers' continue_final_message; no generation prompt)\n"
    "  --no-parse-special-in-content  with --json: content's \"<|eot_id|>\" and the like are\n"
    "                   tokenized as plain text (default: special, as in transformers)\n"
    "  --var NAME=JSON  any template variable: 'bos_token=\"<s>\"', 'tools=[...]', enable_thinking=false\n"
    "  --json           {\"text\": ..., \"ids\": [...], \"content_spans\": [[start, end], ...]}\n";

int cmd_template(int argc, char **argv)
{
    const char *model = NULL, *tfile = NULL, *mfile = NULL;
    int agp = 1, json = 0, status = 0, parse_special = 1, cont = 0;
    tl_template_var *vars = calloc((size_t)argc + 1, sizeof *vars);
    char **var_names = calloc((size_t)argc + 1, sizeof *var_names);
    size_t nv = 0;
    if (!vars || !var_names) { free(vars); free(var_names); return cli_fail(1, "out of memory"); }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_val = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(usage, stdout); goto out; }
        else if (!strcmp(a, "--no-generation-prompt")) agp = 0;
        else if (!strcmp(a, "--no-parse-special-in-content")) parse_special = 0;
        else if (!strcmp(a, "--continue-final-message")) cont = 1, agp = 0;
        else if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "--model") && has_val) model = argv[++i];
        else if (!strcmp(a, "--template") && has_val) tfile = argv[++i];
        else if (!strcmp(a, "--messages") && has_val) mfile = argv[++i];
        else if (!strcmp(a, "--var") && has_val) {
            const char *v = argv[++i], *eq = strchr(v, '=');
            if (!eq || eq == v) { status = cli_fail(2, "--var %s: expected NAME=JSON", v); goto out; }
            cJSON *check = cJSON_Parse(eq + 1);
            if (!check) { status = cli_fail(2, "--var %s: the value is not JSON (a string needs quotes: NAME='\"text\"')", v); goto out; }
            cJSON_Delete(check);
            var_names[nv] = strndup(v, (size_t)(eq - v));
            vars[nv].name = var_names[nv];
            vars[nv].json = eq + 1;
            nv++;
        } else if (!strcmp(a, "--model") || !strcmp(a, "--template") || !strcmp(a, "--messages") || !strcmp(a, "--var")) {
            status = cli_fail(2, "%s: needs a value", a);
            goto out;
        } else {
            fputs(usage, stderr);
            status = cli_fail(2, "%s: unknown option", a);
            goto out;
        }
    }
    if (model && tfile) { fputs(usage, stderr); status = cli_fail(2, "template: give --model or --template, not both"); goto out; }
    if (!model && !tfile) model = tl_tokenizer_default_dir();
    if (!mfile) { fputs(usage, stderr); status = cli_fail(2, "template: --messages FILE is required"); goto out; }

    tl_error err = {{0}};
    tl_chat_config cfg = {0};
    char *src = NULL, *messages = NULL;
    tl_template *tpl = NULL;
    tl_chat_result res = {0};
    tl_tokenizer *tok = NULL;
    int *ids = NULL, nids = 0;
    if (model) {
        if (tl_chat_config_load(model, &cfg, &err)) { status = cli_fail(1, "%s", err.msg); goto done; }
    } else if (tl_file_read_text(tfile, 16u << 20, &src, NULL, &err)) {
        status = cli_fail(1, "%s", err.msg);
        goto done;
    }
    size_t mlen = 0;
    if (tl_file_read(mfile, 16u << 20, &messages, &mlen, &err)) { status = cli_fail(1, "%s", err.msg); goto done; }
    if (tl_chat_messages_check(messages, mlen, &err)) { status = cli_fail(1, "%s: %s", mfile, err.msg); goto done; }
    /* compile and render errors name the file the template came from */
    char origin[4200];
    if (model) snprintf(origin, sizeof origin, "%s/tokenizer_config.json: chat_template", model);
    else snprintf(origin, sizeof origin, "%s", tfile);
    if (tl_template_compile(model ? cfg.template_src : src, &tpl, &err) ||
        tl_chat_render_opts(tpl, messages, vars, nv,
                            &(tl_chat_opts){agp, cont, cfg.bos_token, cfg.eos_token}, &res, &err)) {
        status = cli_fail(1, "%s: %s", origin, err.msg);
        goto done;
    }
    if (!json) {
        fwrite(res.text, 1, res.len, stdout);
        goto done;
    }
    if (model) {
        if (tl_tokenizer_load(&tok, model, &err) ||
            tl_tokenizer_encode_plain(tok, res.text, res.len, 0, res.spans, parse_special ? 0 : res.n_spans,
                                      &ids, &nids, &err)) {
            status = cli_fail(1, "%s", err.msg);
            goto done;
        }
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "text", res.text);
    if (model) {
        cJSON *a = cJSON_AddArrayToObject(o, "ids");
        for (int i = 0; i < nids; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(ids[i]));
    }
    cJSON *sp = cJSON_AddArrayToObject(o, "content_spans");
    for (size_t i = 0; i < res.n_spans; i++) {
        cJSON *p = cJSON_CreateArray();
        cJSON_AddItemToArray(p, cJSON_CreateNumber((double)res.spans[i].start));
        cJSON_AddItemToArray(p, cJSON_CreateNumber((double)res.spans[i].end));
        cJSON_AddItemToArray(sp, p);
    }
    char *s = cJSON_PrintUnformatted(o);
    if (s) printf("%s\n", s);
    else status = cli_fail(1, "out of memory");
    cJSON_free(s);
    cJSON_Delete(o);
done:
    free(ids);
    tl_tokenizer_free(tok);
    tl_chat_result_free(&res);
    tl_template_free(tpl);
    free(messages);
    free(src);
    tl_chat_config_free(&cfg);
out:
    for (size_t i = 0; i < nv; i++) free(var_names[i]);
    free(var_names);
    free(vars);
    return status;
}
