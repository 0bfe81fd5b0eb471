/* Locating the bundled model: $TOKENLOOP_MODEL, the checkout the binary was built in, the
 * installed data directory. */
#include "tokenloop/paths.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef TL_DATA_DIR
#define TL_DATA_DIR "/usr/local/share/tokenloop"
#endif

#define MODEL_REL "assets/models/" TL_DEFAULT_MODEL_NAME

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int copy_out(char *out, size_t cap, const char *path, tl_error *err)
{
    size_t n = strlen(path);
    if (n + 1 > cap) return tl_error_set(err, "%s: path too long", path);
    memcpy(out, path, n + 1);
    return 0;
}

/* Walks up from the directory of /proc/self/exe looking for ROOT/rel/probe; writes ROOT/rel. */
static int find_above_exe(const char *rel, const char *probe, char *out, size_t cap)
{
    char dir[PATH_MAX], cand[PATH_MAX + 256];
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
    if (n <= 0) return -1;
    dir[n] = 0;
    for (;;) {
        char *slash = strrchr(dir, '/');
        if (!slash) return -1;
        *slash = 0;                                   /* the parent of what we looked at */
        int k = snprintf(cand, sizeof cand, "%s/%s/%s", dir, rel, probe);
        if (k > 0 && (size_t)k < sizeof cand && is_file(cand)) {
            k = snprintf(cand, sizeof cand, "%s/%s", dir, rel);
            if ((size_t)k + 1 > cap) return -1;
            memcpy(out, cand, (size_t)k + 1);
            return 0;
        }
        if (dir[0] == 0) return -1;                   /* just looked in "/" */
    }
}

int tl_paths_default_model(char *out, size_t cap, tl_error *err)
{
    const char *env = getenv("TOKENLOOP_MODEL");
    if (env && *env) return copy_out(out, cap, env, err);
    if (find_above_exe(MODEL_REL, "config.json", out, cap) == 0) return 0;
    const char *installed = TL_DATA_DIR "/models/" TL_DEFAULT_MODEL_NAME;
    if (is_file(TL_DATA_DIR "/models/" TL_DEFAULT_MODEL_NAME "/config.json"))
        return copy_out(out, cap, installed, err);
    return tl_error_set(err, "%s: no bundled model found (looked above the binary and in %s; "
                        "set TOKENLOOP_MODEL or pass --model)", MODEL_REL, TL_DATA_DIR);
}

int tl_paths_default_tokenizer(char *out, size_t cap, tl_error *err)
{
    char model[PATH_MAX + 64], probe[PATH_MAX + 96];
    tl_error e2;
    if (tl_paths_default_model(model, sizeof model, &e2) == 0) {
        snprintf(probe, sizeof probe, "%s/tokenizer.json", model);
        if (is_file(probe)) return copy_out(out, cap, model, err);
    }
    if (find_above_exe("assets/tokenizer", "tokenizer.json", out, cap) == 0) return 0;
    if (is_file(TL_DATA_DIR "/tokenizer/tokenizer.json"))
        return copy_out(out, cap, TL_DATA_DIR "/tokenizer", err);
    return tl_error_set(err, "assets/tokenizer: no tokenizer found (set TOKENLOOP_MODEL or pass --model)");
}
