// Fenced build: a load through a wild pointer, address 0x1000, in no
// buffer of the job (the inline asm keeps the address in a register, as a
// pointer read from memory would be, instead of folding it into the
// instruction). Expect CUDA_ERROR_ILLEGAL_ADDRESS, a load, buffer null.
extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        const float *wild;

        asm volatile("mov.b64 %0, 0x1000;" : "=l"(wild));
        if (i < n)
                y[i] = x[i] + z[i];
        if (i == 5) y[i] += *(volatile const float *)wild; /* error.line */
}
