// Reference for KernelBench level 1 problem 16_Matmul_with_transposed_A: a cuBLAS SGEMM (library step in the
// plan, TF32 off); this file holds no kernel.
