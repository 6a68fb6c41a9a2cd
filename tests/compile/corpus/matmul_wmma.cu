#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

#define WMMA_M 16
#define WMMA_N 16
#define WMMA_K 16

// one warp per 16x16 output tile; M, N, K multiples of 16
extern "C" __global__ void wmma_gemm(const half* a, const half* b, float* c, int M, int N, int K) {
    int warpM = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;
    int warpN = blockIdx.y * blockDim.y + threadIdx.y;
    wmma::fragment<wmma::matrix_a, WMMA_M, WMMA_N, WMMA_K, half, wmma::row_major> a_frag;
    wmma::fragment<wmma::matrix_b, WMMA_M, WMMA_N, WMMA_K, half, wmma::col_major> b_frag;
    wmma::fragment<wmma::accumulator, WMMA_M, WMMA_N, WMMA_K, float> acc_frag;
    wmma::fill_fragment(acc_frag, 0.0f);
    for (int i = 0; i < K; i += WMMA_K) {
        int aRow = warpM * WMMA_M, bCol = warpN * WMMA_N;
        if (aRow < M && bCol < N) {
            wmma::load_matrix_sync(a_frag, a + aRow * K + i, K);
            wmma::load_matrix_sync(b_frag, b + bCol * K + i, K);
            wmma::mma_sync(acc_frag, a_frag, b_frag, acc_frag);
        }
    }
    int cRow = warpM * WMMA_M, cCol = warpN * WMMA_N;
    if (cRow < M && cCol < N) wmma::store_matrix_sync(c + cRow * N + cCol, acc_frag, N, wmma::mem_row_major);
}
