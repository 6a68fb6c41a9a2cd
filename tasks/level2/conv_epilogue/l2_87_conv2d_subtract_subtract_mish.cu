// Reference for KernelBench level 2 problem 87_Conv2d_Subtract_Subtract_Mish.
// The convolution (stride 1, no padding) as im2col + a strided-batched cuBLAS SGEMM per
// image (TF32 off), then: the bias and v = v - 0.5 - 0.2 (two subtractions in this order), then mish(v) = v*tanh(softplus(v)), softplus(v) = log(1 + exp(v)).
// PyTorch eager calls cuDNN for the convolution and runs one kernel per following op.

__device__ static inline float mish_f(float v) { return v * tanhf(v > 20.0f ? v : log1pf(expf(v))); }

// Convolution as im2col + cuBLAS SGEMM (tools/tasks/conv_gemm.py). Every kernel takes
// three spatial axes (D, H, W); a 1-D or 2-D convolution passes size-1 leading axes
// with kernel 1, stride 1, padding 0, dilation 1. Rows of CONV_SPAN output elements
// are handled by one warp each (the lanes stride along the row), so the index
// decoding is paid once per row segment, not per element. 64-bit offsets throughout.
#define CONV_SPAN 1024

// The epilogue of a task: v is the convolution's value (bias included) at output
// channel co; ep is the task's extra epilogue operand (unused by most).
static __device__ inline float conv_epilogue(float v, int co, const float* __restrict__ ep)
{
        (void)co;
        (void)ep;
        v = v - 0.5f;
        v = v - 0.2f;
        v = mish_f(v);
        return v;
}

// col[j][ci][kd][kh][kw][od][oh][ow] for images n0 + j, j in [0, rows / (C*KD*KH*KW*OD*OH)):
// the B operand of the GEMM of image n0 + j (rows ci*KK + k, columns the output
// positions). Standard (tr = 0): x[n, ci, o*S - PAD + k*DIL]; transposed gather form
// (tr = 1): x[n, ci, (o + PAD - k*DIL) / S] where that divides exactly; zero where the
// tap falls outside the input and for images n >= N.
extern "C" __global__ void conv_im2col(const float* __restrict__ x, float* __restrict__ col,
        int N, int n0, int C, int ID, int IH, int IW, int OD, int OH, int OW, int KD, int KH,
        int KW, int SD, int SH, int SW, int PD, int PH, int PW, int DD, int DH, int DW, int tr,
        unsigned long long rows, int spans)
{
        unsigned long long nw = ((unsigned long long)gridDim.x * blockDim.x) >> 5;
        int lane = threadIdx.x & 31;
        for (unsigned long long q = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
             q < rows * spans; q += nw) {
                unsigned long long row = q / spans, r = row;
                int w0 = (int)(q % spans) * CONV_SPAN;
                int oh = (int)(r % OH);
                r /= OH;
                int od = (int)(r % OD);
                r /= OD;
                int kw = (int)(r % KW);
                r /= KW;
                int kh = (int)(r % KH);
                r /= KH;
                int kd = (int)(r % KD);
                r /= KD;
                int ci = (int)(r % C);
                long long n = n0 + (long long)(r / C);
                int id, ih;
                bool ok = n < N;
                if (!tr) {
                        id = od * SD - PD + kd * DD;
                        ih = oh * SH - PH + kh * DH;
                } else {
                        int td = od + PD - kd * DD, th = oh + PH - kh * DH;
                        ok = ok && td >= 0 && th >= 0 && td % SD == 0 && th % SH == 0;
                        id = td / SD;
                        ih = th / SH;
                }
                ok = ok && id >= 0 && id < ID && ih >= 0 && ih < IH;
                const float* xr = x;
                if (ok)
                        xr = x + (((unsigned long long)n * C + ci) * ID + id) * IH * (unsigned long long)IW +
                             (unsigned long long)ih * IW;
                float* cr = col + row * OW;
                int wend = OW - w0 < CONV_SPAN ? OW : w0 + CONV_SPAN;
                for (int ow = w0 + lane; ow < wend; ow += 32) {
                        float v = 0.0f;
                        if (ok) {
                                int iw;
                                bool okw;
                                if (!tr) {
                                        iw = ow * SW - PW + kw * DW;
                                        okw = iw >= 0;
                                } else {
                                        int tw = ow + PW - kw * DW;
                                        okw = tw >= 0 && tw % SW == 0;
                                        iw = tw / SW;
                                }
                                if (okw && iw < IW)
                                        v = xr[iw];
                        }
                        cr[ow] = v;
                }
        }
}

// wrep[i] = w[i % per]: the weights once per (image, group) of a slice, the packed A
// operands of one strided-batched GEMM.
extern "C" __global__ void conv_rep_weights(const float* __restrict__ w, float* __restrict__ wrep,
        unsigned long long per, unsigned long long total)
{
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
             i += stride)
                wrep[i] = w[i % per];
}

