// Reference for KernelBench level 1 problem 27_SELU_: y = scale * (x if x > 0 else alpha * (exp(x) - 1)), alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946  (torch.selu), elementwise.
// fp32 in, fp32 out; a grid-stride loop with 64-bit indices (the default size
// has more than 2^31 elements).

extern "C" __global__ void selu_ref(const float* __restrict__ x, float* __restrict__ y,
                                    unsigned long long n)
{
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
             i < n; i += stride) {
                float v = x[i];
                y[i] = 1.0507009873554804934193349852946f * (v > 0.0f ? v : 1.6732632423543772848170429916717f * expm1f(v));
        }
}
