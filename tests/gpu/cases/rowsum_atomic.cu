// A data race by design: every element is added to its row's sum with a
// float atomicAdd, so the order of additions (and the rounding) changes from
// run to run. Within tolerance, but not bit-reproducible: nondeterministic.
extern "C" __global__ void zero(float *y, int rows)
{
        int r = blockIdx.x * blockDim.x + threadIdx.x;
        if (r < rows)
                y[r] = 0.0f;
}

extern "C" __global__ void atomic_sums(const float *x, float *y, int rows, int n)
{
        long long total = (long long)rows * n;
        for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
             i += (long long)gridDim.x * blockDim.x)
                atomicAdd(&y[i / n], x[i]);
}
