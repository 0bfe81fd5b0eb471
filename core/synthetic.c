/* Models with random weights in anonymous memory: the shapes of published checkpoints for
 * benchmarks, no file involved. The weights are one mapping (transparent huge pages where the
 * kernel gives them), filled by all cores with a cheap PRNG in 1 MiB pieces whose seeds depend
 * only on (seed, tensor, piece), so the same seed gives the same model on any machine.
 * Values are sane rather than trained: magnitudes around 1/sqrt(fan-in), norm weights near 1.
 * An untied lm_head shares the embedding's random values: a decode step reads the same bytes
 * either way, and the 8B shape stays 1 GiB smaller. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model_priv.h"
#include "tokenloop/platform.h"
#include "tokenloop/synthetic.h"
#include "tokenloop/system.h"

typedef struct synth_priv {
    tl_model_priv head;   /* first: tl_model_free calls head.release */
    void *mem;
    size_t bytes;
} synth_priv;

typedef struct shape {
    const char *name;
    tl_config cfg;
} shape;

/* From the published config.json files (meta-llama/Llama-3.2-1B-Instruct, Llama-3.1-8B-Instruct). */
static const shape shapes[] = {
    {"llama-3.2-1b", {.hidden_size = 2048, .intermediate_size = 8192, .n_layers = 16, .n_heads = 32,
                      .n_kv_heads = 8, .head_dim = 64, .vocab_size = 128256,
                      .max_position_embeddings = 131072, .rms_norm_eps = 1e-5f, .rope_theta = 500000.0f,
                      .rope_llama3 = 1, .rope_factor = 32.0f, .rope_low_freq_factor = 1.0f,
                      .rope_high_freq_factor = 4.0f, .rope_original_max_position = 8192,
                      .tie_word_embeddings = 1, .bos_id = 128000, .eos_ids = {128001, 128008, 128009},
                      .n_eos = 3, .dtype = TL_BF16}},
    {"llama-3.1-8b", {.hidden_size = 4096, .intermediate_size = 14336, .n_layers = 32, .n_heads = 32,
                      .n_kv_heads = 8, .head_dim = 128, .vocab_size = 128256,
                      .max_position_embeddings = 131072, .rms_norm_eps = 1e-5f, .rope_theta = 500000.0f,
                      .rope_llama3 = 1, .rope_factor = 8.0f, .rope_low_freq_factor = 1.0f,
                      .rope_high_freq_factor = 4.0f, .rope_original_max_position = 8192,
                      .tie_word_embeddings = 0, .bos_id = 128000, .eos_ids = {128001, 128008, 128009},
                      .n_eos = 3, .dtype = TL_BF16}},
    /* Not a published model: a few megabytes with every feature of the 8B (untied, GQA 4:1,
     * llama3 RoPE), for tests and for trying the command quickly. */
    {"tiny", {.hidden_size = 256, .intermediate_size = 688, .n_layers = 2, .n_heads = 8,
              .n_kv_heads = 2, .head_dim = 32, .vocab_size = 1000, .max_position_embeddings = 2048,
              .rms_norm_eps = 1e-5f, .rope_theta = 500000.0f, .rope_llama3 = 1, .rope_factor = 8.0f,
              .rope_low_freq_factor = 1.0f, .rope_high_freq_factor = 4.0f,
              .rope_original_max_position = 256, .tie_word_embeddings = 0, .bos_id = 1,
              .eos_ids = {2}, .n_eos = 1, .dtype = TL_BF16}},
    /* tiny with every width a multiple of 32, so q8_0 and q4_0 blocks convert it: the lessons'
     * pace steps played quickly in tests (TOKENLOOP_LESSON_SHAPE=small). */
    {"small", {.hidden_size = 256, .intermediate_size = 704, .n_layers = 2, .n_heads = 8,
               .n_kv_heads = 2, .head_dim = 32, .vocab_size = 1024, .max_position_embeddings = 2048,
               .rms_norm_eps = 1e-5f, .rope_theta = 500000.0f, .rope_llama3 = 1, .rope_factor = 8.0f,
               .rope_low_freq_factor = 1.0f, .rope_high_freq_factor = 4.0f,
               .rope_original_max_position = 256, .tie_word_embeddings = 0, .bos_id = 1,
               .eos_ids = {2}, .n_eos = 1, .dtype = TL_BF16}},
};

const char *tl_synthetic_names(void) { return "llama-3.2-1b, llama-3.1-8b, tiny, small"; }

