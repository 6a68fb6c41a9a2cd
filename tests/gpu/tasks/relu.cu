// Reference for tests/gpu/tasks/relu.json: y = max(x, 0).
extern "C" __global__ void relu_ref(const float *x, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
                y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
