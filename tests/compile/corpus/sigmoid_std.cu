#include <cuda_runtime.h>
#include <cmath>

__device__ __forceinline__ float sigmoid(float x) {
    return 1.0f / (1.0f + std::exp(-x));
}

extern "C" __global__ void sigmoid_kernel(const float* __restrict__ input, float* __restrict__ output, const int num_elements) {
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < num_elements) {
        output[idx] = sigmoid(input[idx]);
    }
}
