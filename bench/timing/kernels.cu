// Kernels of known shape for the timing-fidelity benchmark (fidelity.py):
// memory-bound copies and compute-bound FMA chains from a few microseconds
// to several milliseconds, and a naive GEMM. Built into bench_timing.fatbin
// (tests/gpu/meson.build); the same fatbin is timed by kevald-gpu and by an
// independent harness (CuPy events, Triton do_bench).
extern "C" __global__ void bt_copy(const float *x, float *y, long long n)
{
        long long stride = (long long)gridDim.x * blockDim.x;
        for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
                y[i] = x[i];
}

extern "C" __global__ void bt_fma(const float *x, float *y, int iters)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        float a = x[i], b = 0.9999f, c = 1e-4f;
        for (int k = 0; k < iters; k++)
                a = fmaf(a, b, c);
        y[i] = a;
}

extern "C" __global__ void bt_gemm(const float *A, const float *B, float *C, int n)
{
        int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
        if (row < n && col < n) {
                float acc = 0.0f;
                for (int k = 0; k < n; k++)
                        acc = fmaf(A[(long long)row * n + k], B[(long long)k * n + col], acc);
                C[(long long)row * n + col] = acc;
        }
}
