// Reference for KernelBench level 1 problem 99_TripletMarginLoss: triplet margin loss, margin 1, p = 2, eps = 1e-6.
// Stage 1 (loss_rows): one block of 256 threads per row computes that row's
// loss in double into part[row]; stage 2 sums the rows in a fixed order.
extern "C" __global__ void __launch_bounds__(256) loss_rows(const float* __restrict__ a,
        const float* __restrict__ p, const float* __restrict__ q, double* __restrict__ part,
        long long D, float margin, float eps)
{
        __shared__ double s1[256], s2[256];
        unsigned long long off = (unsigned long long)blockIdx.x * D;
        double dp = 0.0, dn = 0.0;
        for (long long i = threadIdx.x; i < D; i += 256) {
                double av = a[off + i];
                double u = av - (double)p[off + i] + (double)eps;
                double v = av - (double)q[off + i] + (double)eps;
                dp += u * u;
                dn += v * v;
        }
        s1[threadIdx.x] = dp;
        s2[threadIdx.x] = dn;
        __syncthreads();
        for (int k = 128; k > 0; k >>= 1) {
                if (threadIdx.x < k) {
                        s1[threadIdx.x] += s1[threadIdx.x + k];
                        s2[threadIdx.x] += s2[threadIdx.x + k];
                }
                __syncthreads();
        }
        if (threadIdx.x == 0) {
                double l = sqrt(s1[0]) - sqrt(s2[0]) + (double)margin;
                part[blockIdx.x] = l > 0.0 ? l : 0.0;
        }
}

// Stage 2: one block sums the n partials in a fixed order (strided per-thread
// sums, then a shared-memory tree) and writes out[0] = sum / divisor.
extern "C" __global__ void __launch_bounds__(1024) loss_final(const double* __restrict__ part,
        int n, long long divisor, float* __restrict__ out)
{
        __shared__ double sh[1024];
        double a = 0.0;
        for (int i = threadIdx.x; i < n; i += 1024)
                a += part[i];
        sh[threadIdx.x] = a;
        __syncthreads();
        for (int k = 512; k > 0; k >>= 1) {
                if (threadIdx.x < k)
                        sh[threadIdx.x] += sh[threadIdx.x + k];
                __syncthreads();
        }
        if (threadIdx.x == 0)
                out[0] = (float)(sh[0] / (double)divisor);
}
