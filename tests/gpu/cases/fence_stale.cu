// Fenced build: thread 0 reads 64 MiB past the start of its input x,
// outside every buffer of this job: memory that may be mapped (another
// job's old buffer, the pool's slab) or not, so the plain build may read
// stale data or fault. The fence stops it either way: a load,
// CUDA_ERROR_ILLEGAL_ADDRESS; the buffer named is the nearest one within
// 64 MiB of its range, or none, depending on where the allocator put them.
extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
                y[i] = x[i] + z[i];
        if (i == 0) y[i] += 0.0f * *(volatile const float *)(x + (16 << 20)); /* error.line */
}
