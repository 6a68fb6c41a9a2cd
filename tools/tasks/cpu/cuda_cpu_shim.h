/*
 * cuda_cpu_shim - just enough of CUDA C++ to run the task references on a CPU
 * (tools/tasks/cpu_check.py): each block runs as blockDim pthreads with a
 * barrier for __syncthreads(), blocks one after another; __shared__ becomes a
 * function-local static, shared by the block's threads. For checking
 * small shape sets on machines without a GPU; not a CUDA emulator.
 */
#pragma once
#include <math.h>
#include <string.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <functional>
#include <vector>

struct Dim3 { unsigned x, y, z; };
static thread_local Dim3 threadIdx, blockIdx;
static Dim3 blockDim, gridDim;
static pthread_barrier_t g_barrier;

#define __global__
#define __device__
#define __shared__ static
#define __restrict__ __restrict
#define __launch_bounds__(...)

static inline void __syncthreads(void) { pthread_barrier_wait(&g_barrier); }

/* Vector types the references load and store (16-byte aligned, as in CUDA). */
struct alignas(16) float4 { float x, y, z, w; };
static inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
struct alignas(16) int4 { int x, y, z, w; };

/*
 * Warp shuffles: a warp is 32 consecutive threads of the block (linear id);
 * each shuffle is an exchange through a slot per thread between two waits on
 * the warp's barrier, so every lane of the warp must call it (full mask, as
 * the references do). Values up to 8 bytes (float, int, double, long long).
 */
static pthread_barrier_t g_warp_barrier[32];
static unsigned long long g_shfl_slot[1024];

static inline unsigned shim_tid(void)
{
        return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

template <class T> static inline T shim_exchange(T v, int src_lane)
{
        static_assert(sizeof(T) <= 8, "shuffle of more than 8 bytes");
        unsigned t = shim_tid(), w = t / 32, nt = blockDim.x * blockDim.y * blockDim.z;
        unsigned s = w * 32 + (unsigned)src_lane;
        memcpy(&g_shfl_slot[t], &v, sizeof v);
        pthread_barrier_wait(&g_warp_barrier[w]);
        T r = v;
        if (s < nt)
                memcpy(&r, &g_shfl_slot[s], sizeof r);
        pthread_barrier_wait(&g_warp_barrier[w]);
        return r;
}

template <class T> static inline T __shfl_xor_sync(unsigned, T v, int m, int width = 32)
{
        int lane = (int)(shim_tid() % 32);
        return shim_exchange(v, (lane ^ m) < (lane / width + 1) * width ? lane ^ m : lane);
}

template <class T> static inline T __shfl_up_sync(unsigned, T v, unsigned d, int width = 32)
{
        int lane = (int)(shim_tid() % 32);
        return shim_exchange(v, lane % width >= (int)d ? lane - (int)d : lane);
}

template <class T> static inline T __shfl_down_sync(unsigned, T v, unsigned d, int width = 32)
{
        int lane = (int)(shim_tid() % 32);
        return shim_exchange(v, lane % width + (int)d < width ? lane + (int)d : lane);
}

template <class T> static inline T __shfl_sync(unsigned, T v, int src, int width = 32)
{
        int lane = (int)(shim_tid() % 32);
        return shim_exchange(v, lane / width * width + src % width);
}
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }

struct AnyPtr {
        void *p;
        template <class T> operator T *() const { return (T *)p; }
};

struct ThreadArg { Dim3 t, b; const std::function<void()> *fn; };

static void *shim_thread(void *a)
{
        ThreadArg *ta = (ThreadArg *)a;
        threadIdx = ta->t;
        blockIdx = ta->b;
        (*ta->fn)();
        return NULL;
}

static void shim_launch(Dim3 grid, Dim3 block, const std::function<void()> &fn)
{
        gridDim = grid;
        blockDim = block;
#ifdef SHIM_SEQUENTIAL
        /* The source never calls __syncthreads(): run the threads one by one. */
        for (unsigned bz = 0; bz < grid.z; bz++)
                for (unsigned by = 0; by < grid.y; by++)
                        for (unsigned bx = 0; bx < grid.x; bx++)
                                for (unsigned tz = 0; tz < block.z; tz++)
                                        for (unsigned ty = 0; ty < block.y; ty++)
                                                for (unsigned tx = 0; tx < block.x; tx++) {
                                                        threadIdx = {tx, ty, tz};
                                                        blockIdx = {bx, by, bz};
                                                        fn();
                                                }
        return;
#endif
        unsigned nt = block.x * block.y * block.z;
        std::vector<pthread_t> th(nt);
        std::vector<ThreadArg> args(nt);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 256 * 1024);
        for (unsigned bz = 0; bz < grid.z; bz++)
                for (unsigned by = 0; by < grid.y; by++)
                        for (unsigned bx = 0; bx < grid.x; bx++) {
                                pthread_barrier_init(&g_barrier, NULL, nt);
                                for (unsigned w = 0; w * 32 < nt && w < 32; w++)
                                        pthread_barrier_init(&g_warp_barrier[w], NULL,
                                                             nt - w * 32 < 32 ? nt - w * 32 : 32);
                                unsigned i = 0;
                                for (unsigned tz = 0; tz < block.z; tz++)
                                        for (unsigned ty = 0; ty < block.y; ty++)
                                                for (unsigned tx = 0; tx < block.x; tx++, i++) {
                                                        args[i].t = {tx, ty, tz};
                                                        args[i].b = {bx, by, bz};
                                                        args[i].fn = &fn;
                                                        if (pthread_create(&th[i], &attr, shim_thread, &args[i])) {
                                                                perror("pthread_create");
                                                                exit(2);
                                                        }
                                                }
                                for (unsigned k = 0; k < nt; k++)
                                        pthread_join(th[k], NULL);
                                pthread_barrier_destroy(&g_barrier);
                                for (unsigned w = 0; w * 32 < nt && w < 32; w++)
                                        pthread_barrier_destroy(&g_warp_barrier[w]);
                        }
        pthread_attr_destroy(&attr);
}

/* Row-major C[m x n] = op(A) op(B), double accumulation, packed batches. */
static void shim_gemm(const float *A, const float *B, float *C, long m, long n, long k, bool ta,
                      bool tb, long batch, double alpha, double beta)
{
        for (long bt = 0; bt < batch; bt++) {
                const float *a = A + bt * m * k, *b = B + bt * k * n;
                float *c = C + bt * m * n;
                for (long i = 0; i < m; i++)
                        for (long j = 0; j < n; j++) {
                                double s = 0;
                                for (long q = 0; q < k; q++) {
                                        double av = ta ? a[q * m + i] : a[i * k + q];
                                        double bv = tb ? b[j * k + q] : b[q * n + j];
                                        s += av * bv;
                                }
                                c[i * n + j] = (float)(alpha * s + (beta != 0 ? beta * c[i * n + j] : 0));
                        }
        }
}
