/* Locating the bundled data; the order is in tokenloop/paths.h. */
#include "tokenloop/paths.h"
#include "tokenloop/platform.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* CMake defines all three; these keep a hand build of this file meaningful. */
#ifndef TL_DATA_DIR
#define TL_DATA_DIR "/usr/local/share/tokenloop"
#endif
#ifndef TL_DATA_REL
#define TL_DATA_REL "../share/tokenloop"
#endif

typedef struct item {
    const char *what;      /* for the error: "bundled model" */
    const char *src_rel;   /* under a checkout */
    const char *data_rel;  /* under the data directory */
    const char *marker;    /* a file that must be there, so an unrelated folder of that name is passed over */
} item;

static const item model_item = {"bundled model", "assets/models/" TL_DEFAULT_MODEL_NAME,
                                "models/" TL_DEFAULT_MODEL_NAME, "config.json"};
static const item tokenizer_item = {"bundled tokenizer", "assets/tokenizer", "tokenizer", "tokenizer.json"};
static const item lessons_item = {"lessons", "lessons", "lessons", "README.md"};

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int copy_out(char *out, size_t cap, const char *path, tl_error *err)
{
    size_t n = strlen(path);
    if (n + 1 > cap) return tl_error_set(err, "%s: path too long", path);
    memcpy(out, path, n + 1);
    return 0;
}

/* Writes base/rel to out when base/rel/marker is a file. */
static int probe(const char *base, const char *rel, const char *marker, char *out, size_t cap)
{
    char cand[PATH_MAX + 512];
    int k = snprintf(cand, sizeof cand, "%s/%s/%s", base, rel, marker);
    if (k < 0 || (size_t)k >= sizeof cand || !is_file(cand)) return -1;
    k = snprintf(cand, sizeof cand, "%s/%s", base, rel);
    if ((size_t)k + 1 > cap) return -1;
    memcpy(out, cand, (size_t)k + 1);
    return 0;
}

/* The directory of the running binary, symlinks resolved; "" when it cannot be known. */
static void exe_dir(char *dir, size_t cap)
{
    ssize_t n = tl_exe_path(dir, cap);
    dir[n > 0 ? n : 0] = 0;
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else dir[0] = 0;
}

/* exe/TL_DATA_REL with each leading "../" taken off exe, so paths print as /p/share/tokenloop
 * rather than /p/bin/../share/tokenloop. */
static void installed_dir(const char *exe, char *out, size_t cap)
{
    char base[PATH_MAX];
    snprintf(base, sizeof base, "%s", exe);
    const char *rel = TL_DATA_REL;
    if (rel[0] == '/') {   /* an absolute data directory configured for the install */
        snprintf(out, cap, "%s", rel);
        return;
    }
    while (!strncmp(rel, "../", 3)) {
        char *slash = strrchr(base, '/');
        if (!slash) break;
        *slash = 0;
        rel += 3;
    }
    snprintf(out, cap, "%s/%s", base, rel);
}

static int find_item(const item *it, char *out, size_t cap, tl_error *err)
{
    char exe[PATH_MAX], inst[PATH_MAX + 64], dir[PATH_MAX];
    exe_dir(exe, sizeof exe);
    if (exe[0]) {
        installed_dir(exe, inst, sizeof inst);
        if (probe(inst, it->data_rel, it->marker, out, cap) == 0) return 0;
        snprintf(dir, sizeof dir, "%s", exe);
        for (;;) {   /* exe itself, then each parent up to "/" (which is dir "") */
            if (probe(dir, it->src_rel, it->marker, out, cap) == 0) return 0;
            char *slash = strrchr(dir, '/');
            if (!slash) break;
            *slash = 0;
        }
    }
#ifdef TL_SOURCE_DIR
    if (probe(TL_SOURCE_DIR, it->src_rel, it->marker, out, cap) == 0) return 0;
    const char *src = TL_SOURCE_DIR;
#else
    const char *src = "(none recorded)";
#endif
    if (probe(TL_DATA_DIR, it->data_rel, it->marker, out, cap) == 0) return 0;
    return tl_error_set(err, "%s: no %s found (looked in %s, in each folder from %s up, in the source tree %s "
                        "and in %s)", it->src_rel, it->what, exe[0] ? inst : "(binary not found)",
                        exe[0] ? exe : "(binary not found)", src, TL_DATA_DIR);
}

int tl_paths_default_model(char *out, size_t cap, tl_error *err)
{
    const char *env = getenv("TOKENLOOP_MODEL");
    if (env && *env) return copy_out(out, cap, env, err);
    if (find_item(&model_item, out, cap, err) == 0) return 0;
    size_t n = strlen(err ? err->msg : "");
    if (err && n + 40 < sizeof err->msg)   /* the two ways out, on the same line */
        snprintf(err->msg + n, sizeof err->msg - n, "; set TOKENLOOP_MODEL or pass --model");
    return -1;
}

int tl_paths_default_tokenizer(char *out, size_t cap, tl_error *err)
{
    char model[PATH_MAX + 64];
    if (tl_paths_default_model(model, sizeof model, NULL) == 0 && probe(model, ".", "tokenizer.json", out, cap) == 0)
        return copy_out(out, cap, model, err);   /* without probe's trailing "/." */
    return find_item(&tokenizer_item, out, cap, err);
}

int tl_paths_default_lessons(char *out, size_t cap, tl_error *err)
{
    const char *env = getenv("TOKENLOOP_LESSONS");
    if (env && *env) {
        if (!is_dir(env)) return tl_error_set(err, "%s: $TOKENLOOP_LESSONS is not a folder", env);
        return copy_out(out, cap, env, err);
    }
    return find_item(&lessons_item, out, cap, err);
}
