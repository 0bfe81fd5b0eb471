/* AArch64 Advanced SIMD (NEON): weights widened to fp32 in registers, fp32 FMA, 4 lanes. NEON
 * and the f16 <-> f32 conversions are part of every ARMv8-A core, so the "neon" set needs no
 * run-time check; it is built only for aarch64 (kernels/cpu/CMakeLists.txt) and its Q8_0/Q4_0
 * products are the generic integer ones. "neon-dotprod" is the same with Q8_0/Q4_0 on SDOT
 * (qmm_dotprod_neon.c), for CPUs that report the dot product extension (Armv8.2 optional,
 * Armv8.4 on: Cortex-A76/Neoverse N1 and later, every Apple M). "neon-bf16" adds BFDOT for
 * bf16 weights (mv_bfdot_neon.c) where the CPU also reports FEAT_BF16 (Armv8.6 on: Neoverse
 * V1/N2, Graviton 3, Apple M2). */
#include <arm_neon.h>
#include <stdint.h>
#if defined(__linux__)
#include <sys/auxv.h>
#elif defined(__APPLE__)
#include <sys/sysctl.h>
#endif

/* bf16 is fp32's high half: widen each u16 to u32 shifted left by 16 and reinterpret */
static inline float32x4_t n_load_bf16(const void *w, int64_t k)
{
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16((const uint16_t *)w + k), 16));
}

static inline float32x4_t n_load_f16(const void *w, int64_t k)
{
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)w + k)));
}

/* [sum a, sum b, sum c, sum d] in three pairwise adds */
static inline float32x4_t n_sum4(float32x4_t a, float32x4_t b, float32x4_t c, float32x4_t d)
{
    return vpaddq_f32(vpaddq_f32(a, b), vpaddq_f32(c, d));
}

#define MM_ISA neon
#define MM_VF float32x4_t
#define MM_VL 4
/* 32 vector registers: a 4 x 4 tile is 16 accumulators, 4 weight vectors and an x one */
#define MM_RB 4
#define MM_TB 4
#define MM_ZERO() vdupq_n_f32(0.0f)
#define MM_FMA(a, b, c) vfmaq_f32(c, a, b)
#define MM_ADD(a, b) vaddq_f32(a, b)
#define MM_HSUM(v) vaddvq_f32(v)
#define MM_LOADX(p) vld1q_f32(p)
#define MM_LOADW_F32(w, k) vld1q_f32((const float *)(w) + (k))
#define MM_LOADW_F16(w, k) n_load_f16(w, k)
#define MM_LOADW_BF16(w, k) n_load_bf16(w, k)
#define MM_SET1(f) vdupq_n_f32(f)
#define MM_HSUM4(a, b, c, d, out) vst1q_f32(out, n_sum4(a, b, c, d))
#define MM_STOREX(p, v) vst1q_f32(p, v)
#include "mm_tmpl.h"
#include "mv_tmpl.h"
#include "attn_tmpl.h"
#define ATT_BF16
#include "attn_tmpl.h"
#undef ATT_BF16

static int always(void) { return 1; }

/* The kernel's word on the CPU (the instructions themselves would trap where missing). */
static int has_dotprod(void)
{
#if defined(__linux__)
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
    return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#elif defined(__APPLE__)
    int v = 0;
    size_t n = sizeof v;
    return sysctlbyname("hw.optional.arm.FEAT_DotProd", &v, &n, NULL, 0) == 0 && v;
#else
    return 0;
#endif
}

static int has_bf16(void)
{
#if defined(__linux__)
#ifndef HWCAP2_BF16
#define HWCAP2_BF16 (1 << 14)
#endif
    return has_dotprod() && (getauxval(AT_HWCAP2) & HWCAP2_BF16) != 0;
#elif defined(__APPLE__)
    int v = 0;
    size_t n = sizeof v;
    return has_dotprod() && sysctlbyname("hw.optional.arm.FEAT_BF16", &v, &n, NULL, 0) == 0 && v;
#else
    return 0;
#endif
}

const tl_cpu_isa tl_cpu_isa_neon = {
    .name = "neon",
    .supported = always,
    .mm = {tl_cpu_mm_f32_neon, tl_cpu_mm_f16_neon, tl_cpu_mv_bf16_neon, tl_cpu_mm_q8_0_generic,
           tl_cpu_mm_q4_0_generic},
    .attn = tl_cpu_attn_neon,
    .attn_bf16 = tl_cpu_attn_bf16_neon,
};

const tl_cpu_isa tl_cpu_isa_neon_dotprod = {
    .name = "neon-dotprod",
    .supported = has_dotprod,
    .mm = {tl_cpu_mm_f32_neon, tl_cpu_mm_f16_neon, tl_cpu_mv_bf16_neon, tl_cpu_mm_q8_0_neon_dotprod,
           tl_cpu_mm_q4_0_neon_dotprod},
    .attn = tl_cpu_attn_neon,
    .attn_bf16 = tl_cpu_attn_bf16_neon,
};

const tl_cpu_isa tl_cpu_isa_neon_bf16 = {
    .name = "neon-bf16",
    .supported = has_bf16,
    .mm = {tl_cpu_mm_f32_neon, tl_cpu_mm_f16_neon, tl_cpu_mm_bf16_neon_bf16, tl_cpu_mm_q8_0_neon_dotprod,
           tl_cpu_mm_q4_0_neon_dotprod},
    .attn = tl_cpu_attn_neon,
    .attn_bf16 = tl_cpu_attn_bf16_neon,
    .want_pack = {[TL_BF16] = 1},
    .pack_align = 8,
};
