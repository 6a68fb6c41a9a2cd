#include <cuda_runtime.h>
#include <algorithm>

constexpr int BM = 64, BN = 64, BK = 8, TM = 8;

// 1D block tiling: blockDim.x == BM * BN / TM
extern "C" __global__ void sgemm_1d_blocktiling(int M, int N, int K, float alpha, const float* A, const float* B,
                                                float beta, float* C) {
    const unsigned cRow = blockIdx.y, cCol = blockIdx.x;
    const int threadCol = threadIdx.x % BN;
    const int threadRow = threadIdx.x / BN;
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    A += cRow * BM * K;
    B += cCol * BN;
    C += cRow * BM * N + cCol * BN;
    const unsigned innerColA = threadIdx.x % BK, innerRowA = threadIdx.x / BK;
    const unsigned innerColB = threadIdx.x % BN, innerRowB = threadIdx.x / BN;
    float threadResults[TM] = {0.0f};
    for (unsigned bkIdx = 0; bkIdx < K; bkIdx += BK) {
        As[innerRowA * BK + innerColA] = A[innerRowA * K + innerColA];
        Bs[innerRowB * BN + innerColB] = B[innerRowB * N + innerColB];
        __syncthreads();
        A += BK;
        B += BK * N;
        for (unsigned dotIdx = 0; dotIdx < BK; ++dotIdx) {
            float tmpB = Bs[dotIdx * BN + threadCol];
#pragma unroll
            for (unsigned resIdx = 0; resIdx < TM; ++resIdx)
                threadResults[resIdx] += As[(threadRow * TM + resIdx) * BK + dotIdx] * tmpB;
        }
        __syncthreads();
    }
    for (unsigned resIdx = 0; resIdx < std::min(TM, M); ++resIdx)
        C[(threadRow * TM + resIdx) * N + threadCol] = alpha * threadResults[resIdx] + beta * C[(threadRow * TM + resIdx) * N + threadCol];
}
