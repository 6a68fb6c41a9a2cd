// Correct softmax: one warp per row, online max/sum in one pass, then a
// second pass writing the outputs.
extern "C" __global__ void softmax_warp(const float *x, float *y, int rows, int d)
{
        int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x & 31;
        const float *xr;
        float *yr;
        float m = __int_as_float(0xff800000), s = 0.0f;

        if (warp >= rows)
                return;
        xr = x + (long long)warp * d;
        yr = y + (long long)warp * d;
        for (int j = lane; j < d; j += 32) {
                float v = xr[j], nm = fmaxf(m, v);
                s = s * expf(m - nm) + expf(v - nm);
                m = nm;
        }
        for (int o = 16; o > 0; o >>= 1) {
                float om = __shfl_xor_sync(0xffffffffu, m, o), os = __shfl_xor_sync(0xffffffffu, s, o);
                float nm = fmaxf(m, om);
                s = (m == nm ? s : s * expf(m - nm)) + (om == nm ? os : os * expf(om - nm));
                m = nm;
        }
        for (int j = lane; j < d; j += 32)
                yr[j] = expf(xr[j] - m) / s;
}
