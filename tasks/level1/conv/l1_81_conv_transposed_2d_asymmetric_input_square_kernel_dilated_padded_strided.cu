// Reference for KernelBench level 1 problem 81_conv_transposed_2D_asymmetric_input_square_kernel___dilated____padded____strided__: 2D transposed convolution (nn.ConvTranspose2d, bias=False) with groups, per-axis stride, padding, output padding and dilation.

// Convolution as im2col + cuBLAS SGEMM (tools/tasks/conv_gemm.py). Every kernel takes
// three spatial axes (D, H, W); a 1-D or 2-D convolution passes size-1 leading axes
// with kernel 1, stride 1, padding 0, dilation 1. A warp handles a segment of at most
// CONV_SPAN elements of one row (the lanes stride along it), or rb whole rows shorter
// than that in sequence, so the index decoding is paid once per warp step and the
// following rows advance the indices by carries. 64-bit offsets throughout.
#define CONV_SPAN 1024

// The epilogue of a task: v is the convolution's value (bias included) at output
// channel co; ep is the task's extra epilogue operand (unused by most).
static __device__ inline float conv_epilogue(float v, int co, const float* __restrict__ ep)
{
        (void)co;
        (void)ep;
        return v;
}

// *r % d, and *r /= d (32-bit arithmetic while *r fits in 32 bits).
static __device__ inline int conv_split(unsigned long long* r, int d)
{
        int m;
        if (*r >> 32) {
                m = (int)(*r % (unsigned long long)d);
                *r /= (unsigned long long)d;
        } else {
                unsigned int v = (unsigned int)*r;
                m = (int)(v % (unsigned int)d);
                *r = v / (unsigned int)d;
        }
        return m;
}

// col[j][ci][kd][kh][kw][od][oh][ow] for images n0 + j (rows of OW elements, `rows` of
// them): the B operand of the GEMM of image n0 + j (rows ci*KK + k, columns the output
// positions). Standard (tr = 0): x[n, ci, o*S - PAD + k*DIL]; transposed gather form
// (tr = 1): x[n, ci, (o + PAD - k*DIL) / S] where that divides exactly; zero where the
// tap falls outside the input and for images n >= N.
extern "C" __global__ void conv_im2col(const float* __restrict__ x, float* __restrict__ col,
        int N, int n0, int C, int ID, int IH, int IW, int OD, int OH, int OW, int KD, int KH,
        int KW, int SD, int SH, int SW, int PD, int PH, int PW, int DD, int DH, int DW, int tr,
        unsigned long long rows, int spans, int rb)
{
        unsigned long long nw = ((unsigned long long)gridDim.x * blockDim.x) >> 5;
        unsigned long long steps = (rows + rb - 1) / rb * spans;
        int lane = threadIdx.x & 31;
        for (unsigned long long q = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
             q < steps; q += nw) {
                unsigned long long r = q;
                int w0 = conv_split(&r, spans) * CONV_SPAN;
                int wend = OW - w0 < CONV_SPAN ? OW : w0 + CONV_SPAN;
                unsigned long long row = r * rb;
                r = row;
                int oh = conv_split(&r, OH);
                int od = conv_split(&r, OD);
                int kw = conv_split(&r, KW);
                int kh = conv_split(&r, KH);
                int kd = conv_split(&r, KD);
                int ci = conv_split(&r, C);
                long long n = n0 + (long long)r;
                for (int k = 0; k < rb && row < rows; k++, row++) {
                        int id, ih;
                        bool ok = n < N;
                        if (!tr) {
                                id = od * SD - PD + kd * DD;
                                ih = oh * SH - PH + kh * DH;
                        } else {
                                int td = od + PD - kd * DD, th = oh + PH - kh * DH;
                                ok = ok && td >= 0 && th >= 0 && (SD == 1 || td % SD == 0) &&
                                     (SH == 1 || th % SH == 0);
                                id = SD == 1 ? td : td / SD;
                                ih = SH == 1 ? th : th / SH;
                        }
                        ok = ok && id >= 0 && id < ID && ih >= 0 && ih < IH;
                        const float* xr = x;
                        if (ok)
                                xr = x + (((unsigned long long)n * C + ci) * ID + id) * IH * (unsigned long long)IW +
                                     (unsigned long long)ih * IW;
                        float* cr = col + row * OW;
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
                                                okw = tw >= 0 && (SW == 1 || tw % SW == 0);
                                                iw = SW == 1 ? tw : tw / SW;
                                        }
                                        if (okw && iw < IW)
                                                v = xr[iw];
                                }
                                cr[ow] = v;
                        }
                        if (++oh == OH) {
                                oh = 0;
                                if (++od == OD) {
                                        od = 0;
                                        if (++kw == KW) {
                                                kw = 0;
                                                if (++kh == KH) {
                                                        kh = 0;
                                                        if (++kd == KD) {
                                                                kd = 0;
                                                                if (++ci == C) {
                                                                        ci = 0;
                                                                        n++;
                                                                }
                                                        }
                                                }
                                        }
                                }
                        }
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
                int k = conv_split(&r, KK);
                int c = conv_split(&r, cig);
                int co = conv_split(&r, cog);
                int g = conv_split(&r, G);
                wrep[i] = w[(((unsigned long long)g * cig + c) * cog + co) * KK + k];
        }
}

