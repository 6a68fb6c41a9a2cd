// Reference for KernelBench level 1 problem 15_Matmul_for_lower_triangular_matrices: C = tril(tril(A) @ tril(B))
// tri_copy writes the lower triangle of a square N x N matrix into a scratch
// matrix and zeros the rest; cuBLAS multiplies the copies (TF32 off); tri_mask
// zeros the upper triangle of the product.
extern "C" __global__ void tri_copy(const float* __restrict__ src, float* __restrict__ dst, int N)
{
        unsigned long long n2 = (unsigned long long)N * N;
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long e = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; e < n2;
             e += stride) {
                int i = (int)(e / N), j = (int)(e % N);
                dst[e] = (i >= j) ? src[e] : 0.0f;
        }
}

extern "C" __global__ void tri_mask(float* __restrict__ c, int N)
{
        unsigned long long n2 = (unsigned long long)N * N;
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long e = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; e < n2;
             e += stride) {
                int i = (int)(e / N), j = (int)(e % N);
                if (!(i >= j))
                        c[e] = 0.0f;
        }
}
