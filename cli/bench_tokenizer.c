/* tokenloop bench --tokenizer: load time of tokenizer.json and encode/decode throughput on about
 * 1 MB of mixed English, Vietnamese and code, generated deterministically (same bytes every run),
 * or on a file's text (--file: the same text another tokenizer is timed on). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "commands.h"
#include "tokenloop/file.h"
#include "tokenloop/tokenizer.h"
#include "tokenloop/system.h"

/* CPU time of this thread: on a shared, busy machine wall time also counts other programs' turns */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const char *const english[] = {
    "The model reads the prompt once and then produces one token per forward pass.",
    "Memory bandwidth, not arithmetic, bounds the speed of decoding a single sequence.",
    "She couldn't believe they'd already finished the 3rd chapter by 10:45 PM.",
    "A tokenizer splits text into pieces that the vocabulary knows, then maps them to integers.",
    "In 2024, roughly 1,234,567 people visited the museum; about 12% came twice.",
    "\"Why?\" he asked. \"Because the cache grows with every token,\" she replied.",
    "Byte-level BPE never fails: any byte sequence can be spelled with 256 base tokens.",
    "We'll measure TTFT and TPOT, then compare them against the bandwidth floor.",
};
static const char *const vietnamese[] = {
    "Mô hình ngôn ngữ lớn dự đoán từ tiếp theo dựa trên các từ đứng trước.",
    "Hà Nội là thủ đô của Việt Nam, còn Thành phố Hồ Chí Minh là thành phố đông dân nhất.",
    "Chúng tôi đã đo tốc độ mã hoá văn bản bằng megabyte mỗi giây.",
    "Học sinh đọc bài, viết chữ và làm toán ở trường mỗi ngày.",
    "Phở bò, bún chả, bánh mì và cà phê sữa đá là những món ăn nổi tiếng.",
    "Trăm năm trong cõi người ta, chữ tài chữ mệnh khéo là ghét nhau.",
    "Người lập trình viết mã nguồn bằng ngôn ngữ C và kiểm tra từng bước.",
};
static const char *const code[] = {
    "static int add(int a, int b)\n{\n    return a + b;\n}\n",
    "for (size_t i = 0; i < n; i++) {\n\tsum += x[i] * w[i];\n}\n",
    "def softmax(x):\n    m = max(x)\n    e = [math.exp(v - m) for v in x]\n    return [v / sum(e) for v in e]\n",
    "const ids = tokenizer.encode(text, { add_special_tokens: false });\nconsole.log(ids.length);\n",
    "{\"role\": \"user\", \"content\": \"Hello!\"}, {\"role\": \"assistant\", \"content\": \"Hi.\"}\n",
    "#include <stdio.h>\n#define MAX(a, b) ((a) > (b) ? (a) : (b))\n",
    "if (err != NULL && err->code == 0x1F) { goto fail; }  // TODO: retry\n",
};

