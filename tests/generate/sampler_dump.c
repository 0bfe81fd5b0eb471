/* sampler_dump LOGITS_F32 V GREEDY TEMPERATURE TOP_K TOP_P SEED DRAWS TOP_N
 * Prints the sampler's report for the logits (one JSON object) and the tokens of DRAWS
 * consecutive draws, for tests/generate/check_sampler.py to compare with NumPy. */
#include <stdio.h>
#include <stdlib.h>

#include "tokenloop/sampler.h"

int main(int argc, char **argv)
{
    if (argc != 10) {
        fprintf(stderr, "usage: sampler_dump LOGITS V GREEDY T TOP_K TOP_P SEED DRAWS TOP_N\n");
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
    tl_sampler *s = tl_sampler_create(V, p);
    tl_sample_report r;
    tl_sampler_explain(s, x, top_n, -1, &r);
    printf("{\"kept\":%d,\"entropy\":%.10g,\"mass_outside\":%.10g,\"cand\":[", r.kept, r.entropy, r.mass_outside);
    for (int i = 0; i < r.n; i++)
        printf("%s{\"id\":%d,\"logit\":%.9g,\"prob\":%.9g,\"prob_temp\":%.9g,\"prob_final\":%.9g,\"cut_top_k\":%d,"
               "\"cut_top_p\":%d}", i ? "," : "", r.cand[i].id, r.cand[i].logit, r.cand[i].prob, r.cand[i].prob_temp,
               r.cand[i].prob_final, r.cand[i].cut_top_k, r.cand[i].cut_top_p);
    printf("],\"draws\":[");
    for (int i = 0; i < draws; i++) {
        tl_sample_report *rep = i == 0 ? &r : NULL;
        int id = tl_sampler_sample(s, x, top_n, rep);
        printf("%s%d", i ? "," : "", id);
        if (rep && rep->chosen != id) return 3;
    }
    printf("]}\n");
    tl_sampler_free(s);
    free(x);
    return 0;
}
