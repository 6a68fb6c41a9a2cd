#include <cuda.h>
#include <cuda_runtime.h>
#include <device_launch_parameters.h>

// ReLU with a grid-stride loop
extern "C" __global__ void relu_kernel(const float *input, float *output, int size)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < size; i += blockDim.x * gridDim.x) {
        output[i] = fmaxf(input[i], 0.0f);
    }
}
