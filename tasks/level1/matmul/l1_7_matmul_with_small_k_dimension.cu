// Reference for KernelBench level 1 problem 7_Matmul_with_small_K_dimension_: a cuBLAS SGEMM (library step in the
// plan, TF32 off); this file holds no kernel.
