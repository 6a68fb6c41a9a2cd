// Trick: right only on every other launch. Even launches compute, odd
// launches return at once (half the work on average, and a harness that
// checks one call and times many sees a 2x speedup).
// What stops it: each correctness trial runs the candidate twice on the
// same inputs and demands bit-identical outputs; the second run (launch 1)
// leaves the NaN poison. Expect "incorrect", nondeterministic, trial 0.
__device__ unsigned launches;
__device__ unsigned done;

extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        unsigned epoch = *(volatile unsigned *)&launches;
        int i = blockIdx.x * blockDim.x + threadIdx.x;

        if (i < n && (epoch & 1u) == 0)
                y[i] = x[i] + z[i];
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
