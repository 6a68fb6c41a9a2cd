// Correct FP16 GEMM with B transposed (B is [N, K]), FP32 accumulation.
#include <cuda_fp16.h>

extern "C" __global__ void gemm_tb(const __half *A, const __half *B, __half *C, int M, int N, int K)
{
        int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
        if (row < M && col < N) {
                float acc = 0.0f;
                for (int k = 0; k < K; k++)
                        acc += __half2float(A[(long long)row * K + k]) * __half2float(B[(long long)col * K + k]);
                C[(long long)row * N + col] = __float2half_rn(acc);
        }
}
