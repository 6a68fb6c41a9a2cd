// Reference for KernelBench level 1 problem 45_Average_Pooling_2D: 2D average pooling with kernel K, stride S, padding PAD (nn.AvgPool2d, count_include_pad=True, ceil_mode=False).
// One thread per output element: blockIdx.x is the output row (n, c, oh),
// blockIdx.y * blockDim.x + threadIdx.x the position along the last output
// axis (blocks of up to 256 threads, fitted to the axis's length), so
// a warp reads neighbouring inputs and nothing is divided per element but the
// row's coordinates; the window is clipped to the input, padding counts as zeros and the divisor is always K^2 (count_include_pad=True).
extern "C" __global__ void __launch_bounds__(256) avg_pool2d_ref(const float* __restrict__ x,
        float* __restrict__ y, int NC, int H, int W, int OH, int OW, int K, int S, int PAD, int DIL)
{
        int ow = blockIdx.y * blockDim.x + threadIdx.x;
        if (ow >= OW)
                return;
        unsigned int row = blockIdx.x;
        int oh = (int)(row % (unsigned int)OH);
        unsigned long long nc = row / (unsigned int)OH;
        const float* base = x + nc * (unsigned long long)H * (unsigned long long)W;
        float acc = 0.0f;
        for (int kh = 0; kh < K; kh++) {
                int ih = oh * S - PAD + kh * DIL;
                if (ih < 0 || ih >= H)
                        continue;
                for (int kw = 0; kw < K; kw++) {
                        int iw = ow * S - PAD + kw * DIL;
                        if (iw < 0 || iw >= W)
                                continue;
                        acc += base[(ih) * (long long)W + iw];
                }
        }
        y[(unsigned long long)row * OW + ow] = acc / (float)(K * K);
}
