// Reference for KernelBench level 1 problem 88_MinGPTNewGelu: y = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), elementwise.
// fp32 in, fp32 out; a grid-stride loop with 64-bit indices (the default size
// has more than 2^31 elements).

extern "C" __global__ void new_gelu_ref(const float* __restrict__ x, float* __restrict__ y,
                                    unsigned long long n)
{
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
             i < n; i += stride) {
                float v = x[i];
                y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
        }
}
