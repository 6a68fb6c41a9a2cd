// Fenced build: every thread of every block stores its float at
// (char *)y + 1 + 4 * i, all misaligned. In the plain build the fault of
// such a grid can surface later than the worker's grace after the launch;
// the fenced build stops the first thread before its store and every
// other one the same way, and the kernel ends normally. Expect
// CUDA_ERROR_MISALIGNED_ADDRESS in the correctness phase, never a timeout.
extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) *(float *)((char *)y + 1 + 4 * (long long)i) = x[i] + z[i]; /* error.line */
}
