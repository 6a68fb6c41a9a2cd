extern "C" __global__ void index_add(float* __restrict__ dst, const float* __restrict__ src, const long long* __restrict__ index,
                                     int n, int dim) {
    int i = blockIdx.x;
    if (i >= n) return;
    long long row = index[i];
    for (int d = threadIdx.x; d < dim; d += blockDim.x) atomicAdd(&dst[row * dim + d], src[(long long)i * dim + d]);
}