// xs[j] = x[n0 + j] for the images of a slice (per floats each; zero past image N):
// the B operand of the col2im form's GEMM for a slice after the first.
extern "C" __global__ void conv_slice(const float* __restrict__ x, float* __restrict__ xs,
        unsigned long long per, int N, int n0, unsigned long long total)
{
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        unsigned long long have = N > n0 ? (unsigned long long)(N - n0) * per : 0;
        const float* xp = x + (unsigned long long)n0 * per;
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
             i += stride)
                xs[i] = i < have ? xp[i] : 0.0f;
}

// y[n0 + j, co, :] = conv_epilogue(src[j, co, :] + bias[co]) for the images of a slice
// below N (src may be y itself: each element is read and written by one thread).
extern "C" __global__ void conv_store(const float* src, const float* __restrict__ bias,
        const float* __restrict__ ep, float* y, int N, int n0, int nb, int CO,
        unsigned long long P, int has_bias)
{
        for (unsigned long long row = blockIdx.y; row < (unsigned long long)nb * CO; row += gridDim.y) {
                unsigned long long r = row;
                int co = conv_split(&r, CO);
                long long n = n0 + (long long)r;
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
// The (kd, kh) taps are warp-uniform for a row: each adds its sum over kw to the
// warp's own row segment of y (cache-resident), then the epilogue rewrites it.
extern "C" __global__ void conv_col2im(const float* __restrict__ col, const float* __restrict__ bias,
        const float* __restrict__ ep, float* __restrict__ y, int N, int n0, int CO, int ID, int IH,
        int IW, int OD, int OH, int OW, int KD, int KH, int KW, int SD, int SH, int SW, int PD,
        int PH, int PW, int DD, int DH, int DW, int has_bias, unsigned long long rows, int spans,
        int rb)
{
        unsigned long long nw = ((unsigned long long)gridDim.x * blockDim.x) >> 5;
        unsigned long long steps = (rows + rb - 1) / rb * spans;
        unsigned long long ip = (unsigned long long)ID * IH * IW;
        int lane = threadIdx.x & 31;
        for (unsigned long long q = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
             q < steps; q += nw) {
                unsigned long long r = q;
                int w0 = conv_split(&r, spans) * CONV_SPAN;
                int wend = OW - w0 < CONV_SPAN ? OW : w0 + CONV_SPAN;
                unsigned long long row = r * rb;
                r = row;
                int oh = conv_split(&r, OH);
                int od = conv_split(&r, OD);
                int co = conv_split(&r, CO);
                unsigned long long j = r;
                for (int k = 0; k < rb && row < rows; k++, row++) {
                        long long n = n0 + (long long)j;
                        if (n < N) {
                                const float* cj = col + (j * CO + co) * (unsigned long long)KD * KH * KW * ip;
                                float* yr = y + (((unsigned long long)n * CO + co) * OD + od) * OH *
                                                (unsigned long long)OW + (unsigned long long)oh * OW;
                                float b = has_bias ? bias[co] : 0.0f;
                                for (int ow = w0 + lane; ow < wend; ow += 32)
                                        yr[ow] = b;
                                for (int kd = 0; kd < KD; kd++) {
                                        int td = od + PD - kd * DD;
                                        if (td < 0 || (SD > 1 && td % SD != 0) || td / SD >= ID)
                                                continue;
                                        for (int kh = 0; kh < KH; kh++) {
                                                int th = oh + PH - kh * DH;
                                                if (th < 0 || (SH > 1 && th % SH != 0) || th / SH >= IH)
                                                        continue;
                                                const float* ck = cj + ((unsigned long long)kd * KH + kh) * KW * ip +
                                                                  ((unsigned long long)(td / SD) * IH + th / SH) * IW;
                                                for (int ow = w0 + lane; ow < wend; ow += 32) {
                                                        float s = 0.0f;
                                                        for (int kw = 0; kw < KW; kw++) {
                                                                int tw = ow + PW - kw * DW;
                                                                if (tw < 0 || (SW > 1 && tw % SW != 0))
                                                                        continue;
                                                                int iw = SW == 1 ? tw : tw / SW;
                                                                if (iw < IW)
                                                                        s += ck[(unsigned long long)kw * ip + iw];
                                                        }
                                                        yr[ow] += s;
                                                }
                                        }
                                }
                                for (int ow = w0 + lane; ow < wend; ow += 32)
                                        yr[ow] = conv_epilogue(yr[ow], co, ep);
                        }
                        if (++oh == OH) {
                                oh = 0;
                                if (++od == OD) {
                                        od = 0;
                                        if (++co == CO) {
                                                co = 0;
                                                j++;
                                        }
                                }
                        }
                }
        }
}
