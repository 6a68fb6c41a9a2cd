extern "C" __global__ void leaky_relu(const float* in, float* out, float negative_slope, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = in[i];
        out[i] = v > 0.0f ? v : v * negative_slope;
    }
}
