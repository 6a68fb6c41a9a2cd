#include <cuda_runtime.h>
#include <stdio.h>

#define BLOCK_SIZE 256

extern "C" __global__ void reduce_sum(const float* __restrict__ input, float* __restrict__ output, int n) {
    __shared__ float sdata[BLOCK_SIZE];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
    float sum = 0.0f;
    if (i < n) sum += input[i];
    if (i + blockDim.x < n) sum += input[i + blockDim.x];
    sdata[tid] = sum;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid < 32) {
        volatile float* v = sdata;
        v[tid] += v[tid + 32]; v[tid] += v[tid + 16]; v[tid] += v[tid + 8];
        v[tid] += v[tid + 4]; v[tid] += v[tid + 2]; v[tid] += v[tid + 1];
    }
    if (tid == 0) atomicAdd(output, sdata[0]);
}
