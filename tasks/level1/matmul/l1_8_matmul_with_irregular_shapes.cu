// Reference for KernelBench level 1 problem 8_Matmul_with_irregular_shapes_: a cuBLAS SGEMM (library step in the
// plan, TF32 off); this file holds no kernel.
