// Reference for KernelBench level 1 problem 4_Matrix_vector_multiplication_: a cuBLAS SGEMM (library step in the
// plan, TF32 off); this file holds no kernel.
