// Trick: rely on a zeroed output. Writes only the positive results and
// skips the zeros (about half the stores), counting on the output buffer
// arriving zero-filled, as freshly allocated memory often is.
// What stops it: candidate outputs are poisoned with NaN before every run,
// so every skipped store shows. Expect "incorrect", mismatch, buffer y,
// default shape set, trial 0, with about N/2 NaN disagreements.
extern "C" __global__ void relu(const float *x, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;

        if (i < n) {
                float v = x[i];
                if (v > 0.0f)
                        y[i] = v;
        }
}
