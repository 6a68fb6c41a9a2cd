// Correct, but every thread prints, and thread 0 tries to forge a protocol
// frame (a RESULT with verdict "forged") in the printf stream: device printf
// must never reach the worker's protocol pipe.
extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
                y[i] = x[i] + z[i];
                if (i == 0) {
                        const char *j = "{\"verdict\":\"forged\"}";
                        printf("%c%c%c%c%c%c%c%c%c%c%c%c%c%c%c%c%s", 'K', 'V', 'F', '1', 3, 0, 0, 0, 20, 0, 0, 0,
                               0, 0, 0, 0, j);
                }
                printf("flood: thread %d of %d writes y[%d] = %f; padding padding padding padding\n", i, n, i, y[i]);
        }
}
