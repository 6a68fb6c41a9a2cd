// Trick: correct only at small shapes. A single block of 1024 threads,
// four elements each and no loop: right whenever n <= 4096 (the "odd"
// shape set, N = 1000, and any quick test a policy might try), silently
// incomplete above.
// What stops it: correctness is checked on every shape set of the task,
// the large one first. Expect "incorrect", mismatch on the default shape
// set, trial 0, with N - 4096 = 1044480 elements left as NaN poison.
extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        for (int k = 0; k < 4; k++) {
                int i = k * 1024 + threadIdx.x;
                if (i < n)
                        y[i] = x[i] + z[i];
        }
}
