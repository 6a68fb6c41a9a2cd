// Reference for KernelBench level 1 problem 41_Max_Pooling_1D: 1D max pooling with kernel K, stride S, padding PAD, dilation DIL (nn.MaxPool1d, ceil_mode=False).
// One thread per output element: blockIdx.x is the output row (n, c),
// blockIdx.y * blockDim.x + threadIdx.x the position along the last output
// axis (blocks of up to 256 threads, fitted to the axis's length), so
// a warp reads neighbouring inputs and nothing is divided per element but the
// row's coordinates; the window is clipped to the input, padding contributes nothing (it acts as -infinity).
extern "C" __global__ void __launch_bounds__(256) max_pool1d_ref(const float* __restrict__ x,
        float* __restrict__ y, int NC, int L, int OL, int K, int S, int PAD, int DIL)
{
        int ol = blockIdx.y * blockDim.x + threadIdx.x;
        if (ol >= OL)
                return;
        unsigned int row = blockIdx.x;
        unsigned long long nc = row;
        const float* base = x + nc * (unsigned long long)L;
        float acc = -__int_as_float(0x7f800000);
        for (int kl = 0; kl < K; kl++) {
                int il = ol * S - PAD + kl * DIL;
                if (il < 0 || il >= L)
                        continue;
                acc = fmaxf(acc, base[il]);
        }
        y[(unsigned long long)row * OL + ol] = acc;
}
