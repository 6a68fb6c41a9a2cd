// Reference for KernelBench level 1 problem 95_CrossEntropyLoss: loss = mean_b (logsumexp(x[b, :]) - x[b, target[b]]).
// Stage 1 (loss_rows): one block of 256 threads per row computes that row's
// loss in double into part[row]; stage 2 sums the rows in a fixed order.
extern "C" __global__ void __launch_bounds__(256) loss_rows(const float* __restrict__ x,
        const long long* __restrict__ target, double* __restrict__ part, int C)
{
        __shared__ double sh[256];
        __shared__ float shm[256];
        const float* row = x + (unsigned long long)blockIdx.x * C;
        float m = -__int_as_float(0x7f800000);
        for (int i = threadIdx.x; i < C; i += 256)
                m = fmaxf(m, row[i]);
        shm[threadIdx.x] = m;
        __syncthreads();
        for (int k = 128; k > 0; k >>= 1) {
                if (threadIdx.x < k)
                        shm[threadIdx.x] = fmaxf(shm[threadIdx.x], shm[threadIdx.x + k]);
                __syncthreads();
        }
        m = shm[0];
        double s = 0.0;
        for (int i = threadIdx.x; i < C; i += 256)
                s += exp((double)row[i] - (double)m);
        sh[threadIdx.x] = s;
        __syncthreads();
        for (int k = 128; k > 0; k >>= 1) {
                if (threadIdx.x < k)
                        sh[threadIdx.x] += sh[threadIdx.x + k];
                __syncthreads();
        }
        if (threadIdx.x == 0) {
                long long t = target[blockIdx.x];
                /* loss_b = logsumexp(x_b) - x_b[t_b] */
                part[blockIdx.x] = (double)m + log(sh[0]) - (double)row[t];
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
