// Reference for KernelBench level 1 problem 5_Matrix_scalar_multiplication: C = A * s, elementwise,
// s a scalar held in a one-element device buffer. Grid-stride, 64-bit indices.
extern "C" __global__ void scale_ref(const float* __restrict__ A, const float* __restrict__ s,
        float* __restrict__ C, unsigned long long n)
{
        float v = s[0];
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
             i += stride)
                C[i] = A[i] * v;
}
