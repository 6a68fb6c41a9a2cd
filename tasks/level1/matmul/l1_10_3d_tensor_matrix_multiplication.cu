// Reference for KernelBench level 1 problem 10_3D_tensor_matrix_multiplication: a cuBLAS SGEMM (library step in the
// plan, TF32 off); this file holds no kernel.
