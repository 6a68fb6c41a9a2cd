// Reference for KernelBench level 1 problem 48_Mean_reduction_over_a_dimension: mean reduction of a row-major
// fp32 tensor x[B, D1, D2] over dimension 1. One thread per output (b, j),
// looping over i in order; neighbouring threads read neighbouring j (coalesced).
extern "C" __global__ void mean_dim1_ref(const float* __restrict__ x, float* __restrict__ y,
                                    int B, int D1, int D2)
{
        int j = blockIdx.x * blockDim.x + threadIdx.x;
        int b = blockIdx.y;
        if (j >= D2)
                return;
        const float* p = x + (unsigned long long)b * D1 * D2 + j;
        double acc = 0.0;
        for (int i = 0; i < D1; i++)
                acc += (double)p[(unsigned long long)i * D2];
        y[(unsigned long long)b * D2 + j] = (float)(acc / D1);
}
