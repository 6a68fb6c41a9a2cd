#include <cuda_runtime.h>

extern "C" __global__ void __launch_bounds__(256, 2) dot_double(const double* __restrict__ a, const double* __restrict__ b,
                                                                 double* __restrict__ result, int n) {
    __shared__ double cache[256];
    double temp = 0.0;
    for (int i = threadIdx.x + blockIdx.x * blockDim.x; i < n; i += blockDim.x * gridDim.x) temp += a[i] * b[i];
    cache[threadIdx.x] = temp;
    __syncthreads();
    for (int i = blockDim.x / 2; i != 0; i /= 2) {
        if (threadIdx.x < i) cache[threadIdx.x] += cache[threadIdx.x + i];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(result, cache[0]);
}
