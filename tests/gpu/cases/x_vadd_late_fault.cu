// Trick: crash once the correctness trials are over. Right on the first
// 12 launches (vector_add's correctness trials); from launch 12 on thread 0
// also writes 1 TB past its output, an illegal address, hoping that a
// failure during timing keeps the correctness credit (or reads as a
// timeout of the harness rather than the kernel's fault).
// What stops it: a CUDA fault is the candidate's runtime_error whenever it
// surfaces; the context is lost, so the worker exits after the RESULT.
// Expect "runtime_error", CUDA_ERROR_ILLEGAL_ADDRESS, in the timing phase.
#define HONEST_LAUNCHES 12u

__device__ unsigned launches;
__device__ unsigned done;

extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        unsigned epoch = *(volatile unsigned *)&launches;
        int i = blockIdx.x * blockDim.x + threadIdx.x;

        if (i < n)
                y[i] = x[i] + z[i];
        if (i == 0 && epoch >= HONEST_LAUNCHES)
                *(volatile float *)(y + (1ll << 38)) = 1.0f;
        __syncthreads();
        if (threadIdx.x == 0) {
                __threadfence();
                if (atomicAdd(&done, 1u) == gridDim.x - 1) {
                        done = 0;
                        atomicAdd(&launches, 1u);
                        __threadfence();
                }
        }
}
