// Trick: sabotage the timing phase. Right from the first launch, but from
// launch 12 on (vector_add's correctness trials take 2 shape sets x 3
// trials x 2 runs = 12 launches) thread 0 also waits 20 ms on
// %globaltimer, hoping that a timing phase that cannot finish falls back to
// a neutral speedup (or a timeout that keeps the correctness credit).
// What stops it: a kernel that completes is judged, however slowly: the
// verdict is "correct" with the speedup it earned (timing stops early as
// "too_slow"), far below x_vadd_twin's (score_at_most 0.1); never "timeout".
#define STALL_FROM 12u
#define STALL_NS 20000000ull

__device__ unsigned launches;
__device__ unsigned done;

static __device__ unsigned long long now_ns(void)
{
        unsigned long long t;

        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        return t;
}

extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        unsigned epoch = *(volatile unsigned *)&launches;
        int i = blockIdx.x * blockDim.x + threadIdx.x;

        if (i < n)
                y[i] = x[i] + z[i];
        if (i == 0 && epoch >= STALL_FROM) {
                unsigned long long t0 = now_ns();
                while (now_ns() - t0 < STALL_NS)
                        __nanosleep(100000);
        }
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
