#include <cuda_fp16.h>

extern "C" __global__ void haxpy(int n, __half a, const __half* x, __half* y) {
    int start = threadIdx.x + blockDim.x * blockIdx.x;
    int stride = blockDim.x * gridDim.x;
    int n2 = n / 2;
    __half2* x2 = (__half2*)x;
    __half2* y2 = (__half2*)y;
    for (int i = start; i < n2; i += stride) y2[i] = __hfma2(__halves2half2(a, a), x2[i], y2[i]);
    if (start == 0 && (n % 2)) y[n - 1] = __hfma(a, x[n - 1], y[n - 1]);
}
