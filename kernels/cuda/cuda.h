/* Internal to the CUDA backend and its tests: counters that show which path a pass took, so
 * tests can check the decode graph is really captured and replayed rather than assume it. */
#ifndef TL_KERNELS_CUDA_H
#define TL_KERNELS_CUDA_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tl_cuda_stats {
    long passes;        /* begin_pass..end_pass brackets seen */
    long eager_decode;  /* T == 1 passes run op by op (first steps, shape changes) */
    long captures;      /* decode graphs captured */
    long replays;       /* decode passes served by replaying the graph */
    long errors;        /* CUDA errors seen by operations (reported once on stderr) */
} tl_cuda_stats;

void tl_cuda_get_stats(void *ctx, tl_cuda_stats *out);
/* Device time between the last begin_pass and end_pass, from CUDA events; < 0 if none. */
double tl_cuda_pass_device_ms(void *ctx);

#ifdef __cplusplus
}
#endif

#endif
