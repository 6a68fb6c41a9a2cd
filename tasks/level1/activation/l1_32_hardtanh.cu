// Reference for KernelBench level 1 problem 32_HardTanh: y = min(max(x, -1), 1)  (torch.nn.functional.hardtanh(x, min_val=-1., max_val=1.)), elementwise.
// fp32 in, fp32 out; a grid-stride loop with 64-bit indices (the default size
// has more than 2^31 elements).

extern "C" __global__ void hardtanh_ref(const float* __restrict__ x, float* __restrict__ y,
                                    unsigned long long n)
{
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
             i < n; i += stride) {
                float v = x[i];
                y[i] = fminf(fmaxf(v, -1.0f), 1.0f);
        }
}
