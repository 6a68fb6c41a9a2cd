#include <cmath>
#include <algorithm>
using namespace std;

extern "C" __global__ void swish(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = v / (1.0f + exp(-v));
        y[i] = max(y[i], -1e30f);
    }
}
