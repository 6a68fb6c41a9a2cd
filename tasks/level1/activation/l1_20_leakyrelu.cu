// Reference for KernelBench level 1 problem 20_LeakyReLU: y = x if x >= 0 else 0.01 * x  (torch.nn.functional.leaky_relu, negative_slope=0.01), elementwise.
// fp32 in, fp32 out; a grid-stride loop with 64-bit indices (the default size
// has more than 2^31 elements).

extern "C" __global__ void leaky_relu_ref(const float* __restrict__ x, float* __restrict__ y,
                                    unsigned long long n)
{
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
             i < n; i += stride) {
                float v = x[i];
                y[i] = v >= 0.0f ? v : 0.01f * v;
        }
}
