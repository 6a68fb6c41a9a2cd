// Reference for KernelBench level 2 problem 64_Gemm_LogSumExp_LeakyReLU_LeakyReLU_GELU_GELU.
// The GEMM (nn.Linear: x @ W^T + b) is a cuBLAS SGEMM library step of the plan
// with TF32 off, as PyTorch eager calls it; this file holds the epilogue:
// l = log(sum over j of exp(t[i, j])) (logsumexp over the row, keepdim), then leaky_relu(negative_slope=0.01) twice and gelu(v) = 0.5*v*(1 + erf(v/sqrt(2))) (exact, PyTorch's default) twice: y[i, 0].
// PyTorch eager runs one kernel per op; fp32 elementwise math, reductions
// accumulated in double in a fixed order.

#define THREADS 256

__device__ static inline float gelu_f(float v) { return 0.5f * v * (1.0f + erff(v * 0.7071067811865476f)); }

__device__ static inline float leaky_f(float v, float s) { return v > 0.0f ? v : v * s; }

__device__ static inline float block_max(float v, float* sh)
{
        sh[threadIdx.x] = v;
        __syncthreads();
        for (int s = THREADS / 2; s > 0; s >>= 1) {
                if (threadIdx.x < s)
                        sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + s]);
                __syncthreads();
        }
        float r = sh[0];
        __syncthreads();
        return r;
}

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

extern "C" __global__ void __launch_bounds__(THREADS) logsumexp_ref(const float* __restrict__ t,
        const float* __restrict__ b, float* __restrict__ y, int N)
{
        __shared__ float shf[THREADS];
        __shared__ double shd[THREADS];
        const float* row = t + (unsigned long long)blockIdx.x * N;
        float m = -__int_as_float(0x7f800000);
        for (int j = threadIdx.x; j < N; j += THREADS) {
                float v = row[j] + b[j];
                
                m = fmaxf(m, v);
        }
        m = block_max(m, shf);
        double s = 0.0;
        for (int j = threadIdx.x; j < N; j += THREADS) {
                float v = row[j] + b[j];
                
                s += exp((double)v - (double)m);
        }
        s = block_sum(s, shd);
        if (threadIdx.x == 0) {
                float v = (float)((double)m + log(s));
                v = leaky_f(v, 0.01f);
                v = leaky_f(v, 0.01f);
                v = gelu_f(v);
                v = gelu_f(v);
                y[blockIdx.x] = v;
        }
}
