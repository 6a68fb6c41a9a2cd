// Reference for KernelBench level 1 problem 12_Matmul_with_diagonal_matrices_: C = diag(a) @ B, computed
// as PyTorch eager does it: diag_fill builds the dense N x N diagonal matrix in
// scratch, then a cuBLAS SGEMM (TF32 off). Every product but one per output is
// an exact zero, so C[i][j] = a[i] * B[i][j] exactly.
extern "C" __global__ void diag_fill(const float* __restrict__ a, float* __restrict__ d, int N)
{
        unsigned long long n2 = (unsigned long long)N * N;
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long e = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; e < n2;
             e += stride) {
                int i = (int)(e / N), j = (int)(e % N);
                d[e] = i == j ? a[i] : 0.0f;
        }
}
