// Reference for KernelBench level 1 problem 1_Square_matrix_multiplication_: a cuBLAS SGEMM (library step in the
// plan, TF32 off); this file holds no kernel.
