/* Not CUDA: just enough of the CUDA device API for test_cuda_qemu.cpp to compile
 * kernels/cuda/qkernels.cuh as ordinary host C++ and run each kernel's threads on the CPU.
 * A warp's 32 lanes are 32 std::threads that meet at a barrier inside every shuffle, so warp
 * reductions run as written. The intrinsics follow the CUDA C Programming Guide's definitions:
 * __dp4a (signed bytes, int32 accumulate), __vsub4 (per-byte, wrapping), __ldcs (a load),
 * __float2int_rn (round to nearest even), __fdiv_rn/__fmul_rn/__fsub_rn (one IEEE operation).
 * Only test_cuda_qemu.cpp includes this. */
#ifndef TL_QEMU_CUDA_RUNTIME_H
#define TL_QEMU_CUDA_RUNTIME_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <barrier>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(n)

struct qemu_dim3 {
    unsigned x, y, z;
};
extern thread_local qemu_dim3 threadIdx, blockIdx;
extern qemu_dim3 blockDim, gridDim;

struct uint4 {
    unsigned x, y, z, w;
};
struct int4 {
    int x, y, z, w;
};

inline uint4 __ldcs(const uint4 *p) { return *p; }
inline float __uint_as_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}
inline uint32_t __float_as_uint(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
inline int __float2int_rn(float v) { return (int)nearbyintf(v); }   /* the default mode: to nearest even */
/* single IEEE operations, round to nearest even (x86-64's SSE arithmetic) */
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline int __dp4a(int a, int b, int c)
{
    for (int k = 0; k < 4; k++)
        c += (int)(int8_t)(uint8_t)((unsigned)a >> (8 * k)) * (int)(int8_t)(uint8_t)((unsigned)b >> (8 * k));
    return c;
}
inline unsigned __vsub4(unsigned a, unsigned b)
{
    unsigned r = 0;
    for (int k = 0; k < 4; k++)
        r |= ((((a >> (8 * k)) & 0xffu) - ((b >> (8 * k)) & 0xffu)) & 0xffu) << (8 * k);
    return r;
}

/* the warp's lanes exchange values through these */
extern float qemu_slots[32];
extern std::barrier<> *qemu_warp;
inline float __shfl_xor_sync(unsigned mask, float v, int o)
{
    (void)mask;
    int lane = (int)(threadIdx.x & 31);
    qemu_slots[lane] = v;
    qemu_warp->arrive_and_wait();
    float r = qemu_slots[lane ^ o];
    qemu_warp->arrive_and_wait();
    return r;
}

#endif