int tl_synthetic_config(tl_config *cfg, const char *name, tl_error *err)
{
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (name && !strcmp(name, shapes[i].name)) {
            *cfg = shapes[i].cfg;
            return 0;
        }
    return tl_error_set(err, "%s: unknown synthetic model (known: %s)", name ? name : "(null)",
                        tl_synthetic_names());
}

/* ---- filling ---- */

#define PIECE ((size_t)1 << 20)

typedef struct tensor_fill {
    void *data;
    size_t bytes;
    tl_dtype dtype;
    int scale_exp;     /* magnitudes in [2^(e-3), 2^(e+1)); INT32_MIN: a norm weight near 1 */
} tensor_fill;

typedef struct fill_job {
    tensor_fill *t;
    int n;
    size_t *first_piece;   /* prefix sums of pieces per tensor */
    size_t n_pieces;
    uint64_t seed;
    atomic_size_t next;
} fill_job;

static uint64_t splitmix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Eight xorshift64 streams side by side: shifts and xors only, so the compiler vectorizes
 * them (SSE2 is enough), and 64 random bytes become 32 weights per round. A 16-bit draw r
 * becomes a weight with r's sign and mantissa bits and one of four binades below 2^(e+1);
 * norm weights (e == INT32_MIN) are 1 plus a little. */
#define STREAMS 8

static void fill_piece(const tensor_fill *t, size_t piece, uint64_t seed)
{
    size_t off = piece * PIECE, n = t->bytes - off < PIECE ? t->bytes - off : PIECE;
    uint64_t st[STREAMS];
    for (int j = 0; j < STREAMS; j++)
        st[j] = splitmix(seed ^ splitmix(piece * STREAMS + (uint64_t)j)) | 1;
    uint16_t *h = (uint16_t *)((char *)t->data + off);
    const size_t count = n / 2, per_round = STREAMS * 4;
    const int norm = t->scale_exp == INT32_MIN;
    const int bf = t->dtype != TL_F16;   /* f32 weights take a bf16 top half */
    uint16_t or_bits, keep;
    unsigned shift, base;
    if (bf) {
        keep = norm ? 0x0007 : 0x807f;
        or_bits = norm ? 0x3f80 : 0;
        shift = 7;
        base = norm ? 0 : (unsigned)(127 + t->scale_exp - 3);
    } else {
        keep = norm ? 0x001f : 0x83ff;
        or_bits = norm ? 0x3c00 : 0;
        shift = 10;
        int e = 15 + t->scale_exp - 3;
        base = norm ? 0 : (unsigned)(e < 1 ? 1 : e);
    }
    const uint16_t binades = norm ? 0 : 3;
    uint16_t buf[STREAMS * 4], raw[STREAMS * 4];
    for (size_t i = 0; i < count; i += per_round) {
        uint64_t r[STREAMS];
        for (int j = 0; j < STREAMS; j++) {
            uint64_t x = st[j];
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            st[j] = r[j] = x;
        }
        memcpy(buf, r, sizeof buf);
        memcpy(raw, r, sizeof raw);
        for (size_t j = 0; j < per_round; j++)
            buf[j] = (uint16_t)((buf[j] & keep) | or_bits | (base + ((buf[j] >> shift) & binades)) << shift);
        size_t m = count - i < per_round ? count - i : per_round;
        if (t->dtype == TL_F32) {   /* (little-endian) a bf16 weight on top, random bits below */
            for (size_t j = 0; j + 1 < m; j += 2) {
                h[i + j] = raw[j];
                h[i + j + 1] = buf[j + 1];
            }
        } else {
            memcpy(h + i, buf, m * sizeof *h);
        }
    }
}

static void *fill_thread(void *v)
{
    fill_job *j = v;
    for (;;) {
        size_t g = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (g >= j->n_pieces)
            return NULL;
        int lo = 0, hi = j->n - 1;   /* the tensor holding global piece g */
        while (lo < hi) {
            int mid = (lo + hi + 1) / 2;
            if (j->first_piece[mid] <= g)
                lo = mid;
            else
                hi = mid - 1;
        }
        fill_piece(&j->t[lo], g - j->first_piece[lo], splitmix(j->seed + (uint64_t)lo * 0x632be59bd9b4e019ull));
    }
}

