// Reference for KernelBench level 2 problem 18_Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp.
// The GEMM (nn.Linear: x @ W^T + b) is a cuBLAS SGEMM library step of the plan
// with TF32 off, as PyTorch eager calls it; this file holds the epilogue:
// y[i, 0] = sum over j of t[i, j] (the model's max, mean and two logsumexp that follow run over the kept size-1 dimension and are identities).
// PyTorch eager runs one kernel per op; fp32 elementwise math, reductions
// accumulated in double in a fixed order.

#define THREADS 256

__device__ static inline double block_sum(double v, double* sh)
{
        sh[threadIdx.x] = v;
        __syncthreads();
        for (int s = THREADS / 2; s > 0; s >>= 1) {
                if (threadIdx.x < s)
                        sh[threadIdx.x] += sh[threadIdx.x + s];
                __syncthreads();
        }
        double r = sh[0];
        __syncthreads();
        return r;
}

extern "C" __global__ void __launch_bounds__(THREADS) rowsum_ref(const float* __restrict__ t,
        const float* __restrict__ b, float* __restrict__ y, int N)
{
        __shared__ double shd[THREADS];
        const float* row = t + (unsigned long long)blockIdx.x * N;
        double s = 0.0;
        for (int j = threadIdx.x; j < N; j += THREADS) {
                float v = row[j] + b[j];
                
                s += (double)v;
        }
        s = block_sum(s, shd);
        if (threadIdx.x == 0)
                y[blockIdx.x] = (float)s;
}
