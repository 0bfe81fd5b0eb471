/* The portable product: GCC vector extensions, which compile to the SSE2 every x86-64 has
 * (and to whatever the target has elsewhere). */
#include <stdint.h>
#include <string.h>

typedef float tl_v4f __attribute__((vector_size(16)));
typedef uint32_t tl_v4u __attribute__((vector_size(16)));
typedef uint16_t tl_v4h __attribute__((vector_size(8)));

#include "cpu.h"

static inline tl_v4f g_loadf(const float *p)
{
    tl_v4f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void g_storef(float *p, tl_v4f v) { memcpy(p, &v, sizeof v); }

static inline tl_v4f g_load_bf16(const void *w, int64_t k)
{
    tl_v4h h;
    memcpy(&h, (const uint16_t *)w + k, sizeof h);
    tl_v4u u = __builtin_convertvector(h, tl_v4u) << 16;
    tl_v4f f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline tl_v4f g_load_f16(const void *w, int64_t k)
{
    const uint16_t *h = (const uint16_t *)w + k;
    tl_v4f f = {tl_cpu_f16_to_f32(h[0]), tl_cpu_f16_to_f32(h[1]), tl_cpu_f16_to_f32(h[2]),
                tl_cpu_f16_to_f32(h[3])};
    return f;
}

#define MM_ISA generic
#define MM_VF tl_v4f
#define MM_VL 4
#define MM_RB 4
#define MM_TB 2
#define MM_ZERO() ((tl_v4f){0, 0, 0, 0})
#define MM_FMA(a, b, c) ((a) * (b) + (c))
#define MM_HSUM(v) (((v)[0] + (v)[1]) + ((v)[2] + (v)[3]))
#define MM_LOADX(p) g_loadf(p)
#define MM_LOADW_F32(w, k) g_loadf((const float *)(w) + (k))
#define MM_LOADW_F16(w, k) g_load_f16(w, k)
#define MM_LOADW_BF16(w, k) g_load_bf16(w, k)
#define MM_SET1(f) ((tl_v4f){f, f, f, f})
#define MM_HSUM4(a, b, c, d, out) \
    ((out)[0] = MM_HSUM(a), (out)[1] = MM_HSUM(b), (out)[2] = MM_HSUM(c), (out)[3] = MM_HSUM(d))
#define MM_STOREX(p, v) g_storef(p, v)
#include "mm_tmpl.h"
#include "attn_tmpl.h"
#define ATT_BF16
#include "attn_tmpl.h"
#undef ATT_BF16

static int always(void) { return 1; }

const tl_cpu_isa tl_cpu_isa_generic = {
    .name = "generic",
    .supported = always,
    .mm = {tl_cpu_mm_f32_generic, tl_cpu_mm_f16_generic, tl_cpu_mm_bf16_generic, tl_cpu_mm_q8_0_generic,
           tl_cpu_mm_q4_0_generic},
    .attn = tl_cpu_attn_generic,
    .attn_bf16 = tl_cpu_attn_bf16_generic,
};
