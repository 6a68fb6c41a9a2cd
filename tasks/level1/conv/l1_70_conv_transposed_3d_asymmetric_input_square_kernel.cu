// Reference for KernelBench level 1 problem 70_conv_transposed_3D__asymmetric_input__square_kernel: 3D transposed convolution (nn.ConvTranspose3d, bias=False) with groups, per-axis stride, padding, output padding and dilation.
// conv_transpose3d_ref: one thread per output element (grid-stride, 64-bit indices),
// fp32 fused multiply-adds over the input channels of the output's group and
// the kernel taps, in a fixed order. A direct convolution: PyTorch eager calls
// cuDNN (which picks implicit GEMM, Winograd or FFT algorithms).

extern "C" __global__ void conv_transpose3d_ref(const float* __restrict__ x, const float* __restrict__ w,
        const float* __restrict__ bias, float* __restrict__ y, int N, int CI, int CO, int G,
        int has_bias, int ID, int IH, int IW, int OD, int OH, int OW, int KD, int KH, int KW, int SD, int SH, int SW, int PD, int PH, int PW, int DLD, int DLH, int DLW, unsigned long long total)
{
        int cig = CI / G, cog = CO / G;
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long o = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
             o < total; o += stride) {
                unsigned long long r = o;
                int ow = (int)(r % OW);
                r /= OW;
                int oh = (int)(r % OH);
                r /= OH;
                int od = (int)(r % OD);
                r /= OD;
                int co = (int)(r % CO);
                int n = (int)(r / CO);
                int g = co / cog;
                float acc = has_bias ? bias[co] : 0.0f;
                for (int c = 0; c < cig; c++) {
                        int ci = g * cig + c;
                        const float* xp = x + ((unsigned long long)n * CI + ci) * (unsigned long long)ID * (unsigned long long)IH * (unsigned long long)IW;
                        const float* wp = w + ((unsigned long long)ci * cog + (co - g * cog)) * (KD * KH * KW);
                        for (int kd = 0; kd < KD; kd++) {
                                int td = od + PD - kd * DLD;
                                if (td < 0 || td % SD != 0)
                                        continue;
                                int id = td / SD;
                                if (id >= ID)
                                        continue;
                                for (int kh = 0; kh < KH; kh++) {
                                        int th = oh + PH - kh * DLH;
                                        if (th < 0 || th % SH != 0)
                                                continue;
                                        int ih = th / SH;
                                        if (ih >= IH)
                                                continue;
                                        for (int kw = 0; kw < KW; kw++) {
                                                int tw = ow + PW - kw * DLW;
                                                if (tw < 0 || tw % SW != 0)
                                                        continue;
                                                int iw = tw / SW;
                                                if (iw >= IW)
                                                        continue;
                                                acc = fmaf(xp[(unsigned long long)(((id) * IH + ih) * IW + iw)], wp[((kd) * KH + kh) * KW + kw], acc);
                                        }
                                }
                        }
                }
                y[o] = acc;
        }
}
