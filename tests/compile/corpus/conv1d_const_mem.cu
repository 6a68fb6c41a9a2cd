#define MAX_KERNEL 64

__constant__ float c_filter[MAX_KERNEL];

extern "C" __global__ void conv1d(const float* __restrict__ x, float* __restrict__ y, int n, int ksize) {
    extern __shared__ float tile[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int halo = ksize / 2;
    int base = blockIdx.x * blockDim.x - halo;
    for (int j = threadIdx.x; j < blockDim.x + 2 * halo; j += blockDim.x) {
        int g = base + j;
        tile[j] = (g >= 0 && g < n) ? x[g] : 0.0f;
    }
    __syncthreads();
    if (i < n) {
        float acc = 0.0f;
        for (int k = 0; k < ksize; ++k) acc += tile[threadIdx.x + k] * c_filter[k];
        y[i] = acc;
    }
}
