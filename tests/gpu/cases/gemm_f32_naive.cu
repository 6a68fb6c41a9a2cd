// Correct FP32 GEMM, one thread per output, FP32 FMA in k order.
extern "C" __global__ void gemm(const float *A, const float *B, float *C, int M, int N, int K)
{
        int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
        if (row < M && col < N) {
                float acc = 0.0f;
                for (int k = 0; k < K; k++)
                        acc = fmaf(A[(long long)row * K + k], B[(long long)k * N + col], acc);
                C[(long long)row * N + col] = acc;
        }
}
