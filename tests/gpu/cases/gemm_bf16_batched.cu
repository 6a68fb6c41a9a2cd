// Correct batched BF16 GEMM with A transposed (A[g] is [K, M]), FP32
// accumulation; bf16 handled as bits, so no header is needed.
static __device__ float bf2f(unsigned short b)
{
        return __uint_as_float((unsigned)b << 16);
}

static __device__ unsigned short f2bf(float f)
{
        unsigned x = __float_as_uint(f);
        if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))
                return (unsigned short)((x >> 16) | 0x40u);
        x += 0x7fffu + ((x >> 16) & 1u);
        return (unsigned short)(x >> 16);
}

extern "C" __global__ void gemm_ta(const unsigned short *A, const unsigned short *B, unsigned short *C, int M, int N,
                                   int K)
{
        int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y, g = blockIdx.z;
        if (row < M && col < N) {
                const unsigned short *a = A + (long long)g * K * M, *b = B + (long long)g * K * N;
                float acc = 0.0f;
                for (int k = 0; k < K; k++)
                        acc += bf2f(a[(long long)k * M + row]) * bf2f(b[(long long)k * N + col]);
                C[(long long)g * M * N + (long long)row * N + col] = f2bf(acc);
        }
}
