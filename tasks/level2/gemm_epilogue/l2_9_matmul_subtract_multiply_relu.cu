// Reference for KernelBench level 2 problem 9_Matmul_Subtract_Multiply_ReLU.
// The GEMM (nn.Linear: x @ W^T + b) is a cuBLAS SGEMM library step of the plan
// with TF32 off, as PyTorch eager calls it; this file holds the epilogue:
// v = relu((v - 2.0) * 1.5).
// PyTorch eager runs one kernel per op; fp32 elementwise math, reductions
// accumulated in double in a fixed order.

#define THREADS 256

extern "C" __global__ void epilogue_ref(float* __restrict__ y, const float* __restrict__ b, unsigned long long total, int N)
{
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
             i < total; i += stride) {
                int j = (int)(i % (unsigned long long)N);
                float v = y[i] + b[j];
                v = fmaxf((v - 2.0f) * 1.5f, 0.0f);
                y[i] = v;
        }
}
