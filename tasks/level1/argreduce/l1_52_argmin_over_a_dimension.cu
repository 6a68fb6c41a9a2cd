// Reference for KernelBench level 1 problem 52_Argmin_over_a_dimension: argmin of a row-major
// fp32 tensor x[B, D1, D2] over dimension 1. A block of 32 x 8 threads takes
// 32 neighbouring outputs (b, j) (threadIdx.x: j, so a warp reads 128
// contiguous bytes per i) and splits the reduced dimension into 8 slices
// (threadIdx.y); each thread reduces its slice in order, 4 loads in flight,
// and thread row 0 combines the 8 slice results in slice order, so the result
// does not depend on timing.
#define TX 32
#define TY 8

extern "C" __global__ void __launch_bounds__(TX * TY) argmin_dim1_ref(const float* __restrict__ x,
        long long* __restrict__ y, int B, int D1, int D2)
{
        __shared__ float sh_acc[TY][TX];
        __shared__ int sh_arg[TY][TX];
        int j = blockIdx.x * TX + threadIdx.x;
        int b = blockIdx.y;
        int per = (D1 + TY - 1) / TY;
        int i0 = threadIdx.y * per;
        int i1 = i0 + per < D1 ? i0 + per : D1;
        float acc = __int_as_float(0x7f800000);
        int arg = -1;   /* -1: empty slice */
        if (j < D2) {
                const float* p = x + (unsigned long long)b * D1 * D2 + j;
#pragma unroll 4
                for (int i = i0; i < i1; i++) {
                        float v = p[(unsigned long long)i * D2];
                        if (v < acc || i == i0) {
                                acc = v;
                                arg = i;
                        }
                }
        }
        sh_acc[threadIdx.y][threadIdx.x] = acc;
        sh_arg[threadIdx.y][threadIdx.x] = arg;
        __syncthreads();
        if (threadIdx.y != 0 || j >= D2)
                return;
        for (int w = 1; w < TY; w++) {
                if (sh_arg[w][threadIdx.x] >= 0 && sh_acc[w][threadIdx.x] < acc) {
                        acc = sh_acc[w][threadIdx.x];
                        arg = sh_arg[w][threadIdx.x];
                }
        }
        y[(unsigned long long)b * D2 + j] = arg;
}
