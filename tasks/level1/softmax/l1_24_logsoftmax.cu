// Reference for KernelBench level 1 problem 24_LogSoftmax: log-softmax over the last
// dimension of a row-major [B, D] fp32 tensor. One block of 1024 threads per
// row: pass 1 finds the row maximum, pass 2 sums exp(x - max) in double (fixed
// order: per-thread strided sums, then a shared-memory tree), pass 3 writes.
#define THREADS 1024

__device__ static float block_max(float v, float* sh)
{
        sh[threadIdx.x] = v;
        __syncthreads();
        for (int s = THREADS / 2; s > 0; s >>= 1) {
                if (threadIdx.x < s)
                        sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + s]);
                __syncthreads();
        }
        float r = sh[0];
        __syncthreads();
        return r;
}

__device__ static double block_sum(double v, double* sh)
{
        sh[threadIdx.x] = v;
        __syncthreads();
        for (int s = THREADS / 2; s > 0; s >>= 1) {
                if (threadIdx.x < s)
                        sh[threadIdx.x] += sh[threadIdx.x + s];
                __syncthreads();
        }
        double r = sh[0];
        __syncthreads();
        return r;
}

extern "C" __global__ void __launch_bounds__(THREADS) log_softmax_ref(const float* __restrict__ x,
        float* __restrict__ y, long long D)
{
        __shared__ float shf[THREADS];
        __shared__ double shd[THREADS];
        const float* row = x + (unsigned long long)blockIdx.x * D;
        float* out = y + (unsigned long long)blockIdx.x * D;
        float m = -__int_as_float(0x7f800000);
        for (long long i = threadIdx.x; i < D; i += THREADS)
                m = fmaxf(m, row[i]);
        m = block_max(m, shf);
        double s = 0.0;
        for (long long i = threadIdx.x; i < D; i += THREADS)
                s += exp((double)row[i] - (double)m);
        s = block_sum(s, shd);
        double ls = log(s);
        for (long long i = threadIdx.x; i < D; i += THREADS)
                out[i] = (float)((double)row[i] - (double)m - ls);
}
