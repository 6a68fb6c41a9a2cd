#include <math.h>
#include <float.h>

extern "C" __global__ void log_softmax_kernel(const float* __restrict__ input, float* __restrict__ output, int batch, int dim)
{
    extern __shared__ float buf[];
    int b = blockIdx.x;
    if (b >= batch) return;
    const float* in = input + b * dim;
    float* out = output + b * dim;
    float local_max = -FLT_MAX;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) local_max = fmaxf(local_max, in[i]);
    buf[threadIdx.x] = local_max;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] = fmaxf(buf[threadIdx.x], buf[threadIdx.x + s]);
        __syncthreads();
    }
    float mx = buf[0];
    __syncthreads();
    float local_sum = 0.0f;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) local_sum += __expf(in[i] - mx);
    buf[threadIdx.x] = local_sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    float lse = logf(buf[0]) + mx;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) out[i] = in[i] - lse;
}
