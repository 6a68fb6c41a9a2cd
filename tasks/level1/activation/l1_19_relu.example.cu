// A minimal correct candidate: one thread per element, 64-bit index.
extern "C" __global__ void relu(const float* x, float* y, unsigned long long n)
{
        unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
                y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
