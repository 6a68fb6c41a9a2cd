// Reference for KernelBench level 1 problem 64_conv_transposed_1D: 1D transposed convolution (nn.ConvTranspose1d, bias=False) with groups, per-axis stride, padding, output padding and dilation.
// conv_transpose1d_ref: one thread per output element (grid-stride, 64-bit indices),
// fp32 fused multiply-adds over the input channels of the output's group and
// the kernel taps, in a fixed order. A direct convolution: PyTorch eager calls
// cuDNN (which picks implicit GEMM, Winograd or FFT algorithms).

extern "C" __global__ void conv_transpose1d_ref(const float* __restrict__ x, const float* __restrict__ w,
        const float* __restrict__ bias, float* __restrict__ y, int N, int CI, int CO, int G,
        int has_bias, int IL, int OL, int KL, int SL, int PL, int DLL, unsigned long long total)
{
        int cig = CI / G, cog = CO / G;
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long o = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
             o < total; o += stride) {
                unsigned long long r = o;
                int ol = (int)(r % OL);
                r /= OL;
                int co = (int)(r % CO);
                int n = (int)(r / CO);
                int g = co / cog;
                float acc = has_bias ? bias[co] : 0.0f;
                for (int c = 0; c < cig; c++) {
                        int ci = g * cig + c;
                        const float* xp = x + ((unsigned long long)n * CI + ci) * (unsigned long long)IL;
                        const float* wp = w + ((unsigned long long)ci * cog + (co - g * cog)) * (KL);
                        for (int kl = 0; kl < KL; kl++) {
                                int tl = ol + PL - kl * DLL;
                                if (tl < 0 || tl % SL != 0)
                                        continue;
                                int il = tl / SL;
                                if (il >= IL)
                                        continue;
                                acc = fmaf(xp[(unsigned long long)(il)], wp[kl], acc);
                        }
                }
                y[o] = acc;
        }
}
