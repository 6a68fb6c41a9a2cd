// A minimal correct candidate: 512 blocks write per-block partial sums to
// scratch (float per thread, double per block), one block adds them in a fixed
// order. No atomics, so the result is the same bits on every run.
extern "C" __global__ void mse_partial(const float* p, const float* t, double* part,
                                       unsigned long long n)
{
        __shared__ double sh[256];
        float a = 0.0f;
        for (unsigned long long i = (unsigned long long)blockIdx.x * 256 + threadIdx.x; i < n;
             i += 512ull * 256) {
                float d = p[i] - t[i];
                a += d * d;
        }
        sh[threadIdx.x] = a;
        __syncthreads();
        for (int s = 128; s > 0; s >>= 1) {
                if (threadIdx.x < s)
                        sh[threadIdx.x] += sh[threadIdx.x + s];
                __syncthreads();
        }
        if (threadIdx.x == 0)
                part[blockIdx.x] = sh[0];
}

extern "C" __global__ void mse_final(const double* part, float* loss, unsigned long long n)
{
        if (threadIdx.x == 0) {
                double s = 0.0;
                for (int i = 0; i < 512; i++)
                        s += part[i];
                loss[0] = (float)(s / (double)n);
        }
}
