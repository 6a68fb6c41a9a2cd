#include <cuda_runtime.h>

__global__ void scale(float* x, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}

void launch_scale(float* x, float s, int n, cudaStream_t stream) {
    scale << <(n + 255) / 256, 256, 0, stream >> > (x, s, n);
}
