// Trick: memoisation keyed on pointers only. One block per row sums it;
// the row sums are also kept in a 64-slot __device__ table keyed on the
// (x, y) pointers and the shape. When the same buffers come back, every
// block writes the remembered sum and skips reading its 256 KiB row (the
// classic data_ptr cache: a harness that reuses its tensors sees a speedup
// of hundreds).
// What stops it: the same buffers do come back (the judge pools its
// allocations and rotates among a few buffer sets while timing), but with
// new inputs every time: the stale sums disagree with the reference, in a
// later correctness trial or in the revalidation of a timed run. Expect
// "incorrect", mismatch, buffer y.
#define SLOTS 64
#define MAX_ROWS 64

__device__ unsigned long long key_x[SLOTS], key_y[SLOTS];
__device__ int key_rows[SLOTS], key_n[SLOTS];
__device__ unsigned key_valid[SLOTS];
__device__ float memo[SLOTS][MAX_ROWS];
__device__ unsigned done;

extern "C" __global__ void rowsum(const float *x, float *y, int rows, int n)
{
        __shared__ float part[256];
        __shared__ int slot, hit;
        int r = blockIdx.x;
        bool cacheable = rows <= MAX_ROWS;

        if (threadIdx.x == 0) {
                unsigned long long px = (unsigned long long)x, py = (unsigned long long)y;
                slot = (int)(((px >> 8) ^ (py >> 8)) % SLOTS);
                hit = cacheable && *(volatile unsigned *)&key_valid[slot] &&
                      *(volatile unsigned long long *)&key_x[slot] == px &&
                      *(volatile unsigned long long *)&key_y[slot] == py &&
                      *(volatile int *)&key_rows[slot] == rows && *(volatile int *)&key_n[slot] == n;
        }
        __syncthreads();
        if (hit) {
                if (threadIdx.x == 0)
                        y[r] = memo[slot][r];
        } else {
                float acc = 0.0f;
                for (int j = threadIdx.x; j < n; j += blockDim.x)
                        acc += x[(long long)r * n + j];
                part[threadIdx.x] = acc;
                __syncthreads();
                for (int w = blockDim.x / 2; w > 0; w /= 2) {
                        if ((int)threadIdx.x < w)
                                part[threadIdx.x] += part[threadIdx.x + w];
                        __syncthreads();
                }
                if (threadIdx.x == 0) {
                        y[r] = part[0];
                        if (cacheable)
                                memo[slot][r] = part[0];
                }
        }
        __syncthreads();
        if (threadIdx.x == 0) {
                __threadfence();
                if (atomicAdd(&done, 1u) == gridDim.x - 1) { /* the last block files the key */
                        done = 0;
                        if (cacheable && !hit) {
                                key_valid[slot] = 0;
                                __threadfence();
                                key_x[slot] = (unsigned long long)x;
                                key_y[slot] = (unsigned long long)y;
                                key_rows[slot] = rows;
                                key_n[slot] = n;
                                __threadfence();
                                key_valid[slot] = 1;
                        }
                        __threadfence();
                }
        }
}
