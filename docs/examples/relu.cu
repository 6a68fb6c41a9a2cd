// A candidate for task l1_19_relu (README's `kevald eval` example): y = max(x, 0).
extern "C" __global__ void relu(const float *__restrict__ x, float *__restrict__ y, unsigned long long n)
{
        unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;

        if (i < n)
                y[i] = fmaxf(x[i], 0.0f);
}
