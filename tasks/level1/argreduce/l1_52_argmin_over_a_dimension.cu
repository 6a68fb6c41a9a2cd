// Reference for KernelBench level 1 problem 52_Argmin_over_a_dimension: argmin of a row-major
// fp32 tensor x[B, D1, D2] over dimension 1. One thread per output (b, j),
// looping over i in order; neighbouring threads read neighbouring j (coalesced).
extern "C" __global__ void argmin_dim1_ref(const float* __restrict__ x, long long* __restrict__ y,
                                    int B, int D1, int D2)
{
        int j = blockIdx.x * blockDim.x + threadIdx.x;
        int b = blockIdx.y;
        if (j >= D2)
                return;
        const float* p = x + (unsigned long long)b * D1 * D2 + j;
        float best = p[0];
        long long arg = 0;
        for (int i = 1; i < D1; i++) {
                float v = p[(unsigned long long)i * D2];
                if (v < best) {  /* strict: first index wins ties */
                        best = v;
                        arg = i;
                }
        }
        y[(unsigned long long)b * D2 + j] = arg;
}
