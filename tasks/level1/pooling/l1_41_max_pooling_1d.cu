// Reference for KernelBench level 1 problem 41_Max_Pooling_1D: 1D max pooling with kernel K, stride S, padding PAD, dilation DIL (nn.MaxPool1d, ceil_mode=False).
// One thread per output element (grid-stride, 64-bit indices); the window is
// clipped to the input, padding contributes nothing (it acts as -infinity).
extern "C" __global__ void max_pool1d_ref(const float* __restrict__ x, float* __restrict__ y,
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
                float acc = -__int_as_float(0x7f800000);
                for (int kl = 0; kl < K; kl++) {
                        int il = ol * S - PAD + kl * DIL;
                        if (il < 0 || il >= L)
                                continue;
                        acc = fmaxf(acc, base[il]);
                }
                y[o] = acc;
        }
}
