// Correct, two launches and a scratch buffer: per-block partial sums with a
// warp-shuffle reduction, then one thread per row adds the partials in a
// fixed order (deterministic).
extern "C" __global__ void partial_sums(const float *x, float *part, int n, int blocks_per_row)
{
        __shared__ float warp_sums[32];
        int row = blockIdx.y, b = blockIdx.x;
        float acc = 0.0f;

        for (int j = b * blockDim.x + threadIdx.x; j < n; j += blocks_per_row * blockDim.x)
                acc += x[(long long)row * n + j];
        for (int o = 16; o > 0; o >>= 1)
                acc += __shfl_down_sync(0xffffffffu, acc, o);
        if ((threadIdx.x & 31) == 0)
                warp_sums[threadIdx.x / 32] = acc;
        __syncthreads();
        if (threadIdx.x == 0) {
                float s = 0.0f;
                for (int w = 0; w < (int)blockDim.x / 32; w++)
                        s += warp_sums[w];
                part[row * blocks_per_row + b] = s;
        }
}

extern "C" __global__ void final_sums(const float *part, float *y, int rows, int blocks_per_row)
{
        int r = blockIdx.x * blockDim.x + threadIdx.x;
        if (r < rows) {
                float s = 0.0f;
                for (int b = 0; b < blocks_per_row; b++)
                        s += part[r * blocks_per_row + b];
                y[r] = s;
        }
}
