/* TTFT, TPOT, decode tokens/s and the two wrong readings, with a fake clock. */
#include <string.h>

#include "tl_test.h"
#include "tokenloop/metrics.h"

static double fake_now;
static double fake_clock(void *ctx)
{
    (void)ctx;
    return fake_now;
}

int main(void)
{
    tl_metrics *m = tl_metrics_create(fake_clock, NULL);
    fake_now = 1000;
    tl_metrics_start(m);
    tl_metrics_report r = tl_metrics_report_get(m);
    TL_CHECK_INT(r.generated, 0);
    TL_CHECK(r.ttft_ms < 0 && r.tpot_ms < 0);
    fake_now = 1002;
    tl_metrics_templated(m);          /* 2 ms of templating */
    fake_now = 1005;
    tl_metrics_tokenized(m, 100);     /* 3 ms of tokenizing */
    fake_now = 1105;
    tl_metrics_token(m, 98, -1);      /* prefill: first id on the host 105 ms after the start */
    r = tl_metrics_report_get(m);
    TL_CHECK_NEAR(r.template_ms, 2, 1e-9);
    TL_CHECK_NEAR(r.tokenize_ms, 3, 1e-9);
    TL_CHECK_NEAR(r.ttft_ms, 105, 1e-9);
    TL_CHECK(r.tpot_ms < 0);          /* undefined with one token */
    /* four more tokens at 10, 12, 14, 16 ms intervals */
    double gaps[] = {10, 12, 14, 16};
    for (int i = 0; i < 4; i++) {
        fake_now += gaps[i];
        tl_metrics_token(m, gaps[i] - 1, -1);
    }
    r = tl_metrics_report_get(m);
    TL_CHECK_INT(r.generated, 5);
    TL_CHECK_NEAR(r.ttft_ms, 105, 1e-9);
    TL_CHECK_NEAR(r.tpot_ms, (10 + 12 + 14 + 16) / 4.0, 1e-9);        /* (t_last - t_first) / (n - 1) */
    TL_CHECK_NEAR(r.decode_tokens_per_s, 4 / 0.052, 1e-6);            /* (n - 1) / that interval */
    TL_CHECK_NEAR(r.total_ms, 157, 1e-9);
    TL_CHECK_NEAR(r.prompt_as_output_tokens_per_s, 105 / 0.157, 1e-6); /* the wrong reading */
    TL_CHECK_INT(r.unsynced_applicable, 0);                           /* CPU: no number */
    TL_CHECK(r.unsynced_tpot_ms < 0);
    TL_CHECK(r.floor_ms < 0 && r.bandwidth_gbs < 0);
    TL_CHECK_NEAR(r.ref_floor_ms, 16e9 / 3.35e12 * 1e3, 1e-9);
    TL_CHECK_NEAR(r.ref_floor_ms, 4.776, 1e-3);
    tl_metrics_set_floor(m, 2e9, 50e9);
    r = tl_metrics_report_get(m);
    TL_CHECK_NEAR(r.floor_ms, 40, 1e-9);
    TL_CHECK_NEAR(r.bandwidth_gbs, 50, 1e-9);
    TL_CHECK_INT(r.floor_reads, 0);
    /* a pace of 13 ms under a 40 ms floor is a measurement problem: no ratio */
    TL_CHECK_INT(r.below_floor, 1);
    TL_CHECK(r.tpot_over_floor < 0);
    tl_metrics_set_floor(m, 0.5e9, 50e9);
    r = tl_metrics_report_get(m);
    TL_CHECK_INT(r.below_floor, 0);
    TL_CHECK_NEAR(r.tpot_over_floor, 13.0 / 10, 1e-9);
    /* reads beside the steps replace the figure: 1 GB in 0.04, 0.05 and 0.02 s (25, 20, 50 GB/s):
     * the median 25 GB/s gives 20 ms for 0.5 GB, the spread 10-25 ms */
    tl_metrics_floor_read(m, 1e9, 0.04);
    tl_metrics_floor_read(m, 1e9, 0.05);
    tl_metrics_floor_read(m, 1e9, 0.02);
    r = tl_metrics_report_get(m);
    TL_CHECK_INT(r.floor_reads, 3);
    TL_CHECK_NEAR(r.bandwidth_gbs, 25, 1e-9);
    TL_CHECK_NEAR(r.floor_ms, 20, 1e-9);
    TL_CHECK_NEAR(r.floor_lo_ms, 10, 1e-9);
    TL_CHECK_NEAR(r.floor_hi_ms, 25, 1e-9);
    /* TPOT / floor as bench gives it: each read paired with the decode pass before it (the
     * newest, 15 ms), floors 20, 25 and 10 ms: the median of 0.75, 0.6 and 1.5 */
    TL_CHECK_INT(r.floor_pairs, 3);
    TL_CHECK_INT(r.below_floor, 0);             /* 0.75 is above 10 / 20: inside the spread */
    TL_CHECK_NEAR(r.tpot_over_floor, 0.75, 1e-9);
    tl_metrics_floor_read(m, 1e9, 0.1);         /* a fourth: 10 GB/s; the fastest stays 50 */
    r = tl_metrics_report_get(m);
    TL_CHECK_NEAR(r.floor_ms, 0.5e9 / 22.5e9 * 1e3, 1e-9);   /* median of 10, 20, 25, 50 */
    TL_CHECK_NEAR(r.floor_lo_ms, 10, 1e-9);
    TL_CHECK_NEAR(r.tpot_over_floor, (0.6 + 0.75) / 2, 1e-9);   /* 15 / 50 joins: 0.3, 0.6, 0.75, 1.5 */
    /* the cache: 35.7 MB of weights against a 32 MiB cache is near it; 19 MB fits; 2.5 GB not */
    tl_metrics_set_cache(m, 32 * 1048576.0, 35.7e6);
    TL_CHECK_INT(tl_metrics_report_get(m).in_cache, 1);
    tl_metrics_set_cache(m, 32 * 1048576.0, 19e6);
    TL_CHECK_INT(tl_metrics_report_get(m).in_cache, 2);
    tl_metrics_set_cache(m, 32 * 1048576.0, 2.5e9);
    TL_CHECK_INT(tl_metrics_report_get(m).in_cache, 0);
    tl_metrics_set_cache(m, 0, 19e6);
    TL_CHECK_INT(tl_metrics_report_get(m).in_cache, 0);   /* unknown cache: no claim */
    TL_CHECK_NEAR(tl_metrics_token_time(m, 2), 127, 1e-9);

    tl_metrics_drop(m, 2);            /* a rewind of two steps */
    r = tl_metrics_report_get(m);
    TL_CHECK_INT(r.generated, 3);
    TL_CHECK_NEAR(r.tpot_ms, 11, 1e-9);

    /* an asynchronous backend: launches return long before the work is done */
    tl_metrics_start(m);
    TL_CHECK_INT(tl_metrics_floor_reads(m), 0);   /* a new request reads again */
    tl_metrics_floor_read(m, 1e9, 0.04);          /* before any decode step: no pair */
    TL_CHECK_INT(tl_metrics_report_get(m).floor_pairs, 0);
    tl_metrics_start(m);
    TL_CHECK(tl_metrics_report_get(m).template_ms < 0);               /* ids given: no templating */
    tl_metrics_tokenized(m, 10);
    for (int i = 0; i < 5; i++) {
        fake_now += 8;
        tl_metrics_token(m, 7.9, 0.2);
    }
    r = tl_metrics_report_get(m);
    TL_CHECK_INT(r.unsynced_applicable, 1);
    TL_CHECK_NEAR(r.unsynced_tpot_ms, 0.2, 1e-9);
    TL_CHECK_NEAR(r.tpot_ms, 8, 1e-9);
    TL_CHECK_NEAR(r.ttft_ms, 8, 1e-9);

    /* A prompt rendered and shown, then run 5 s later (a lesson step read aloud): TTFT holds the
     * templating and tokenizing, not the wait; a floor read between steps leaves the clock too. */
    tl_metrics_start(m);
    fake_now += 2;
    tl_metrics_templated(m);
    fake_now += 3;
    tl_metrics_tokenized(m, 40);
    fake_now += 5000;                 /* on screen */
    tl_metrics_resume(m, fake_now);
    fake_now += 20;
    tl_metrics_token(m, 19, -1);
    r = tl_metrics_report_get(m);
    TL_CHECK_NEAR(r.ttft_ms, 25, 1e-9);
    fake_now += 4;
    tl_metrics_token(m, 3.5, -1);
    fake_now += 30;                   /* a read of the weights, not the request's work */
    tl_metrics_exclude(m, 30);
    fake_now += 4;
    tl_metrics_token(m, 3.5, -1);
    r = tl_metrics_report_get(m);
    TL_CHECK_NEAR(r.tpot_ms, 4, 1e-9);
    TL_CHECK_NEAR(r.ttft_ms, 25, 1e-9);
    tl_metrics_resume(m, fake_now + 100);   /* after the first token it changes nothing */
    fake_now += 4;
    tl_metrics_token(m, 3.5, -1);
    TL_CHECK_NEAR(tl_metrics_report_get(m).tpot_ms, 4, 1e-9);
    tl_metrics_free(m);

    /* tl_compare: the rule lesson sentences are chosen by (a against b) */
    double eq[] = {2.0, 2.1, 1.9, 2.05, 1.95};
    tl_cmp c = tl_compare(eq, 5, eq, 5, 0.1);                 /* both sides equal */
    TL_CHECK_INT(c.outcome, TL_CMP_SAME);
    TL_CHECK_NEAR(c.med_a, 2.0, 1e-12);
    TL_CHECK_NEAR(c.med_b, 2.0, 1e-12);
    double flat[] = {3, 3, 3, 3, 3};
    TL_CHECK_INT(tl_compare(flat, 5, flat, 5, 0).outcome, TL_CMP_SAME);   /* equal, no tolerance */
    double slow[] = {3.0, 3.2, 2.9, 3.1, 3.05};
    c = tl_compare(eq, 5, slow, 5, 0.1);
    TL_CHECK_INT(c.outcome, TL_CMP_LOWER);
    TL_CHECK_NEAR(c.lo_b, 2.9, 1e-12);
    TL_CHECK_NEAR(c.hi_b, 3.2, 1e-12);
    TL_CHECK_NEAR(c.q1_b, 3.0, 1e-12);                       /* NumPy: quantile(.., 0.25) */
    TL_CHECK_NEAR(c.q3_b, 3.1, 1e-12);
    TL_CHECK_INT(tl_compare(slow, 5, eq, 5, 0.1).outcome, TL_CMP_HIGHER);
    /* within the tolerance: the same, even when the middles do not overlap */
    double near[] = {2.1, 2.15, 2.12, 2.14, 2.11};
    TL_CHECK_INT(tl_compare(eq, 5, near, 5, 0.1).outcome, TL_CMP_SAME);
    TL_CHECK_INT(tl_compare(eq, 5, near, 5, 0.01).outcome, TL_CMP_LOWER);
    /* medians 50% apart but the spreads overlap: the noise decides nothing */
    double wide_a[] = {1, 2, 2, 6, 7}, wide_b[] = {1, 2, 3, 6, 8};
    TL_CHECK_INT(tl_compare(wide_a, 5, wide_b, 5, 0.1).outcome, TL_CMP_UNDECIDED);
    TL_CHECK_INT(tl_compare(eq, 2, slow, 2, 0.1).outcome, TL_CMP_UNDECIDED);   /* too few runs */
    TL_CHECK(!strcmp(tl_cmp_outcome_name(TL_CMP_SAME), "same"));

    /* tl_median: odd and even counts, unsorted input, one value */
    double odd[] = {5, -1, 3, 9, 0}, even[] = {4, 1, 3, 2}, one[] = {7};
    TL_CHECK_NEAR(tl_median(odd, 5), 3, 0);
    TL_CHECK_NEAR(tl_median(even, 4), 2.5, 0);
    TL_CHECK_NEAR(tl_median(one, 1), 7, 0);
    return TL_TEST_END("generate_metrics");
}
