/* How close each decode product runs to a plain read of its weights: the 1B shape (random
 * bf16 weights, as bench --synthetic), one token, the CPU backend with every thread. Each
 * round reads a product's bytes with tl_bandwidth_read (the floor's loop) and right after runs
 * the product over them, kind by kind (q/k/v as the precision has them, o, gate/up, down, the
 * lm_head) and then a whole decode step against a read of all the weights. This machine's
 * memory rate changes within seconds, so only a product and the read beside it compare: the
 * medians of those ratios are printed, with the read's rate. kernels/cpu/README.md quotes it.
 *
 *   cmake --build build --target decode_vs_read     (CMake builds it with everything else)
 *   build/decode_vs_read [rounds] [mixed|exact|bf16]      (default: 20, mixed)
 *   TL_CPU_ISA=avx2 build/decode_vs_read ...               (another kernel set)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tokenloop/backend.h"
#include "tokenloop/bandwidth.h"
#include "tokenloop/engine.h"
#include "tokenloop/metrics.h"
#include "tokenloop/model.h"
#include "tokenloop/synthetic.h"

enum { KINDS = 6, MAX_ROUNDS = 1000 };
static const char *const kind_name[KINDS] = {"q/k/v", "o", "gate/up", "down", "lm_head", "whole step"};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The weights of one kind, every layer (kind 4: the lm_head; 5: all of them). */
static int regions(const tl_model *m, int kind, tl_mem_region *r)
{
    int n = 0;
    const tl_weight *head = m->lm_head.data ? &m->lm_head : &m->embed;
    for (int l = 0; l < m->cfg.n_layers && kind != 4; l++) {
        const tl_layer *L = &m->layers[l];
        const tl_weight *all[7] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        int lo = kind == 0 ? 0 : kind == 1 ? 3 : kind == 2 ? 4 : kind == 3 ? 6 : 0;
        int hi = kind == 0 ? 3 : kind == 1 ? 4 : kind == 2 ? 6 : 7;
        for (int i = lo; i < hi; i++)
            r[n++] = (tl_mem_region){all[i]->data, tl_weight_bytes(all[i])};
    }
    if (kind >= 4)
        r[n++] = (tl_mem_region){head->data, tl_weight_bytes(head)};
    return n;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    const char *pname = argc > 2 ? argv[2] : "mixed";
    tl_precision prec = !strcmp(pname, "exact") ? TL_PRECISION_EXACT
                        : !strcmp(pname, "bf16") ? TL_PRECISION_BF16 : TL_PRECISION_MIXED;
    if (rounds < 1 || rounds > MAX_ROUNDS || (strcmp(pname, "mixed") && prec == TL_PRECISION_MIXED)) {
        fprintf(stderr, "usage: decode_vs_read [rounds 1..%d] [mixed|exact|bf16]\n", MAX_ROUNDS);
        return 2;
    }
    tl_config c;
    tl_error err;
    tl_model *m = NULL;
    tl_engine *e = NULL;
    if (tl_synthetic_config(&c, "llama-3.2-1b", &err) || tl_model_synthetic(&m, &c, TL_BF16, 1, &err) ||
        tl_engine_create(&e, m, tl_backend_cpu(), 0, 256, &err) || tl_engine_set_precision(e, prec, &err)) {
        fprintf(stderr, "decode_vs_read: %s\n", err.msg);
        return 1;
    }
    /* the products as the engine issues them, on its own backend (one x for q/k/v, gate/up) */
    const tl_backend_ops *ops = tl_backend_cpu();
    void *ctx = ops->create(0, &err);
    if (!ctx) {
        fprintf(stderr, "decode_vs_read: %s\n", err.msg);
        return 1;
    }
    ops->set_exact(ctx, prec == TL_PRECISION_EXACT);
    int L = c.n_layers;
    float *x = malloc(sizeof(float) * 8192), *out[3];
    for (int i = 0; i < 3; i++)
        out[i] = malloc(sizeof(float) * (size_t)c.vocab_size);
    for (int i = 0; i < 8192; i++)
        x[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    tl_weight head = m->lm_head.data ? m->lm_head : m->embed;
    int prompt[4] = {128000, 5, 6, 7};
    if (tl_engine_prefill(e, prompt, 4, &err)) {
        fprintf(stderr, "decode_vs_read: %s\n", err.msg);
        return 1;
    }
    static double ratio[KINDS][MAX_ROUNDS], gbs[KINDS][MAX_ROUNDS];
    tl_mem_region *reg = malloc(sizeof(tl_mem_region) * (size_t)(7 * L + 1));
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < KINDS; k++) {
            int n = regions(m, k, reg);
            size_t bytes = 0;
            for (int i = 0; i < n; i++)
                bytes += reg[i].n;
            double tr = tl_bandwidth_read(reg, n, 0), t0 = now_s();
            if (k == 5) {
                if (tl_engine_decode(e, 9 + r % 100, &err)) {
                    fprintf(stderr, "decode_vs_read: %s\n", err.msg);
                    return 1;
                }
                if (tl_engine_pos(e) > 200)
                    tl_engine_rewind(e, 190);
            }
            for (int l = 0; l < L && k < 4; l++) {
                tl_weight w[3];
                const tl_weight *wp[3] = {&w[0], &w[1], &w[2]};
                const tl_layer *Ly = &m->layers[l];
                int nw = k == 0 ? 3 : k == 2 ? 2 : 1;
                w[0] = k == 0 ? Ly->wq : k == 1 ? Ly->wo : k == 2 ? Ly->w_gate : Ly->w_down;
                w[1] = k == 0 ? Ly->wk : Ly->w_up;
                w[2] = Ly->wv;
                for (int i = 0; i < nw; i++)   /* q/k/v keep x under mixed, as the engine has them */
                    w[i].keep_x = k == 0 && prec == TL_PRECISION_MIXED;
                ops->matmul_n(ctx, nw, out, x, wp, 1);
            }
            if (k == 4)
                ops->matmul(ctx, out[0], x, &head, 1);
            double t = now_s() - t0;
            ratio[k][r] = t / tr;
            gbs[k][r] = (double)bytes / tr / 1e9;
        }
    printf("decode products of the llama-3.2-1b shape, precision %s, %d rounds: median of (product time / a "
           "plain read of its bytes just before), and the read's rate\n",
           tl_precision_name(tl_engine_precision(e)), rounds);
    for (int k = 0; k < KINDS; k++)
        printf("%-11s %6.3f x   read %5.1f GB/s (median)\n", kind_name[k], tl_median(ratio[k], rounds),
               tl_median(gbs[k], rounds));
    ops->destroy(ctx);
    tl_engine_free(e);
    tl_model_free(m);
    return 0;
}
