#include <cuda_runtime.h>

#define TILE_SIZE 32

extern "C" __global__ void matmul_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                        int M, int N, int K) {
    __shared__ float As[TILE_SIZE][TILE_SIZE];
    __shared__ float Bs[TILE_SIZE][TILE_SIZE + 1];
    int row = blockIdx.y * TILE_SIZE + threadIdx.y;
    int col = blockIdx.x * TILE_SIZE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < (K + TILE_SIZE - 1) / TILE_SIZE; ++t) {
        int ac = t * TILE_SIZE + threadIdx.x;
        int br = t * TILE_SIZE + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < M && ac < K) ? A[row * K + ac] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (br < K && col < N) ? B[br * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE_SIZE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
