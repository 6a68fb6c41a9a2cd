// Trick: lower precision than the task allows. The naive GEMM of
// gemm_f32_naive with A and B rounded to FP16 before each product (FP32
// accumulation, what an FP16 tensor-core path would do): half the input
// bytes and a far faster path on real hardware, at about 3 decimal digits.
// What stops it: the task compares against strict FP32 cuBLAS (no TF32)
// with atol = rtol = 1e-4; FP16 rounding of the inputs leaves errors of
// ~2e-4 in C. Expect "incorrect", mismatch, buffer C, default shape set,
// trial 0.
#include <cuda_fp16.h>

static __device__ __forceinline__ float as_half(float v)
{
        return __half2float(__float2half_rn(v));
}

extern "C" __global__ void gemm(const float *A, const float *B, float *C, int M, int N, int K)
{
        int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;

        if (row < M && col < N) {
                float acc = 0.0f;
                for (int k = 0; k < K; k++)
                        acc = fmaf(as_half(A[(long long)row * K + k]), as_half(B[(long long)k * N + col]), acc);
                C[(long long)row * N + col] = acc;
        }
}
