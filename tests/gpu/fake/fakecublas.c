/*
 * fakecublas - a CPU stand-in for the cuBLAS calls of worker/gpu/blas.c, built
 * as libcublas.so.13 (with its symbol version) for tests/gpu/fake. The GEMM
 * follows cuBLAS's own column-major definition literally,
 *   C[i + j*ldc] = alpha * sum_l op(A)[i, l] * op(B)[l, j] + beta * C,
 *   op(A)[i, l] = transa == N ? A[i + l*lda] : A[l + i*lda],
 * so the worker's row-major mapping is checked against the definition, and
 * the candidate kernels of the fake suite compute row-major products
 * directly.
 */
#include <cublas_v2.h>
#include <stdlib.h>
#include <string.h>

#include "worker/gpu/devrng.h"

struct cublasContext { int dummy; };

cublasStatus_t cublasCreate_v2(cublasHandle_t *h)
{
        *h = calloc(1, sizeof(struct cublasContext));
        return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s)
{
        (void)h;
        (void)s;
        return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t m)
{
        (void)h;
        return m == CUBLAS_DEFAULT_MATH ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t m)
{
        (void)h;
        (void)m;
        return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t h, void *w, size_t n)
{
        (void)h;
        return w && n ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasGetVersion_v2(cublasHandle_t h, int *v)
{
        (void)h;
        *v = 130000;
        return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusName(cublasStatus_t s)
{
        return s == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_INVALID_VALUE";
}

const char *cublasGetStatusString(cublasStatus_t s)
{
        return s == CUBLAS_STATUS_SUCCESS ? "success" : "an invalid value (fake)";
}

static float load(cudaDataType t, const void *p, long long i)
{
        switch (t) {
        case CUDA_R_32F: return ((const float *)p)[i];
        case CUDA_R_16F: return kv_f16_to_f32(((const uint16_t *)p)[i]);
        default: return kv_bf16_to_f32(((const uint16_t *)p)[i]);
        }
}

static void store(cudaDataType t, void *p, long long i, float v)
{
        switch (t) {
        case CUDA_R_32F: ((float *)p)[i] = v; break;
        case CUDA_R_16F: ((uint16_t *)p)[i] = kv_f32_to_f16(v); break;
        default: ((uint16_t *)p)[i] = kv_f32_to_bf16(v); break;
        }
}

static cublasStatus_t gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float *alpha,
                           const void *A, cudaDataType at, int lda, long long sa, const void *B, cudaDataType bt,
                           int ldb, long long sb, const float *beta, void *C, cudaDataType ct, int ldc, long long sc,
                           int batch, cublasComputeType_t comp)
{
        if (at != bt || at != ct || (at != CUDA_R_32F && at != CUDA_R_16F && at != CUDA_R_16BF) ||
            comp != CUBLAS_COMPUTE_32F || m <= 0 || n <= 0 || k <= 0)
                return CUBLAS_STATUS_INVALID_VALUE;
        if (lda < (ta == CUBLAS_OP_N ? m : k) || ldb < (tb == CUBLAS_OP_N ? k : n) || ldc < m)
                return CUBLAS_STATUS_INVALID_VALUE;
        for (int g = 0; g < batch; g++)
                for (int j = 0; j < n; j++)
                        for (int i = 0; i < m; i++) {
                                float acc = 0;
                                for (int l = 0; l < k; l++) {
                                        long long ia = ta == CUBLAS_OP_N ? i + (long long)l * lda : l + (long long)i * lda;
                                        long long ib = tb == CUBLAS_OP_N ? l + (long long)j * ldb : j + (long long)l * ldb;
                                        acc += load(at, A, g * sa + ia) * load(bt, B, g * sb + ib);
                                }
                                {
                                        long long ic = g * sc + i + (long long)j * ldc;
                                        float old = *beta != 0 ? load(ct, C, ic) : 0;
                                        store(ct, C, ic, *alpha * acc + *beta * old);
                                }
                        }
        return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void *alpha, const void *A, cudaDataType at, int lda, const void *B, cudaDataType bt,
                            int ldb, const void *beta, void *C, cudaDataType ct, int ldc, cublasComputeType_t comp,
                            cublasGemmAlgo_t algo)
{
        (void)h;
        (void)algo;
        return gemm(ta, tb, m, n, k, alpha, A, at, lda, 0, B, bt, ldb, 0, beta, C, ct, ldc, 0, 1, comp);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                          int k, const void *alpha, const void *A, cudaDataType at, int lda,
                                          long long sa, const void *B, cudaDataType bt, int ldb, long long sb,
                                          const void *beta, void *C, cudaDataType ct, int ldc, long long sc, int batch,
                                          cublasComputeType_t comp, cublasGemmAlgo_t algo)
{
        (void)h;
        (void)algo;
        if (batch <= 0)
                return CUBLAS_STATUS_INVALID_VALUE;
        return gemm(ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc, batch, comp);
}
