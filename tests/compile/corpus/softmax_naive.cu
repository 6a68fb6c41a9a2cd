#include <math.h>

extern "C" __global__ void softmax_naive(const float* input, float* output, int rows, int cols) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        const float* x = input + row * cols;
        float* y = output + row * cols;
        float maxval = -INFINITY;
        for (int j = 0; j < cols; j++) maxval = fmaxf(maxval, x[j]);
        float sum = 0.0f;
        for (int j = 0; j < cols; j++) { y[j] = expf(x[j] - maxval); sum += y[j]; }
        for (int j = 0; j < cols; j++) y[j] /= sum;
    }
}
