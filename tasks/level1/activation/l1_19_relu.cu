// Reference for KernelBench level 1 problem 19_ReLU: y = max(x, 0), elementwise.
// fp32 in, fp32 out, 64-bit indices (the default size has more than 2^31
// elements). When x and y are 16-byte aligned each thread loads two float4s
// before computing either (blocks of 256 threads cover 2048 elements; a
// grid-stride loop covers the rest when the grid is capped), then a scalar
// tail; otherwise a scalar grid-stride loop.

__device__ static float act(float v)
{
        return v > 0.0f ? v : 0.0f;
}

__device__ static float4 act4(float4 v)
{
        return make_float4(act(v.x), act(v.y), act(v.z), act(v.w));
}

extern "C" __global__ void relu_ref(const float* __restrict__ x, float* __restrict__ y,
                                    unsigned long long n)
{
        unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x * 2 + threadIdx.x;
        if ((((unsigned long long)x | (unsigned long long)y) & 15) == 0) {
                const float4* x4 = (const float4*)x;
                float4* y4 = (float4*)y;
                unsigned long long n4 = n / 4;
                unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x * 2;
                for (unsigned long long i = t; i < n4; i += stride) {
                        unsigned long long j = i + blockDim.x;
                        float4 a = x4[i];
                        if (j < n4) {
                                float4 b = x4[j];
                                y4[i] = act4(a);
                                y4[j] = act4(b);
                        } else {
                                y4[i] = act4(a);
                        }
                }
                unsigned long long k = n4 * 4 + (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
                if (k < n)
                        y[k] = act(x[k]);
        } else {
                unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
                for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
                     i < n; i += stride)
                        y[i] = act(x[i]);
        }
}
