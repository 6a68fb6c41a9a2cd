// A minimal correct candidate: one block of 256 threads per row, float math.
// Pass 1: row max; pass 2: sum of exp(x - max); pass 3: write.
extern "C" __global__ void softmax_rows(const float* x, float* y, long long D)
{
        __shared__ float sh[256];
        const float* row = x + (unsigned long long)blockIdx.x * D;
        float* out = y + (unsigned long long)blockIdx.x * D;
        float m = -3.0e38f;
        for (long long i = threadIdx.x; i < D; i += 256)
                m = fmaxf(m, row[i]);
        sh[threadIdx.x] = m;
        __syncthreads();
        for (int s = 128; s > 0; s >>= 1) {
                if (threadIdx.x < s)
                        sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + s]);
                __syncthreads();
        }
        m = sh[0];
        __syncthreads();
        float sum = 0.0f;
        for (long long i = threadIdx.x; i < D; i += 256)
                sum += expf(row[i] - m);
        sh[threadIdx.x] = sum;
        __syncthreads();
        for (int s = 128; s > 0; s >>= 1) {
                if (threadIdx.x < s)
                        sh[threadIdx.x] += sh[threadIdx.x + s];
                __syncthreads();
        }
        float inv = 1.0f / sh[0];
        for (long long i = threadIdx.x; i < D; i += 256)
                out[i] = expf(row[i] - m) * inv;
}
