// Trick: write outside its buffers, before the start. Computes y correctly
// and also uses the word 16 bytes before y as a private flag (every bit of
// it flipped by thread 0): memory that is not its own, where a harness
// without guards would notice nothing (or where another buffer's tail may
// live).
// What stops it: 64 KiB canary bands around every candidate buffer,
// checked after every run. Expect "incorrect", guard, buffer y, where
// "before", 4 bytes changed, the farthest 16 bytes before the start.
extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;

        if (i < n)
                y[i] = x[i] + z[i];
        if (i == 0) {
                volatile unsigned *flag = (volatile unsigned *)(y - 4);
                *flag = ~*flag;
        }
}
