// Reference for KernelBench level 1 problem 6_Matmul_with_large_K_dimension_: a cuBLAS SGEMM (library step in the
// plan, TF32 off); this file holds no kernel.
