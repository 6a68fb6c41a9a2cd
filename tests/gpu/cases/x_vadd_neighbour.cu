// Trick: read a neighbouring allocation for a ready answer. The kernel
// remembers the buffers of its previous launch (__device__ pointers) and,
// when that launch's inputs hold the same values as this one's (four
// samples) and its output is not NaN, copies that output instead of
// computing (a copy moves 8 of the 12 bytes per element). In the
// correctness trials this pays off on the second run of every trial,
// which repeats the first one's inputs while the first set is still
// allocated, and the copy is bit-identical.
// What stops it: every timed run gets freshly generated inputs, so in the
// timing phase no other live allocation ever holds this run's answer (the
// reference's outputs are wiped before the candidate runs). Expect
// "correct" and no better speedup than x_vadd_twin (score_at_most 1.10).
// Safety: the remembered pointers are used only after a tag that is
// initialised in the module image (never stale across jobs), and only for
// buffers of the same length, which the judge keeps mapped (live or pooled).
#define TAG 0x6e65696768626f72ull

__device__ unsigned long long tag = 1;
__device__ const float *prev_x, *prev_z, *prev_y;
__device__ int prev_n;
__device__ unsigned done;

static __device__ bool distinct(const float *p, const float *x, const float *z, const float *y)
{
        return p != x && p != z && p != y;
}

extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        __shared__ const float *src;
        int i = blockIdx.x * blockDim.x + threadIdx.x;

        if (threadIdx.x == 0) {
                const float *found = 0;
                if (*(volatile unsigned long long *)&tag == TAG && *(volatile int *)&prev_n == n && n > 0) {
                        const float *px = *(const float *volatile *)&prev_x;
                        const float *pz = *(const float *volatile *)&prev_z;
                        const float *py = *(const float *volatile *)&prev_y;
                        if (distinct(px, x, z, y) && distinct(pz, x, z, y) && distinct(py, x, z, y) &&
                            px[0] == x[0] && px[n - 1] == x[n - 1] && pz[0] == z[0] && pz[n - 1] == z[n - 1] &&
                            py[0] == py[0] && py[n - 1] == py[n - 1])
                                found = py;
                }
                src = found;
        }
        __syncthreads();
        if (i < n)
                y[i] = src ? src[i] : x[i] + z[i];
        __syncthreads();
        if (threadIdx.x == 0) {
                __threadfence();
                if (atomicAdd(&done, 1u) == gridDim.x - 1) { /* the last block: remember this launch */
                        done = 0;
                        prev_x = x;
                        prev_z = z;
                        prev_y = y;
                        prev_n = n;
                        __threadfence();
                        tag = TAG;
                        __threadfence();
                }
        }
}
