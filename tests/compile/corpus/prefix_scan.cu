#include <cuda_runtime.h>

// inclusive scan of one block (Hillis-Steele), n <= blockDim.x
extern "C" __global__ void block_scan(const int* in, int* out, int n) {
    extern __shared__ int temp[];
    int tid = threadIdx.x;
    temp[tid] = tid < n ? in[tid] : 0;
    __syncthreads();
    for (int offset = 1; offset < blockDim.x; offset <<= 1) {
        int v = tid >= offset ? temp[tid - offset] : 0;
        __syncthreads();
        temp[tid] += v;
        __syncthreads();
    }
    if (tid < n) out[tid] = temp[tid];
}
