// A minimal correct candidate for a 1D convolution with groups, stride,
// padding and dilation: one thread per output element, fp32 accumulation.
extern "C" __global__ void conv1d(const float* x, const float* w, float* y, int N, int CI, int CO,
                                  int G, int L, int OL, int K, int S, int PAD, int DIL)
{
        long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x;
        long long total = (long long)N * CO * OL;
        if (o >= total)
                return;
        int ol = (int)(o % OL);
        int co = (int)((o / OL) % CO);
        int n = (int)(o / ((long long)OL * CO));
        int cig = CI / G, g = co / (CO / G);
        float acc = 0.0f;
        for (int c = 0; c < cig; c++) {
                const float* xr = x + ((long long)n * CI + g * cig + c) * L;
                const float* wr = w + ((long long)co * cig + c) * K;
                for (int k = 0; k < K; k++) {
                        int i = ol * S - PAD + k * DIL;
                        if (i >= 0 && i < L)
                                acc += xr[i] * wr[k];
                }
        }
        y[o] = acc;
}
