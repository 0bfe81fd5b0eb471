/* tokenloop tokenize: text to token ids and pieces, as transformers' encode() gives them. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "tokenloop/file.h"
#include "tokenloop/tokenizer.h"

static void usage(FILE *f)
{
    fputs("usage: tokenloop tokenize [--model DIR] (--text TEXT | --file F) [--add-bos]\n"
          "                          [--no-parse-special] [--json]\n"
          "  --model DIR         directory with tokenizer.json (default: $TOKENLOOP_MODEL or the\n"
          "                      bundled Llama 3.1 tokenizer)\n"
          "  --add-bos           add the post-processor's tokens (add_special_tokens=True)\n"
          "  --no-parse-special  special-token text such as <|eot_id|> is plain text\n"
          "  --json              {\"ids\":[...],\"pieces\":[...]}; a piece is the text the token\n"
          "                      stands for, bytes that are not UTF-8 on their own as <0xNN>\n",
          f);
}

/* The piece as JSON text: its bytes when they are UTF-8, <0xNN> for each byte that is not. */
static char *piece_text(const tl_tokenizer *tok, int id)
{
    size_t n;
    const unsigned char *p = (const unsigned char *)tl_tokenizer_piece(tok, id, &n);
    char *out = malloc(n * 6 + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        int l = c < 0x80 ? 1 : (c >= 0xc2 && c <= 0xdf) ? 2 : (c >= 0xe0 && c <= 0xef) ? 3 : (c >= 0xf0 && c <= 0xf4) ? 4 : 0;
        int ok = l && i + (size_t)l <= n;
        for (int k = 1; ok && k < l; k++)
            ok = (p[i + (size_t)k] & 0xc0) == 0x80;
        if (ok && l >= 3) {  /* overlong, surrogate and out-of-range forms are not UTF-8 */
            unsigned c1 = p[i + 1];
            ok = !((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 > 0x9f) || (c == 0xf0 && c1 < 0x90) || (c == 0xf4 && c1 > 0x8f));
        }
        if (ok) {
            memcpy(out + o, p + i, (size_t)l);
            o += (size_t)l;
            i += (size_t)l;
        } else {
            o += (size_t)sprintf(out + o, "<0x%02X>", c);
            i++;
        }
    }
    out[o] = 0;
    return out;
}

int cmd_tokenize(int argc, char **argv)
{
    const char *model = NULL, *text = NULL, *file = NULL;
    int flags = 0, json = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--add-bos"))
            flags |= TL_TOK_ADD_BOS;
        else if (!strcmp(a, "--no-parse-special"))
            flags |= TL_TOK_NO_PARSE_SPECIAL;
        else if (!strcmp(a, "--json"))
            json = 1;
        else if (!strcmp(a, "--model") || !strcmp(a, "--text") || !strcmp(a, "--file")) {
            if (i + 1 >= argc)
                return cli_fail(2, "%s: needs a value (see tokenize --help)", a);
            const char **dst = a[2] == 'm' ? &model : a[2] == 't' ? &text : &file;
            if (*dst)
                return cli_fail(2, "%s: given twice", a);
            *dst = argv[++i];
        } else
            return cli_fail(2, "%s: unknown option (see tokenize --help)", a);
    }
    if (!text == !file)
        return cli_fail(2, text ? "--text and --file: give only one" : "tokenize: give --text or --file (see --help)");
    char *buf = NULL;
    size_t len = 0;
    if (file) {
        tl_error ferr;
        if (tl_file_read(file, 256u << 20, &buf, &len, &ferr))
            return cli_fail(1, "%s", ferr.msg);
    }
    if (!model)
        model = tl_tokenizer_default_dir();
    tl_error err = {{0}};
    tl_tokenizer *tok;
    if (tl_tokenizer_load(&tok, model, &err)) {
        free(buf);
        return cli_fail(1, "%s", err.msg);
    }
    int *ids = NULL, n = 0;
    int rc = tl_tokenizer_encode(tok, file ? buf : text, file ? len : strlen(text), flags, &ids, &n, &err);
    free(buf);
    if (rc) {
        /* the encoder names the text "text"; say which input it was */
        const char *what = strchr(err.msg, ':');
        int status = cli_fail(1, "%s%s", file ? file : "--text", what ? what : ": cannot tokenize");
        tl_tokenizer_free(tok);
        return status;
    }
    int status = 0;
    if (json) {
        cJSON *root = cJSON_CreateObject(), *jids = cJSON_AddArrayToObject(root, "ids"),
              *jp = cJSON_AddArrayToObject(root, "pieces");
        for (int i = 0; i < n && root; i++) {
            char *p = piece_text(tok, ids[i]);
            cJSON_AddItemToArray(jids, cJSON_CreateNumber(ids[i]));
            cJSON_AddItemToArray(jp, cJSON_CreateString(p ? p : ""));
            free(p);
        }
        char *s = root ? cJSON_PrintUnformatted(root) : NULL;
        if (s)
            puts(s);
        else
            status = cli_fail(1, "tokenize: out of memory");
        free(s);
        cJSON_Delete(root);
    } else {
        char disp[1024];
        printf("%d tokens\n", n);
        for (int i = 0; i < n; i++) {
            tl_tokenizer_display(tok, ids[i], disp, sizeof disp);
            printf("%8d  %s%s\n", ids[i], disp, tl_tokenizer_is_special(tok, ids[i]) ? "   (special)" : "");
        }
    }
    if (fflush(stdout))
        status = cli_fail(1, "stdout: %s", strerror(errno));
    free(ids);
    tl_tokenizer_free(tok);
    return status;
}
