// Reference for KernelBench level 1 problem 46_Average_Pooling_3D: 3D average pooling with kernel K, stride S, padding PAD (nn.AvgPool3d, count_include_pad=True, ceil_mode=False).
// One thread per output element (grid-stride, 64-bit indices); the window is
// clipped to the input, padding counts as zeros and the divisor is always K^3 (count_include_pad=True).
extern "C" __global__ void avg_pool3d_ref(const float* __restrict__ x, float* __restrict__ y,
        int NC, int D, int H, int W, int OD, int OH, int OW, int K, int S, int PAD, int DIL, unsigned long long n)
{
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long o = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
             o < n; o += stride) {
                unsigned long long r = o;
                int ow = (int)(r % OW);
                r /= OW;
                int oh = (int)(r % OH);
                r /= OH;
                int od = (int)(r % OD);
                r /= OD;
                unsigned long long nc = r;
                const float* base = x + nc * (unsigned long long)D * (unsigned long long)H * (unsigned long long)W;
                float acc = 0.0f;
                for (int kd = 0; kd < K; kd++) {
                        int id = od * S - PAD + kd * DIL;
                        if (id < 0 || id >= D)
                                continue;
                        for (int kh = 0; kh < K; kh++) {
                                int ih = oh * S - PAD + kh * DIL;
                                if (ih < 0 || ih >= H)
                                        continue;
                                for (int kw = 0; kw < K; kw++) {
                                        int iw = ow * S - PAD + kw * DIL;
                                        if (iw < 0 || iw >= W)
                                                continue;
                                        acc += base[((id) * (long long)H + ih) * (long long)W + iw];
                                }
                        }
                }
                y[o] = acc / (float)(K * K * K);
        }
}
