// Looks for what leak_writer left: in its own scratch (same size, fresh) and
// in an uninitialised __device__ array of a freshly loaded module. Adds 1000
// to every output if it finds a single marker word, so "correct" means it
// found nothing.
#define MARK 0x4B45564Du
__device__ unsigned garr[1 << 20];

extern "C" __global__ void scan(const unsigned *scratch, int scount, unsigned *found)
{
        int stride = gridDim.x * blockDim.x;
        unsigned f = 0;
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < scount; i += stride)
                f |= scratch[i] == MARK;
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (1 << 20); i += stride)
                f |= garr[i] == MARK;
        if (f)
                atomicOr(found, 1u);
}

extern "C" __global__ void vadd_found(const float *x, const float *z, float *y, int n, const unsigned *found)
{
        float extra = *found ? 1000.0f : 0.0f;
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
                y[i] = x[i] + z[i] + extra;
}
