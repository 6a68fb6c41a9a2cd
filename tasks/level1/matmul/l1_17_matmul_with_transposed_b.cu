// Reference for KernelBench level 1 problem 17_Matmul_with_transposed_B: a cuBLAS SGEMM (library step in the
// plan, TF32 off); this file holds no kernel.
