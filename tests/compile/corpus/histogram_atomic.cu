#include <stdint.h>

#define NUM_BINS 256

extern "C" __global__ void histogram(const uint8_t* __restrict__ data, unsigned int* __restrict__ bins, size_t n) {
    __shared__ unsigned int local[NUM_BINS];
    for (int i = threadIdx.x; i < NUM_BINS; i += blockDim.x) local[i] = 0;
    __syncthreads();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)blockDim.x * gridDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (int i = threadIdx.x; i < NUM_BINS; i += blockDim.x) atomicAdd(&bins[i], local[i]);
}
