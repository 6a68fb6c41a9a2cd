// Reference for KernelBench level 1 problem 5_Matrix_scalar_multiplication: C = A * s, elementwise,
// s a scalar held in a one-element device buffer. 64-bit indices; when A and C
// are 16-byte aligned each thread loads two float4s before storing either
// (blocks of 256 threads cover 2048 elements, a grid-stride loop the rest when
// the grid is capped), then a scalar tail; otherwise a scalar grid-stride loop.
extern "C" __global__ void scale_ref(const float* __restrict__ A, const float* __restrict__ s,
        float* __restrict__ C, unsigned long long n)
{
        float v = s[0];
        unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x * 2 + threadIdx.x;
        if ((((unsigned long long)A | (unsigned long long)C) & 15) == 0) {
                const float4* a4 = (const float4*)A;
                float4* c4 = (float4*)C;
                unsigned long long n4 = n / 4;
                unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x * 2;
                for (unsigned long long i = t; i < n4; i += stride) {
                        unsigned long long j = i + blockDim.x;
                        float4 a = a4[i];
                        if (j < n4) {
                                float4 b = a4[j];
                                c4[i] = make_float4(a.x * v, a.y * v, a.z * v, a.w * v);
                                c4[j] = make_float4(b.x * v, b.y * v, b.z * v, b.w * v);
                        } else {
                                c4[i] = make_float4(a.x * v, a.y * v, a.z * v, a.w * v);
                        }
                }
                unsigned long long k = n4 * 4 + (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
                if (k < n)
                        C[k] = A[k] * v;
        } else {
                unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
                for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
                     i < n; i += stride)
                        C[i] = A[i] * v;
        }
}
