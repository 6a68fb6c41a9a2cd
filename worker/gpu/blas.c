/*
 * blas - see blas.h. Row-major to column-major: cuBLAS computes column-major
 * C' = op(B') op(A') with n and m swapped, where X' is the column-major view
 * of a row-major X (its transpose). So C (row-major m x n) = op(A) op(B) is
 * computed as C^T = op(B)^T op(A)^T with leading dimensions taken from the
 * row-major storage: lda = trans_a ? m : k, ldb = trans_b ? k : n, ldc = n.
 */
#include "worker/gpu/blas.h"

#include <cublas_v2.h>
#include <cuda.h>
#include <errno.h>
#include <stdio.h>

#include "worker/gpu/devrng.h"

#define WORKSPACE_BYTES (32u << 20)

static cublasHandle_t handle;
static GpuPtr workspace;
static char version[32];

static int check(cublasStatus_t s, const char *where)
{
        if (s == CUBLAS_STATUS_SUCCESS)
                return 0;
        /* An execution failure after a kernel fault means the context is lost;
         * gpu.c decides stickiness for CUresults, cuBLAS statuses are treated as
         * sticky only when they say the GPU failed. */
        gpu_error_set((int)s, cublasGetStatusName(s), cublasGetStatusString(s), where,
                      s == CUBLAS_STATUS_EXECUTION_FAILED || s == CUBLAS_STATUS_INTERNAL_ERROR);
        return GPU_E_CUDA;
}

/**
 * blas_init() - create the handle on @stream (a CUstream from gpu.c),
 * default math (no TF32: see blas.h), pointer mode host, and our own
 * workspace.
 * Return: 0, GPU_E_CUDA.
 */
int blas_init(void *stream)
{
        int v = 0, r;

        if ((r = check(cublasCreate(&handle), "cublasCreate")))
                return r;
        if ((r = check(cublasSetStream(handle, (cudaStream_t)stream), "cublasSetStream")) ||
            (r = check(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH), "cublasSetMathMode")) ||
            (r = check(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST), "cublasSetPointerMode")))
                return r;
        if ((r = gpu_alloc(WORKSPACE_BYTES, &workspace)))
                return r;
        if ((r = check(cublasSetWorkspace(handle, (void *)(uintptr_t)workspace, WORKSPACE_BYTES),
                       "cublasSetWorkspace")))
                return r;
        if (cublasGetVersion(handle, &v) == CUBLAS_STATUS_SUCCESS)
                snprintf(version, sizeof(version), "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
        return 0;
}

/**
 * blas_wipe() - zero the cuBLAS workspace (asynchronous): after a reference
 * GEMM it may hold split-K partial sums of the reference's answer, which no
 * candidate may find in memory. Return: 0, GPU_E_CUDA.
 */
int blas_wipe(void)
{
        return workspace ? gpu_memset8(workspace, 0, WORKSPACE_BYTES) : 0;
}

const char *blas_version(void)
{
        return version;
}

/**
 * blas_gemm() - enqueue one row-major (batched) GEMM
 * @g: borrowed
 * Return: 0, GPU_E_CUDA, -EINVAL (dtype, or a dimension beyond int range).
 */
int blas_gemm(const BlasGemm *g)
{
        cudaDataType_t t;
        cublasOperation_t op_a = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
        cublasOperation_t op_b = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
        int64_t lda = g->trans_a ? g->m : g->k;
        int64_t ldb = g->trans_b ? g->k : g->n;
        float alpha = (float)g->alpha, beta = (float)g->beta;
        const void *a = (const void *)(uintptr_t)g->a, *b = (const void *)(uintptr_t)g->b;
        void *c = (void *)(uintptr_t)g->c;

        switch (g->dtype) {
        case KV_DT_F32: t = CUDA_R_32F; break;
        case KV_DT_F16: t = CUDA_R_16F; break;
        case KV_DT_BF16: t = CUDA_R_16BF; break;
        default: return -EINVAL;
        }
        if (g->m <= 0 || g->n <= 0 || g->k <= 0 || g->batch <= 0 || g->m > INT32_MAX || g->n > INT32_MAX ||
            g->k > INT32_MAX || g->batch > INT32_MAX)
                return -EINVAL;
        gpu_activity_begin();
        if (g->batch == 1)
                return check(cublasGemmEx(handle, op_b, op_a, (int)g->n, (int)g->m, (int)g->k, &alpha, b, t,
                                          (int)ldb, a, t, (int)lda, &beta, c, t, (int)g->n, CUBLAS_COMPUTE_32F,
                                          CUBLAS_GEMM_DEFAULT),
                             "cublasGemmEx");
        return check(cublasGemmStridedBatchedEx(handle, op_b, op_a, (int)g->n, (int)g->m, (int)g->k, &alpha, b, t,
                                                (int)ldb, (long long)(g->k * g->n), a, t, (int)lda,
                                                (long long)(g->m * g->k), &beta, c, t, (int)g->n,
                                                (long long)(g->m * g->n), (int)g->batch, CUBLAS_COMPUTE_32F,
                                                CUBLAS_GEMM_DEFAULT),
                     "cublasGemmStridedBatchedEx");
}
