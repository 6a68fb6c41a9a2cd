// Reference for KernelBench level 1 problem 90_cumprod: y = torch.cumprod(x, dim=1).
// One block of 1024 threads per row. The row is processed in tiles of
// 1024 * 8 elements (in forward order): each thread combines its 8
// consecutive elements in double, a Hillis-Steele scan over the 1024 thread
// totals (double, shared memory) gives each thread its offset, and a carry
// moves from tile to tile. Deterministic, and exact to double precision.
#define THREADS 1024
#define ITEMS 8

extern "C" __global__ void __launch_bounds__(THREADS) cumprod_ref(const float* __restrict__ x,
        float* __restrict__ y, long long L)
{
        __shared__ double sh[THREADS];
        unsigned long long row = (unsigned long long)blockIdx.x * L;
        double carry = 1.0;
        for (long long t0 = 0; t0 < L; t0 += (long long)THREADS * ITEMS) {
                double v[ITEMS];
                double local = 1.0;
                for (int k = 0; k < ITEMS; k++) {
                        long long j = t0 + (long long)threadIdx.x * ITEMS + k;  /* scan position */
                        double e = 1.0;
                        if (j < L) {
                                long long i = j;                       /* element index */
                                e = (double)x[row + i];
                        }
                        v[k] = e;
                        local = local * e;
                }
                sh[threadIdx.x] = local;
                __syncthreads();
                for (int s = 1; s < THREADS; s <<= 1) {
                        double add = threadIdx.x >= s ? sh[threadIdx.x - s] : 1.0;
                        __syncthreads();
                        sh[threadIdx.x] = sh[threadIdx.x] * add;
                        __syncthreads();
                }
                double run = carry * (threadIdx.x > 0 ? sh[threadIdx.x - 1] : 1.0);
                for (int k = 0; k < ITEMS; k++) {
                        long long j = t0 + (long long)threadIdx.x * ITEMS + k;
                        if (j < L) {
                                long long i = j;
                                run = run * v[k];
                                y[row + i] = (float)run;
                        }
                }
                carry = carry * sh[THREADS - 1];
                __syncthreads();
        }
}
