#include <type_traits>

template <typename T, int TILE>
__device__ __forceinline__ void bmm_body(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N, int K) {
    static_assert(std::is_floating_point<T>::value, "floating point only");
    __shared__ T sa[TILE][TILE];
    __shared__ T sb[TILE][TILE];
    const int batch = blockIdx.z;
    a += (size_t)batch * M * K;
    b += (size_t)batch * K * N;
    c += (size_t)batch * M * N;
    int r = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    T acc = T(0);
    for (int t = 0; t < K; t += TILE) {
        sa[threadIdx.y][threadIdx.x] = (r < M && t + threadIdx.x < K) ? a[r * K + t + threadIdx.x] : T(0);
        sb[threadIdx.y][threadIdx.x] = (t + threadIdx.y < K && col < N) ? b[(t + threadIdx.y) * N + col] : T(0);
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += sa[threadIdx.y][k] * sb[k][threadIdx.x];
        __syncthreads();
    }
    if (r < M && col < N) c[r * N + col] = acc;
}

extern "C" __global__ void bmm_f32(const float* a, const float* b, float* c, int M, int N, int K) {
    bmm_body<float, 16>(a, b, c, M, N, K);
}

extern "C" __global__ void bmm_f64(const double* a, const double* b, double* c, int M, int N, int K) {
    bmm_body<double, 16>(a, b, c, M, N, K);
}
