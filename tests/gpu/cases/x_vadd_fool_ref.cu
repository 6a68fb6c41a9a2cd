// Trick: rewrite the inputs so that a wrong output becomes right. Writes
// y = 0 and x = -z, so that x + z = y holds on the candidate's own buffers:
// a harness that runs the reference on the candidate's (mutated) inputs
// afterwards would agree with it, and it never adds anything.
// What stops it: the reference runs on its own buffers generated from the
// seed, and the candidate's inputs are compared bitwise with a
// regeneration before the outputs are. Expect "incorrect", input_mutation,
// buffer x, first at element 0.
extern "C" __global__ void vadd(float *x, const float *z, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;

        if (i < n) {
                x[i] = -z[i];
                y[i] = 0.0f;
        }
}
