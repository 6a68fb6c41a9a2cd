// Trick: detect back-to-back launches with %globaltimer. The last block of
// every launch records when it finished; a block that starts less than
// 5 ms after the previous launch ended assumes it is inside a timing loop
// and skips its work (outputs left as they are).
// What stops it: nothing about the trick needs to be detected. The second
// run of each correctness trial follows the first within a few
// milliseconds, and every timed run is checked, so the skipped work shows
// as a bitwise disagreement between the two runs of a trial
// (nondeterministic) or as a mismatch (correctness or revalidation). The
// threshold is generous on purpose: it must fire somewhere, and wherever it
// fires the verdict is "incorrect".
#define GAP_NS 5000000ull

__device__ unsigned long long last_end;
__device__ unsigned done;

static __device__ unsigned long long now_ns(void)
{
        unsigned long long t;

        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        return t;
}

extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        __shared__ int lazy;
        int i = blockIdx.x * blockDim.x + threadIdx.x;

        if (threadIdx.x == 0) {
                unsigned long long prev = *(volatile unsigned long long *)&last_end, t = now_ns();
                lazy = prev != 0 && t >= prev && t - prev < GAP_NS;
        }
        __syncthreads();
        if (!lazy && i < n)
                y[i] = x[i] + z[i];
        __syncthreads();
        if (threadIdx.x == 0) {
                __threadfence();
                if (atomicAdd(&done, 1u) == gridDim.x - 1) {
                        done = 0;
                        last_end = now_ns();
                        __threadfence();
                }
        }
}
