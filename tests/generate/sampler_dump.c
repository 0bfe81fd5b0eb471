/* sampler_dump LOGITS_F32 V GREEDY TEMPERATURE TOP_K TOP_P SEED DRAWS TOP_N [FIELDS]
 * Prints the sampler's report for the logits (one JSON object; figures not asked for by
 * FIELDS, TL_REPORT_* and all by default, as null) and the tokens of DRAWS consecutive draws
 * (tl_sampler_choose with FIELDS), for tests/generate/check_sampler.py to compare with NumPy. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tokenloop/sampler.h"

/* A figure not computed is NaN: JSON's null (an infinite one 1e999, which parses as one). */
static void num(double v)
{
    if (isnan(v)) printf("null");
    else if (isinf(v)) printf("%s1e999", v < 0 ? "-" : "");
    else printf("%.10g", v);
}

int main(int argc, char **argv)
{
    if (argc != 10 && argc != 11) {
        fprintf(stderr, "usage: sampler_dump LOGITS V GREEDY T TOP_K TOP_P SEED DRAWS TOP_N [FIELDS]\n");
        return 2;
    }
    int V = atoi(argv[2]);
    float *x = malloc(sizeof(float) * (size_t)V);
    FILE *f = fopen(argv[1], "rb");
    if (!f || fread(x, sizeof(float), (size_t)V, f) != (size_t)V) {
        fprintf(stderr, "%s: cannot read %d floats\n", argv[1], V);
        return 1;
    }
    fclose(f);
    tl_sampling p = {.greedy = atoi(argv[3]), .temperature = (float)atof(argv[4]), .top_k = atoi(argv[5]),
                     .top_p = (float)atof(argv[6]), .seed = strtoull(argv[7], NULL, 10)};
    int draws = atoi(argv[8]), top_n = atoi(argv[9]);
    unsigned fields = argc == 11 ? (unsigned)atoi(argv[10]) : TL_REPORT_ALL;
    tl_sampler *s = tl_sampler_create(V, p);
    tl_sample_report r;
    tl_sampler_explain(s, x, top_n, -1, fields, &r);
    printf("{\"fields\":%u,\"kept\":%d,\"entropy\":", r.fields, r.kept);
    num(r.entropy);
    printf(",\"mass_outside\":");
    num(r.mass_outside);
    printf(",\"log_z\":");
    num(r.log_z);
    printf(",\"cand\":[");
    for (int i = 0; i < r.n; i++) {
        printf("%s{\"id\":%d,\"logit\":%.9g,\"prob\":", i ? "," : "", r.cand[i].id, r.cand[i].logit);
        num(r.cand[i].prob);
        printf(",\"prob_temp\":");
        num(r.cand[i].prob_temp);
        printf(",\"prob_final\":%.9g,\"cut_top_k\":%d,\"cut_top_p\":%d}", r.cand[i].prob_final,
               r.cand[i].cut_top_k, r.cand[i].cut_top_p);
    }
    printf("],\"draws\":[");
    for (int i = 0; i < draws; i++) {
        tl_sample_report *rep = i == 0 ? &r : NULL;
        int id = tl_sampler_choose(s, x, top_n, fields, rep);
        printf("%s%d", i ? "," : "", id);
        if (rep && rep->chosen != id) return 3;
    }
    printf("]}\n");
    tl_sampler_free(s);
    free(x);
    return 0;
}