static void fill_all(tensor_fill *t, int n, uint64_t seed, size_t *first_piece)
{
    fill_job j = {.t = t, .n = n, .first_piece = first_piece, .seed = seed};
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        first_piece[i] = total;
        total += (t[i].bytes + PIECE - 1) / PIECE;
    }
    j.n_pieces = total;
    atomic_init(&j.next, 0);
    int nth = tl_cpu_count();
    if (nth > 64)
        nth = 64;
    pthread_t th[64];
    int started = 0;
    for (int i = 1; i < nth; i++)
        if (pthread_create(&th[started], NULL, fill_thread, &j) == 0)
            started++;
    fill_thread(&j);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
}

/* ---- the model ---- */

static void release_synthetic(tl_model *m)
{
    synth_priv *p = m->priv;
    if (p->mem)
        munmap(p->mem, p->bytes);
    free(p);
    free(m->layers);
}

static int check_config(const tl_config *c, tl_error *err)
{
    if (c->hidden_size <= 0 || c->intermediate_size <= 0 || c->n_layers <= 0 || c->n_heads <= 0 ||
        c->n_kv_heads <= 0 || c->head_dim <= 0 || c->vocab_size <= 0)
        return tl_error_set(err, "synthetic model: every dimension must be positive");
    if (c->n_heads % c->n_kv_heads)
        return tl_error_set(err, "synthetic model: %d heads do not split into %d key/value heads",
                            c->n_heads, c->n_kv_heads);
    if (c->head_dim % 2)
        return tl_error_set(err, "synthetic model: head_dim %d is odd", c->head_dim);
    return 0;
}

/* floor(log2(1/sqrt(fan_in))): the top of the random weights' magnitude range. */
static int scale_for(int64_t fan_in)
{
    return (int)floor(-0.5 * log2((double)fan_in));
}

int tl_model_synthetic(tl_model **out, const tl_config *cfg, tl_dtype dtype, uint64_t seed, tl_error *err)
{
    *out = NULL;
    if (check_config(cfg, err))
        return -1;
    if (dtype != TL_F32 && dtype != TL_F16 && dtype != TL_BF16)
        return tl_error_set(err, "synthetic model: unknown dtype %d", (int)dtype);
    tl_model *m = calloc(1, sizeof *m);
    synth_priv *p = calloc(1, sizeof *p);
    int n_t = 2 + 9 * cfg->n_layers;
    tensor_fill *tf = calloc((size_t)n_t, sizeof *tf);
    size_t *first = calloc((size_t)n_t, sizeof *first);
    if (!m || !p || !tf || !first || !(m->layers = calloc((size_t)cfg->n_layers, sizeof *m->layers))) {
        if (m)
            free(m->layers);
        free(m);
        free(p);
        free(tf);
        free(first);
        return tl_error_set(err, "synthetic model: out of memory");
    }
    p->head.release = release_synthetic;
    m->priv = p;
    m->cfg = *cfg;
    m->cfg.dtype = dtype;

    const int64_t d = cfg->hidden_size, ff = cfg->intermediate_size, V = cfg->vocab_size;
    const int64_t q = (int64_t)cfg->n_heads * cfg->head_dim, kv = (int64_t)cfg->n_kv_heads * cfg->head_dim;
    const size_t es = tl_dtype_size(dtype);
    typedef struct { tl_weight *w; int64_t rows, cols; int norm; } slot;
    slot *list = malloc(sizeof *list * (size_t)n_t);
    if (!list) {
        tl_model_free(m);
        free(tf);
        free(first);
        return tl_error_set(err, "synthetic model: out of memory");
    }
    int n = 0;
    list[n++] = (slot){&m->embed, V, d, 0};
    list[n++] = (slot){&m->final_norm, 1, d, 1};
    for (int l = 0; l < cfg->n_layers; l++) {
        tl_layer *L = &m->layers[l];
        list[n++] = (slot){&L->attn_norm, 1, d, 1};
        list[n++] = (slot){&L->wq, q, d, 0};
        list[n++] = (slot){&L->wk, kv, d, 0};
        list[n++] = (slot){&L->wv, kv, d, 0};
        list[n++] = (slot){&L->wo, d, q, 0};
        list[n++] = (slot){&L->mlp_norm, 1, d, 1};
        list[n++] = (slot){&L->w_gate, ff, d, 0};
        list[n++] = (slot){&L->w_up, ff, d, 0};
        list[n++] = (slot){&L->w_down, d, ff, 0};
    }
    /* Every tensor at a 4 KiB boundary of one mapping. */
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += ((size_t)(list[i].rows * list[i].cols) * es + 4095) & ~(size_t)4095;
    void *mem = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) {
        tl_model_free(m);
        free(list);
        free(tf);
        free(first);
        return tl_error_set(err, "synthetic model: cannot map %.1f GiB of weights", total / 1073741824.0);
    }