// Transposed weights [CI][CO/G][KK] to the gather form's A operands, once per (image,
// group): wrep[j][g][co'][c][k] = w[g*cig + c][co'][k].
extern "C" __global__ void conv_flip_weights(const float* __restrict__ w, float* __restrict__ wrep,
        int G, int cig, int cog, int KK, unsigned long long total)
{
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
             i += stride) {
                unsigned long long r = i;
                int k = (int)(r % KK);
                r /= KK;
                int c = (int)(r % cig);
                r /= cig;
                int co = (int)(r % cog);
                r /= cog;
                int g = (int)(r % G);
                wrep[i] = w[(((unsigned long long)g * cig + c) * cog + co) * KK + k];
        }
}

// xs[j] = x[n0 + j] for the images of a slice (zero past N): the B operand of the
// col2im form's GEMM when the batch runs in several slices.
extern "C" __global__ void conv_slice(const float* __restrict__ x, float* __restrict__ xs,
        unsigned long long per, int N, int n0, unsigned long long total)
{
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
             i += stride)
                xs[i] = (long long)n0 + (long long)(i / per) < N ? x[(unsigned long long)n0 * per + i] : 0.0f;
}

// y[n0 + j, co, :] = conv_epilogue(src[j, co, :] + bias[co]) for the images of a slice
// below N (src may be y itself: each element is read and written by one thread).
extern "C" __global__ void conv_store(const float* src, const float* __restrict__ bias,
        const float* __restrict__ ep, float* y, int N, int n0, int nb, int CO,
        unsigned long long P, int has_bias)
{
        for (unsigned long long row = blockIdx.y; row < (unsigned long long)nb * CO; row += gridDim.y) {
                int co = (int)(row % CO);
                long long n = n0 + (long long)(row / CO);
                if (n >= N)
                        continue;
                float b = has_bias ? bias[co] : 0.0f;
                const float* s = src + row * P;
                float* d = y + ((unsigned long long)n * CO + co) * P;
                for (unsigned long long p = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; p < P;
                     p += (unsigned long long)gridDim.x * blockDim.x)
                        d[p] = conv_epilogue(s[p] + b, co, ep);
        }
}

// y[n0 + j, co, o] = conv_epilogue(bias[co] + sum over taps k of col[j][co][k][i]) where
// i = (o + PAD - k*DIL) / S divides exactly and lies in the input: the transposed
// convolution's col2im as a gather, taps in a fixed order (deterministic, no atomics).
extern "C" __global__ void conv_col2im(const float* __restrict__ col, const float* __restrict__ bias,
        const float* __restrict__ ep, float* __restrict__ y, int N, int n0, int CO, int ID, int IH,
        int IW, int OD, int OH, int OW, int KD, int KH, int KW, int SD, int SH, int SW, int PD,
        int PH, int PW, int DD, int DH, int DW, int has_bias, unsigned long long rows, int spans)
{
        unsigned long long nw = ((unsigned long long)gridDim.x * blockDim.x) >> 5;
        unsigned long long ip = (unsigned long long)ID * IH * IW;
        int lane = threadIdx.x & 31;
        for (unsigned long long q = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
             q < rows * spans; q += nw) {
                unsigned long long row = q / spans, r = row;
                int w0 = (int)(q % spans) * CONV_SPAN;
                int oh = (int)(r % OH);
                r /= OH;
                int od = (int)(r % OD);
                r /= OD;
                int co = (int)(r % CO);
                unsigned long long j = r / CO;
                long long n = n0 + (long long)j;
                if (n >= N)
                        continue;
                const float* cj = col + (j * CO + co) * (unsigned long long)KD * KH * KW * ip;
                float* yr = y + (((unsigned long long)n * CO + co) * OD + od) * OH * (unsigned long long)OW +
                            (unsigned long long)oh * OW;
                float b = has_bias ? bias[co] : 0.0f;
                int wend = OW - w0 < CONV_SPAN ? OW : w0 + CONV_SPAN;
                for (int ow = w0 + lane; ow < wend; ow += 32) {
                        float acc = b;
                        for (int kd = 0; kd < KD; kd++) {
                                int td = od + PD - kd * DD;
                                if (td < 0 || td % SD != 0 || td / SD >= ID)
                                        continue;
                                for (int kh = 0; kh < KH; kh++) {
                                        int th = oh + PH - kh * DH;
                                        if (th < 0 || th % SH != 0 || th / SH >= IH)
                                                continue;
                                        const float* ck = cj + ((unsigned long long)kd * KH + kh) * KW * ip +
                                                          ((unsigned long long)(td / SD) * IH + th / SH) * IW;
                                        for (int kw = 0; kw < KW; kw++) {
                                                int tw = ow + PW - kw * DW;
                                                if (tw < 0 || tw % SW != 0 || tw / SW >= IW)
                                                        continue;
                                                acc += ck[(unsigned long long)kw * ip + tw / SW];
                                        }
                                }
                        }
                        yr[ow] = conv_epilogue(acc, co, ep);
                }
        }
}
