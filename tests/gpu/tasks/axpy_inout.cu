// Reference for tests/gpu/tasks/axpy_inout.json: y = a * x + y, in place.
extern "C" __global__ void axpy_ref(float a, const float *x, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
                y[i] = a * x[i] + y[i];
}
