#include <climits>
#include <cfloat>

// one block per row; blockDim.x == 256
extern "C" __global__ void argmax_rows(const float* __restrict__ x, int* __restrict__ idx_out, int rows, int cols) {
    __shared__ float sval[256];
    __shared__ int sidx[256];
    int row = blockIdx.x;
    if (row >= rows) return;
    float best = -FLT_MAX;
    int besti = INT_MAX;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = x[(size_t)row * cols + c];
        if (v > best || (v == best && c < besti)) { best = v; besti = c; }
    }
    sval[threadIdx.x] = best;
    sidx[threadIdx.x] = besti;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            float o = sval[threadIdx.x + s];
            int oi = sidx[threadIdx.x + s];
            if (o > sval[threadIdx.x] || (o == sval[threadIdx.x] && oi < sidx[threadIdx.x])) {
                sval[threadIdx.x] = o;
                sidx[threadIdx.x] = oi;
            }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) idx_out[row] = sidx[0];
}
