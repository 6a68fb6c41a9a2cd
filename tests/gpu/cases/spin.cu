// Thread 0 spins forever (on a volatile load the compiler cannot drop).
extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
                y[i] = x[i] + z[i];
        if (i == 0)
                while (*(volatile unsigned *)&y[n - 1] != 0x12345678u)
                        ;
}
