// Reference for KernelBench level 1 problem 29_Softplus: y = log(1 + exp(x)), and x itself where x > 20  (torch.nn.functional.softplus defaults), elementwise.
// fp32 in, fp32 out; a grid-stride loop with 64-bit indices (the default size
// has more than 2^31 elements).

extern "C" __global__ void softplus_ref(const float* __restrict__ x, float* __restrict__ y,
                                    unsigned long long n)
{
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
             i < n; i += stride) {
                float v = x[i];
                y[i] = v > 20.0f ? v : log1pf(expf(v));
        }
}
