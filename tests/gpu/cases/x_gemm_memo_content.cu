// Trick: memoisation keyed on input content. The same naive FP32 GEMM as
// gemm_f32_naive (one thread per output, FMA in k order), plus a 16-slot
// cache of C in __device__ memory keyed on the A and B pointers, the shape
// and the bits of four input values (first and last of A and of B). On a
// hit every block copies the cached C instead of computing; on a miss it
// computes, stores C in the slot, and the last block files the key.
// A harness that times repeated calls on the same tensors (or on a few
// rotating copies of them) would see a copy's speed.
// What stops it: every timed run gets freshly generated inputs from its own
// seed, so the key never matches in timing (and in the correctness trials
// only the second run of a trial repeats the values, on other buffers).
// Expect "correct" and no better speedup than the honest twin x_gemm_twin
// (score_at_most 1.10): a miss costs the lookup and the extra store.
#define SLOTS 16
#define CAP (512 * 384) /* the largest C this cache holds: gemm_f32's default shape set */

typedef struct Key {
        unsigned long long a, b;
        int m, n, k;
        unsigned a0, a1, b0, b1;
        unsigned valid;
} Key;

__device__ Key keys[SLOTS];
__device__ float cache[SLOTS][CAP];
__device__ unsigned done;

static __device__ bool same(const volatile Key *s, const Key *k)
{
        return s->valid && s->a == k->a && s->b == k->b && s->m == k->m && s->n == k->n && s->k == k->k &&
               s->a0 == k->a0 && s->a1 == k->a1 && s->b0 == k->b0 && s->b1 == k->b1;
}

extern "C" __global__ void gemm(const float *A, const float *B, float *C, int M, int N, int K)
{
        __shared__ Key key;
        __shared__ int slot, hit;
        int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
        int first = threadIdx.x == 0 && threadIdx.y == 0;
        bool cacheable = (long long)M * N <= CAP && M > 0 && N > 0 && K > 0;

        if (first) {
                key.a = (unsigned long long)A;
                key.b = (unsigned long long)B;
                key.m = M;
                key.n = N;
                key.k = K;
                key.a0 = cacheable ? __float_as_uint(A[0]) : 0;
                key.a1 = cacheable ? __float_as_uint(A[(long long)M * K - 1]) : 0;
                key.b0 = cacheable ? __float_as_uint(B[0]) : 0;
                key.b1 = cacheable ? __float_as_uint(B[(long long)K * N - 1]) : 0;
                key.valid = 1;
                slot = (int)(((key.a >> 8) ^ (key.b >> 12)) % SLOTS);
                hit = cacheable && same(&keys[slot], &key);
        }
        __syncthreads();
        if (row < M && col < N) {
                long long idx = (long long)row * N + col;
                if (hit) {
                        C[idx] = cache[slot][idx];
                } else {
                        float acc = 0.0f;
                        for (int k = 0; k < K; k++)
                                acc = fmaf(A[(long long)row * K + k], B[(long long)k * N + col], acc);
                        C[idx] = acc;
                        if (cacheable)
                                cache[slot][idx] = acc;
                }
        }
        __syncthreads();
        if (first) {
                __threadfence();
                if (atomicAdd(&done, 1u) == gridDim.x * gridDim.y - 1) { /* the last block files the key */
                        done = 0;
                        if (cacheable && !hit) {
                                keys[slot].valid = 0;
                                __threadfence();
                                keys[slot].a = key.a;
                                keys[slot].b = key.b;
                                keys[slot].m = key.m;
                                keys[slot].n = key.n;
                                keys[slot].k = key.k;
                                keys[slot].a0 = key.a0;
                                keys[slot].a1 = key.a1;
                                keys[slot].b0 = key.b0;
                                keys[slot].b1 = key.b1;
                                __threadfence();
                                keys[slot].valid = 1;
                        }
                        __threadfence();
                }
        }
}
