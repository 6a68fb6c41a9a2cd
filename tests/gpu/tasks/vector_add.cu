// Reference for tests/gpu/tasks/vector_add.json: y = x + z.
extern "C" __global__ void vadd_ref(const float *x, const float *z, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
                y[i] = x[i] + z[i];
}
