// Reference for KernelBench level 1 problem 44_Average_Pooling_1D: 1D average pooling with kernel K, stride S, padding PAD (nn.AvgPool1d, count_include_pad=True, ceil_mode=False).
// One thread per output element (grid-stride, 64-bit indices); the window is
// clipped to the input, padding counts as zeros and the divisor is always K^1 (count_include_pad=True).
extern "C" __global__ void avg_pool1d_ref(const float* __restrict__ x, float* __restrict__ y,
        int NC, int L, int OL, int K, int S, int PAD, int DIL, unsigned long long n)
{
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long o = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
             o < n; o += stride) {
                unsigned long long r = o;
                int ol = (int)(r % OL);
                r /= OL;
                unsigned long long nc = r;
                const float* base = x + nc * (unsigned long long)L;
                float acc = 0.0f;
                for (int kl = 0; kl < K; kl++) {
                        int il = ol * S - PAD + kl * DIL;
                        if (il < 0 || il >= L)
                                continue;
                        acc += base[il];
                }
                y[o] = acc / (float)(K);
        }
}
