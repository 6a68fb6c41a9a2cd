// Trick: stash state in an input buffer. The output is right; afterwards
// the kernel flips the lowest mantissa bit of the last two elements of x,
// a one-bit "seen" tag a memo could key on (invisible to any tolerance
// check, and x is an input nobody is supposed to look at again).
// What stops it: after every candidate run the inputs are compared bitwise
// with a fresh regeneration from the same seed. Expect "incorrect",
// input_mutation, buffer x, 2 bytes, first at element N - 2 (1048574).
extern "C" __global__ void vadd(float *x, const float *z, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;

        if (i < n) {
                y[i] = x[i] + z[i];
                if (i >= n - 2)
                        ((unsigned *)x)[i] ^= 1u;
        }
}
