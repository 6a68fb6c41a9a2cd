#include <math.h>

extern "C" __global__ void rope_forward(float* __restrict__ x, int T, int n_head, int head_dim, float theta) {
    int t = blockIdx.x, h = blockIdx.y;
    int i = threadIdx.x;  // pair index
    if (t >= T || h >= n_head || i >= head_dim / 2) return;
    float freq = 1.0f / powf(theta, (2.0f * i) / head_dim);
    float s, c;
    sincosf(t * freq, &s, &c);
    float* p = x + ((size_t)t * n_head + h) * head_dim;
    float a = p[2 * i], b = p[2 * i + 1];
    p[2 * i] = a * c - b * s;
    p[2 * i + 1] = a * s + b * c;
}
