#include <iostream>
#include <vector>

__global__ void fill(float* x, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = v;
}
