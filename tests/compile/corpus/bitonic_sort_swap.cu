#include <algorithm>

// sorts one block of 2^k floats in shared memory, ascending
extern "C" __global__ void bitonic_sort_block(float* data, int n) {
    extern __shared__ float s[];
    int tid = threadIdx.x;
    s[tid] = tid < n ? data[blockIdx.x * blockDim.x + tid] : INFINITY;
    __syncthreads();
    for (int k = 2; k <= blockDim.x; k <<= 1) {
        for (int j = k >> 1; j > 0; j >>= 1) {
            int ixj = tid ^ j;
            if (ixj > tid) {
                bool up = (tid & k) == 0;
                if ((s[tid] > s[ixj]) == up) std::swap(s[tid], s[ixj]);
            }
            __syncthreads();
        }
    }
    if (tid < n) data[blockIdx.x * blockDim.x + tid] = s[tid];
}
