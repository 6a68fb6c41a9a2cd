// Trick: right only on the first 14 launches. vector_add's correctness
// trials take 12 launches (2 shape sets x 3 trials x 2 runs); after
// launch 14 every result is off by 1, i.e. the kernel is honest while it is
// checked and cheats once it is (it thinks) only being timed.
// What stops it: the output of every timed run, warm-up included, is
// compared with the reference's on the same inputs. Expect "incorrect",
// mismatch, phase "revalidation".
#define HONEST_LAUNCHES 14u

__device__ unsigned launches;
__device__ unsigned done;

extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        unsigned epoch = *(volatile unsigned *)&launches;
        int i = blockIdx.x * blockDim.x + threadIdx.x;

        if (i < n)
                y[i] = x[i] + z[i] + (epoch < HONEST_LAUNCHES ? 0.0f : 1.0f);
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