/* about `target` bytes; xorshift picks sentences, so the text is the same on every run */
static char *make_text(size_t target, size_t *len)
{
    char *buf = malloc(target + 4096);
    if (!buf)
        return NULL;
    size_t n = 0;
    unsigned state = 0x2545f491u;
    while (n < target) {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        unsigned kind = state % 3, pick = state >> 8;
        const char *s;
        if (kind == 0)
            s = english[pick % (sizeof english / sizeof *english)];
        else if (kind == 1)
            s = vietnamese[pick % (sizeof vietnamese / sizeof *vietnamese)];
        else
            s = code[pick % (sizeof code / sizeof *code)];
        size_t l = strlen(s);
        memcpy(buf + n, s, l);
        n += l;
        buf[n++] = (state & 0x300) ? ' ' : '\n';
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

static const char usage[] =
    "usage: tokenloop bench --tokenizer [--model DIR] [--mb N | --file F] [--runs N] [--json]\n"
    "  load time of tokenizer.json, encode and decode throughput on N MB (default 1)\n"
    "  of generated English, Vietnamese and code, or on the text of F; best of --runs\n"
    "  (default 5)\n";

int cmd_bench_tokenizer(int argc, char **argv)
{
    const char *model = NULL, *file = NULL;
    int runs = 5, json = 0;
    double mb = 1.0;
    if (cli_help(argc, argv, usage))
        return 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (i + 1 < argc && !strcmp(argv[i], "--model"))
            model = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--file"))
            file = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--mb")) {
            char *e;
            mb = strtod(argv[++i], &e);
            if (*e || !(mb > 0 && mb <= 1024))
                return cli_fail(2, "--mb: expected a size in MB between 0 and 1024, got '%s'", argv[i]);
        } else if (i + 1 < argc && !strcmp(argv[i], "--runs")) {
            if (cli_runs(argv[++i], &runs))
                return 2;
        } else
            return cli_fail(2, "%s: unknown option (see bench --tokenizer --help)", argv[i]);
    }
    if (!model)
        model = tl_tokenizer_default_dir();

    tl_error err = {{0}};
    tl_tokenizer *tok = NULL;
    double best_load = 1e9, best_load_cpu = 1e9;
    for (int r = 0; r < 3; r++) {
        if (tok)
            tl_tokenizer_free(tok);
        double t0 = tl_now_s(), c0 = cpu_s();
        if (tl_tokenizer_load(&tok, model, &err))
            return cli_fail(1, "%s", err.msg);
        double dt = tl_now_s() - t0, dc = cpu_s() - c0;
        if (dt < best_load)
            best_load = dt;
        if (dc < best_load_cpu)
            best_load_cpu = dc;
    }
    size_t len;
    char *text = NULL;
    if (file) {
        int bad = tl_file_read(file, (size_t)1 << 30, &text, &len, &err);
        if (!bad && !len)
            bad = tl_error_set(&err, "%s: empty: nothing to time", file);
        if (bad) {
            free(text);
            tl_tokenizer_free(tok);
            return cli_fail(1, "%s", err.msg);
        }
    } else if (!(text = make_text((size_t)(mb * 1048576.0), &len))) {
        tl_tokenizer_free(tok);
        return cli_fail(1, "bench: out of memory");
    }
    double best_enc = 1e9, best_dec = 1e9, best_enc_cpu = 1e9;
    int n = 0, status = 0;
    for (int r = 0; r < runs && !status; r++) {
        int *ids;
        double t0 = tl_now_s(), c0 = cpu_s();
        if (tl_tokenizer_encode(tok, text, len, 0, &ids, &n, &err)) {
            status = cli_fail(1, "%s", err.msg);
            break;
        }
        double t1 = tl_now_s();
        if (cpu_s() - c0 < best_enc_cpu)
            best_enc_cpu = cpu_s() - c0;
        char *back;
        size_t blen;
        int tail;
        if (tl_tokenizer_decode(tok, ids, n, &back, &blen, &tail, &err)) {
            free(ids);
            status = cli_fail(1, "%s", err.msg);
            break;
        }
        double t2 = tl_now_s();
        if (blen != len || memcmp(back, text, len))
            status = cli_fail(1, "bench: decode(encode(text)) differs from the text");
        free(back);
        free(ids);
        if (t1 - t0 < best_enc)
            best_enc = t1 - t0;
        if (t2 - t1 < best_dec)
            best_dec = t2 - t1;
    }
    if (!status && json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "text", file ? file : "generated");
        cJSON_AddNumberToObject(j, "bytes", (double)len);
        cJSON_AddNumberToObject(j, "tokens", n);
        cJSON_AddNumberToObject(j, "load_ms", best_load * 1e3);
        cJSON_AddNumberToObject(j, "encode_mb_s", len / best_enc / 1e6);
        cJSON_AddNumberToObject(j, "encode_cpu_mb_s", len / best_enc_cpu / 1e6);
        cJSON_AddNumberToObject(j, "decode_mb_s", len / best_dec / 1e6);
        cJSON_AddNumberToObject(j, "runs", runs);
        char *out = cJSON_PrintUnformatted(j);
        if (out)
            printf("%s\n", out);
        free(out);
        cJSON_Delete(j);
    } else if (!status) {
        printf("tokenizer: %s (%d ids)\n", model, tl_tokenizer_vocab_size(tok));
        printf("load:   %.1f ms wall, %.1f ms CPU (best of 3)\n", best_load * 1e3, best_load_cpu * 1e3);
        printf("text:   %zu bytes of %s -> %d tokens (%.2f bytes/token)\n", len,
               file ? file : "English, Vietnamese and code", n, (double)len / n);
        printf("encode: %.1f MB/s wall, %.1f MB/s CPU, %.0f tokens/s wall (best of %d)\n", len / best_enc / 1e6,
               len / best_enc_cpu / 1e6, n / best_enc, runs);
        printf("decode: %.1f MB/s\n", len / best_dec / 1e6);
    }
    free(text);
    tl_tokenizer_free(tok);
    return status;
}
