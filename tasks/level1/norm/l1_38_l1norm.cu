// Reference for KernelBench level 1 problem 38_L1Norm_: y = x / mean(|x|, dim=1, keepdim=True) for x[B, D].
// One block of 1024 threads per row; the row sum in double (per-thread strided
// sums, then a shared-memory tree: fixed order).
#define THREADS 1024

extern "C" __global__ void __launch_bounds__(THREADS) l1_norm_ref(const float* __restrict__ x,
        float* __restrict__ y, long long D)
{
        __shared__ double sh[THREADS];
        const float* row = x + (unsigned long long)blockIdx.x * D;
        float* out = y + (unsigned long long)blockIdx.x * D;
        double a = 0.0;
        for (long long i = threadIdx.x; i < D; i += THREADS) {
                double v = row[i];
                a += fabs(v);
        }
        sh[threadIdx.x] = a;
        __syncthreads();
        for (int k = THREADS / 2; k > 0; k >>= 1) {
                if (threadIdx.x < k)
                        sh[threadIdx.x] += sh[threadIdx.x + k];
                __syncthreads();
        }
        double r = (double)D / sh[0];
        for (long long i = threadIdx.x; i < D; i += THREADS)
                out[i] = (float)((double)row[i] * r);
}
