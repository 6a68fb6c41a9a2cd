// A minimal correct candidate: 16 x 16 output tiles, A and B tiles staged in
// shared memory, fp32 accumulation (no TF32), bounds checked for any M, N, K.
#define T 16
extern "C" __global__ void sgemm_tiled(const float* A, const float* B, float* C, int M, int N, int K)
{
        __shared__ float As[T][T], Bs[T][T];
        int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
        float acc = 0.0f;
        for (int k0 = 0; k0 < K; k0 += T) {
                As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K)
                        ? A[(long long)row * K + k0 + threadIdx.x] : 0.0f;
                Bs[threadIdx.y][threadIdx.x] = (col < N && k0 + threadIdx.y < K)
                        ? B[(long long)(k0 + threadIdx.y) * N + col] : 0.0f;
                __syncthreads();
                for (int k = 0; k < T; k++)
                        acc = fmaf(As[threadIdx.y][k], Bs[k][threadIdx.x], acc);
                __syncthreads();
        }
        if (row < M && col < N)
                C[(long long)row * N + col] = acc;
}
