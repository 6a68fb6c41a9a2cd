// Correct, and leaves a marker everywhere it can: its scratch buffer and a
// __device__ array. The next job (leak_reader) must find none of it.
#define MARK 0x4B45564Du
__device__ unsigned garr[1 << 20];

extern "C" __global__ void vadd_mark(const float *x, const float *z, float *y, int n, unsigned *scratch, int scount)
{
        int stride = gridDim.x * blockDim.x;
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
                y[i] = x[i] + z[i];
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < scount; i += stride)
                scratch[i] = MARK;
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (1 << 20); i += stride)
                garr[i] = MARK;
}
