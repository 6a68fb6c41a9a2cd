// Trick: detect back-to-back launches with the per-SM cycle counter. Each
// block records, for its SM (%smid), the launch number and clock64() when
// it finished; a block of launch e > 0 that finds its SM's record from
// launch e - 1 less than 10M cycles old (about 5 ms at 2 GHz, more at lower
// clocks) skips its work. Unlike %globaltimer, clock64 is per SM and not
// synchronised between SMs, hence the per-SM table.
// What stops it: as for x_vadd_globaltimer, the second run of each
// correctness trial comes soon after the first and every timed run is
// checked: "incorrect", nondeterministic or mismatch. The threshold is
// generous so that the trigger fires for certain.
#define GAP_CYCLES 10000000ll
#define SM_SLOTS 256

__device__ unsigned launches;
__device__ unsigned done;
__device__ long long seen_clock[SM_SLOTS];
__device__ unsigned seen_launch[SM_SLOTS]; /* launch number + 1; 0: never */

static __device__ unsigned smid(void)
{
        unsigned s;

        asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
        return s;
}

extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        __shared__ int lazy;
        unsigned epoch = *(volatile unsigned *)&launches, sm = smid();
        int i = blockIdx.x * blockDim.x + threadIdx.x;

        if (threadIdx.x == 0) {
                lazy = 0;
                if (epoch > 0 && sm < SM_SLOTS && *(volatile unsigned *)&seen_launch[sm] == epoch) {
                        long long c = clock64(), prev = *(volatile long long *)&seen_clock[sm];
                        lazy = c > prev && c - prev < GAP_CYCLES;
                }
        }
        __syncthreads();
        if (!lazy && i < n)
                y[i] = x[i] + z[i];
        __syncthreads();
        if (threadIdx.x == 0) {
                if (sm < SM_SLOTS) {
                        seen_clock[sm] = clock64();
                        seen_launch[sm] = epoch + 1;
                }
                __threadfence();
                if (atomicAdd(&done, 1u) == gridDim.x - 1) {
                        done = 0;
                        atomicAdd(&launches, 1u);
                        __threadfence();
                }
        }
}
