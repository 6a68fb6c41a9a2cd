// Reference for KernelBench level 1 problem 18_Matmul_with_transposed_both: a cuBLAS SGEMM (library step in the
// plan, TF32 off); this file holds no kernel.
