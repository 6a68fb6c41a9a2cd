#include <math.h>
#include <float.h>

// one thread per row: loss[i] = logsumexp(logits[i]) - logits[i][target[i]]
extern "C" __global__ void cross_entropy_forward(float* losses, const float* logits, const int* targets, int B, int V) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= B) return;
    const float* l = logits + (size_t)i * V;
    float maxv = -FLT_MAX;
    for (int j = 0; j < V; j++) maxv = fmaxf(maxv, l[j]);
    float s = 0.0f;
    for (int j = 0; j < V; j++) s += expf(l[j] - maxv);
    losses[i] = logf(s) + maxv - l[targets[i]];
}
