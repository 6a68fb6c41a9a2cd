/*
 * blas - the reference `library` steps: row-major GEMM and strided batched
 * GEMM through cuBLAS, on the worker's stream. Only this file and gpu.c
 * include CUDA headers.
 *
 * Precision: f32 GEMMs are strictly FP32 (CUBLAS_COMPUTE_32F with
 * CUBLAS_DEFAULT_MATH, and NVIDIA_TF32_OVERRIDE=0 set by the worker before
 * cuInit, so no TF32 tensor-core path can be picked): the same math PyTorch
 * eager uses with its default allow_tf32=False, so GEMM speedups are
 * measured against what a PyTorch user would get. f16 and bf16 GEMMs take
 * f16/bf16 inputs and outputs with FP32 accumulation (CUBLAS_COMPUTE_32F),
 * as PyTorch does. The handle and a 32 MiB workspace are created at start-up
 * before the sandbox locks, and every dtype is run once then (lazy kernel
 * loading then happens from memory only).
 *
 * Returns: 0, GPU_E_CUDA with gpu_error_last() naming the cuBLAS status
 * ("CUBLAS_STATUS_EXECUTION_FAILED"; where = "cublasGemmEx"), -EINVAL for a
 * dtype cuBLAS is not asked to do here.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "worker/gpu/gpu.h"

typedef struct BlasGemm {
        int dtype;          /* KV_DT_F32, KV_DT_F16, KV_DT_BF16 (a, b and c alike) */
        GpuPtr a, b, c;     /* row-major: op(A) is m x k, op(B) is k x n, C is m x n */
        int64_t m, n, k;
        int64_t batch;      /* > 1: packed matrices, strides m*k, k*n, m*n */
        bool trans_a, trans_b;
        double alpha, beta;
} BlasGemm;

int blas_init(void *stream);
int blas_gemm(const BlasGemm *g);
int blas_wipe(void);
const char *blas_version(void);
