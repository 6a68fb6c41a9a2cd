// Reference for tests/gpu/tasks/softmax.json: one block per row.
extern "C" __global__ void softmax_ref(const float *x, float *y, int rows, int d)
{
        __shared__ float s[256];
        const float *xr = x + (long long)blockIdx.x * d;
        float *yr = y + (long long)blockIdx.x * d;
        float m = __int_as_float(0xff800000), sum = 0.0f; // -Inf without math headers (NVRTC)

        for (int j = threadIdx.x; j < d; j += blockDim.x)
                m = fmaxf(m, xr[j]);
        s[threadIdx.x] = m;
        __syncthreads();
        for (int w = blockDim.x / 2; w > 0; w /= 2) {
                if ((int)threadIdx.x < w)
                        s[threadIdx.x] = fmaxf(s[threadIdx.x], s[threadIdx.x + w]);
                __syncthreads();
        }
        m = s[0];
        __syncthreads();
        for (int j = threadIdx.x; j < d; j += blockDim.x)
                sum += expf(xr[j] - m);
        s[threadIdx.x] = sum;
        __syncthreads();
        for (int w = blockDim.x / 2; w > 0; w /= 2) {
                if ((int)threadIdx.x < w)
                        s[threadIdx.x] += s[threadIdx.x + w];
                __syncthreads();
        }
        sum = s[0];
        for (int j = threadIdx.x; j < d; j += blockDim.x)
                yr[j] = expf(xr[j] - m) / sum;
}