#ifdef MADV_HUGEPAGE
    madvise(mem, total, MADV_HUGEPAGE);   /* fewer TLB misses while streaming the weights */
#endif
    p->mem = mem;
    p->bytes = total;
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        size_t b = (size_t)(list[i].rows * list[i].cols) * es;
        *list[i].w = (tl_weight){.data = (char *)mem + off, .dtype = dtype, .rows = list[i].rows,
                                 .cols = list[i].cols};
        tf[i] = (tensor_fill){(char *)mem + off, b, dtype, list[i].norm ? INT32_MIN : scale_for(list[i].cols)};
        off += (b + 4095) & ~(size_t)4095;
    }
    free(list);
    fill_all(tf, n, seed, first);
    free(tf);
    free(first);
    m->lm_head = m->embed;

    /* Counted as model.c counts a checkpoint of this shape (an untied lm_head separately). */
    int64_t params = V * d + d;   /* embedding (= lm_head when tied) and the final norm */
    for (int l = 0; l < cfg->n_layers; l++)
        params += 2 * d + q * d + 2 * kv * d + d * q + 3 * ff * d;
    uint64_t bytes = (uint64_t)params * es;   /* layers, final norm, lm_head */
    if (!cfg->tie_word_embeddings) {
        params += V * d;
        bytes += (uint64_t)d * es;   /* one embedding row */
    }
    m->n_params = params;
    m->weight_bytes = bytes;
    *out = m;
    return 0;
}

/* ---- what a front end can afford ---- */

double tl_synthetic_bytes(const tl_config *c, tl_dtype dt)
{
    const double d = c->hidden_size, ff = c->intermediate_size, V = c->vocab_size;
    const double q = (double)c->n_heads * c->head_dim, kv = (double)c->n_kv_heads * c->head_dim;
    double per_layer = tl_dtype_row_bytes(dt, (int64_t)d) * (q + 2 * kv + ff * 2)   /* q, k, v, gate, up */
                       + tl_dtype_row_bytes(dt, (int64_t)q) * d                     /* o */
                       + tl_dtype_row_bytes(dt, (int64_t)ff) * d                    /* down */
                       + 2 * 4 * d;                                                 /* norms, fp32 */
    return c->n_layers * per_layer + tl_dtype_row_bytes(dt, (int64_t)d) * V + 4 * d;
}

double tl_synthetic_mem_available(void)
{
#ifdef __APPLE__   /* no /proc: the VM's free, inactive and purgeable pages */
    return (double)tl_mem_available_apple();
#endif
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char line[256];
    double kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1)
            break;
    fclose(f);
    return kb * 1024;
}

int tl_synthetic_pick_dtype(const char *name, tl_dtype want, double avail, tl_dtype *got, char *note,
                            size_t note_size, tl_error *err)
{
    tl_config cfg;
    if (note_size)
        note[0] = '\0';
    if (tl_synthetic_config(&cfg, name, err))
        return -1;
    const double bf16 = tl_synthetic_bytes(&cfg, TL_BF16);
    const tl_dtype tries[] = {want, TL_Q8_0, TL_Q4_0};
    for (size_t i = 0; i < sizeof tries / sizeof tries[0]; i++) {
        tl_dtype dt = tries[i];
        double need = bf16 + (dt == TL_BF16 ? 0 : tl_synthetic_bytes(&cfg, dt)), margin = 512e6;
        if (i > 0 && tl_synthetic_bytes(&cfg, dt) >= tl_synthetic_bytes(&cfg, want))
            continue;   /* only smaller dtypes are a fallback */
        if (avail <= 0 || need + margin <= avail) {
            *got = dt;
            if (i > 0)
                snprintf(note, note_size, "%s: %.1f GB of memory available, %s needs %.1f GB: running %s instead",
                         name, avail / 1e9, tl_dtype_name(want),
                         (bf16 + (want == TL_BF16 ? 0 : tl_synthetic_bytes(&cfg, want)) + margin) / 1e9,
                         tl_dtype_name(dt));
            return 0;
        }
    }
    return tl_error_set(err, "%s: %.1f GB of memory available, not enough for its weights in any dtype (bf16 alone "
                        "is %.1f GB)", name, avail / 1e9, bf16 / 1e9);
}
