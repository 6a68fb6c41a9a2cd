// Trick: a race that shows only sometimes. Sixteen blocks per row each sum
// a chunk; blocks 0..14 store their partial in scratch, and block 15 adds
// its own partial to whatever the others have stored when it gets there,
// without a flag, a fence or a second launch (saving the two-launch
// reduction of rowsum_two_pass). When every other block of the row happens
// to finish first the answer is right; otherwise a partial is missing
// (scratch starts as zeros) and the row is off by ~40.
// What stops it: with 64 rows per launch, 12 launches in the correctness
// trials and every timed run checked, some row comes out wrong; two runs on
// the same inputs also disagree bitwise. Expect "incorrect", mismatch or
// nondeterministic.
#define CHUNKS 16

extern "C" __global__ void rowsum_racy(const float *x, float *part, float *y, int rows, int n)
{
        __shared__ float s[256];
        int r = blockIdx.y, c = blockIdx.x;
        int len = (n + CHUNKS - 1) / CHUNKS, lo = c * len, hi = min(n, lo + len);
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
        if (threadIdx.x != 0)
                return;
        if (c != CHUNKS - 1) {
                part[r * CHUNKS + c] = s[0];
        } else {
                float total = s[0];
                for (int k = 0; k < CHUNKS - 1; k++)
                        total += *(volatile float *)&part[r * CHUNKS + k];
                y[r] = total;
        }
}
