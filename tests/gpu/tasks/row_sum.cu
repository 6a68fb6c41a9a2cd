// Reference for tests/gpu/tasks/row_sum.json: y[r] = sum_j x[r, j], in two
// launches with a scratch buffer of per-chunk partial sums (deterministic).
#define CHUNK 8192

extern "C" __global__ void rowsum_partial(const float *x, float *partial, int rows, int n, int chunks)
{
        __shared__ float s[256];
        int r = blockIdx.y, c = blockIdx.x;
        int lo = c * CHUNK, hi = min(n, lo + CHUNK);
        float acc = 0.0f;

        for (int j = lo + (int)threadIdx.x; j < hi; j += blockDim.x)
                acc += x[(long long)r * n + j];
        s[threadIdx.x] = acc;
        __syncthreads();
        for (int w = blockDim.x / 2; w > 0; w /= 2) {
                if ((int)threadIdx.x < w)
                        s[threadIdx.x] += s[threadIdx.x + w];
                __syncthreads();
        }
        if (threadIdx.x == 0)
                partial[r * chunks + c] = s[0];
}

extern "C" __global__ void rowsum_final(const float *partial, float *y, int rows, int chunks)
{
        int r = blockIdx.x * blockDim.x + threadIdx.x;
        float acc = 0.0f;

        if (r >= rows)
                return;
        for (int c = 0; c < chunks; c++)
                acc += partial[r * chunks + c];
        y[r] = acc;
}
