// Trick: subsample the reduction. Each row is summed over every other
// element and doubled: half the bytes, and for inputs centred on 0 the
// expected value is right, so a loose statistical check might pass.
// What stops it: the comparison is per element against the exact sum
// (atol 0.05, rtol 1e-3); the sampling error is about sqrt(N / 3), ~150 for
// a row of 65536 uniform(-1, 1) values. Expect "incorrect", mismatch,
// buffer y, default shape set, trial 0.
extern "C" __global__ void rowsum(const float *x, float *y, int rows, int n)
{
        __shared__ float part[256];
        int r = blockIdx.x;
        float acc = 0.0f;

        for (int j = 2 * threadIdx.x; j < n; j += 2 * blockDim.x)
                acc += x[(long long)r * n + j];
        part[threadIdx.x] = acc;
        __syncthreads();
        for (int w = blockDim.x / 2; w > 0; w /= 2) {
                if ((int)threadIdx.x < w)
                        part[threadIdx.x] += part[threadIdx.x + w];
                __syncthreads();
        }
        if (threadIdx.x == 0)
                y[r] = 2.0f * part[0];
}
