// Fenced build: thread 7 of block 2 executes __trap(). The fence turns it
// into a recorded exit of that thread: CUDA_ERROR_LAUNCH_FAILED, access
// "trap", thread (7,0,0) of block (2,0,0), and the context survives.
extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
                y[i] = x[i] + z[i];
        if (blockIdx.x == 2 && threadIdx.x == 7) __trap(); /* error.line */
}
