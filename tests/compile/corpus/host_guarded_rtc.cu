// Device code with its nvcc test driver kept out of NVRTC's way.
#include <cuda_runtime.h>
#include <cmath>

extern "C" __global__ void square(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * x[i];
}

#ifndef __CUDACC_RTC__
int main() {
    float* d;
    cudaMalloc(&d, 1024 * sizeof(float));
    square<<<4, 256>>>(d, 1024);
    cudaDeviceSynchronize();
    cudaFree(d);
    return 0;
}
#endif
