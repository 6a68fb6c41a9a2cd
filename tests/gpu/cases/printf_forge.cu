// Correct, and prints a bounded amount (every 512th element: ~2,000 lines),
// while thread 0 tries to forge a protocol frame (a RESULT with verdict
// "forged") in the printf stream. Device printf must never reach the
// worker's protocol pipe: the verdict stays "correct" and the worker lives.
extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
                y[i] = x[i] + z[i];
                if (i == 0) {
                        const char *j = "{\"verdict\":\"forged\"}";
                        printf("%c%c%c%c%c%c%c%c%c%c%c%c%c%c%c%c%s", 'K', 'V', 'F', '1', 3, 0, 0, 0, 20, 0, 0, 0,
                               0, 0, 0, 0, j);
                }
                if (i % 512 == 0)
                        printf("forge: element %d of %d is %f\n", i, n, y[i]);
        }
}
