/* --synthetic's memory check (issue 38): the bytes of a shape's weights in each dtype, against
 * the parameter count Meta publishes for Llama 3.2 1B (1,235,814,400: 262,668,288 in the tied
 * embedding, 973,078,528 in 16 layers' matrices, 67,584 norm weights kept in fp32), and the
 * fallback to a smaller dtype when memory is short. */
#include <string.h>

#include "tl_test.h"
#include "tokenloop/synthetic.h"

int main(void)
{
    tl_config c;
    tl_error err;
    TL_CHECK_INT(tl_synthetic_config(&c, "llama-3.2-1b", &err), 0);
    const double mats = 262668288.0 + 973078528.0, norms = 67584.0;
    TL_CHECK_NEAR(mats + norms, 1235814400.0, 0);
    TL_CHECK_NEAR(tl_synthetic_bytes(&c, TL_BF16), mats * 2 + norms * 4, 0);
    TL_CHECK_NEAR(tl_synthetic_bytes(&c, TL_Q8_0), mats / 32 * 34 + norms * 4, 0);   /* 32 int8 + an f16 scale */
    TL_CHECK_NEAR(tl_synthetic_bytes(&c, TL_Q4_0), mats / 32 * 18 + norms * 4, 0);   /* 16 bytes of nibbles + scale */

    tl_dtype got = TL_F32;
    char note[256];
    /* bf16 alone: 2.47 GB and a 0.5 GB margin */
    TL_CHECK_INT(tl_synthetic_pick_dtype("llama-3.2-1b", TL_BF16, 3.0e9, &got, note, sizeof note, &err), 0);
    TL_CHECK_INT(got, TL_BF16);
    TL_CHECK(note[0] == '\0');
    /* q8_0 is converted from bf16, both held: 2.47 + 1.31 + 0.5 > 3.8 GB, q4_0 (+0.70) fits */
    TL_CHECK_INT(tl_synthetic_pick_dtype("llama-3.2-1b", TL_Q8_0, 3.8e9, &got, note, sizeof note, &err), 0);
    TL_CHECK_INT(got, TL_Q4_0);
    TL_CHECK_MSG(strstr(note, "running q4_0 instead") != NULL, "note: %s", note);
    /* nothing fits: an error naming the shape */
    TL_CHECK_INT(tl_synthetic_pick_dtype("llama-3.2-1b", TL_BF16, 2.0e9, &got, note, sizeof note, &err), -1);
    TL_CHECK_MSG(strstr(err.msg, "llama-3.2-1b: 2.0 GB of memory available") != NULL, "%s", err.msg);
    /* unknown memory: as asked */
    TL_CHECK_INT(tl_synthetic_pick_dtype("llama-3.2-1b", TL_Q8_0, 0, &got, note, sizeof note, &err), 0);
    TL_CHECK_INT(got, TL_Q8_0);
    TL_CHECK_INT(tl_synthetic_pick_dtype("llama-4", TL_BF16, 0, &got, note, sizeof note, &err), -1);
    return TL_TEST_END("generate_synthetic_pick");
}
