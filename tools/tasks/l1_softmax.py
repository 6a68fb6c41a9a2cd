"""Level 1 softmax family (KernelBench 23, 24)."""
from taskgen import make_task, buf, normal, launch, i64, problem

PARAMS = {"B": "rows (KernelBench batch_size)", "D": "row length (KernelBench dim); softmax over it"}
SHAPES = [{"name": "default", "B": 4096, "D": 393216},
          {"name": "small", "B": 129, "D": 4093},
          {"name": "tiny", "B": 5, "D": 33}]

SRC = r'''
// Reference for KernelBench level 1 problem {problem}: {what} over the last
// dimension of a row-major [B, D] fp32 tensor. One block of 1024 threads per
// row: pass 1 finds the row maximum, pass 2 sums exp(x - max) in double (fixed
// order: per-thread strided sums, then a shared-memory tree), pass 3 writes.
#define THREADS 1024

__device__ static float block_max(float v, float* sh)
{{
        sh[threadIdx.x] = v;
        __syncthreads();
        for (int s = THREADS / 2; s > 0; s >>= 1) {{
                if (threadIdx.x < s)
                        sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + s]);
                __syncthreads();
        }}
        float r = sh[0];
        __syncthreads();
        return r;
}}

__device__ static double block_sum(double v, double* sh)
{{
        sh[threadIdx.x] = v;
        __syncthreads();
        for (int s = THREADS / 2; s > 0; s >>= 1) {{
                if (threadIdx.x < s)
                        sh[threadIdx.x] += sh[threadIdx.x + s];
                __syncthreads();
        }}
        double r = sh[0];
        __syncthreads();
        return r;
}}

extern "C" __global__ void __launch_bounds__(THREADS) {kernel}(const float* __restrict__ x,
        float* __restrict__ y, long long D)
{{
        __shared__ float shf[THREADS];
        __shared__ double shd[THREADS];
        const float* row = x + (unsigned long long)blockIdx.x * D;
        float* out = y + (unsigned long long)blockIdx.x * D;
        float m = -__int_as_float(0x7f800000);
        for (long long i = threadIdx.x; i < D; i += THREADS)
                m = fmaxf(m, row[i]);
        m = block_max(m, shf);
        double s = 0.0;
        for (long long i = threadIdx.x; i < D; i += THREADS)
                s += exp((double)row[i] - (double)m);
        s = block_sum(s, shd);
{tail}
}}
'''

SOFTMAX_TAIL = r'''        for (long long i = threadIdx.x; i < D; i += THREADS)
                out[i] = (float)(exp((double)row[i] - (double)m) / s);'''
LOGSOFTMAX_TAIL = r'''        double ls = log(s);
        for (long long i = threadIdx.x; i < D; i += THREADS)
                out[i] = (float)((double)row[i] - (double)m - ls);'''


EXAMPLE = r'''
// A minimal correct candidate: one block of 256 threads per row, float math.
// Pass 1: row max; pass 2: sum of exp(x - max); pass 3: write.
extern "C" __global__ void softmax_rows(const float* x, float* y, long long D)
{
        __shared__ float sh[256];
        const float* row = x + (unsigned long long)blockIdx.x * D;
        float* out = y + (unsigned long long)blockIdx.x * D;
        float m = -3.0e38f;
        for (long long i = threadIdx.x; i < D; i += 256)
                m = fmaxf(m, row[i]);
        sh[threadIdx.x] = m;
        __syncthreads();
        for (int s = 128; s > 0; s >>= 1) {
                if (threadIdx.x < s)
                        sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + s]);
                __syncthreads();
        }
        m = sh[0];
        __syncthreads();
        float sum = 0.0f;
        for (long long i = threadIdx.x; i < D; i += 256)
                sum += expf(row[i] - m);
        sh[threadIdx.x] = sum;
        __syncthreads();
        for (int s = 128; s > 0; s >>= 1) {
                if (threadIdx.x < s)
                        sh[threadIdx.x] += sh[threadIdx.x + s];
                __syncthreads();
        }
        float inv = 1.0f / sh[0];
        for (long long i = threadIdx.x; i < D; i += 256)
                out[i] = expf(row[i] - m) * inv;
}
'''


def tasks():
    out = []
    for num, kernel, title, what, tail, math, tol, tnote in [
        (23, "softmax_ref", "Softmax over the last dimension", "softmax", SOFTMAX_TAIL,
         "y[b, i] = exp(x[b, i] - m_b) / sum_j exp(x[b, j] - m_b), m_b = max_j x[b, j] "
         "(torch.softmax(x, dim=1))",
         {"atol": 1e-10, "rtol": 1e-4},
         "Outputs are tiny (about 1/D, down to ~1e-12 at the default D = 393216): atol 1e-10 "
         "so that an all-zero or constant output fails; rtol 1e-4 admits float sums and "
         "fast-math exp."),
        (24, "log_softmax_ref", "LogSoftmax over the last dimension", "log-softmax",
         LOGSOFTMAX_TAIL,
         "y[b, i] = x[b, i] - m_b - log(sum_j exp(x[b, j] - m_b)), m_b = max_j x[b, j] "
         "(torch.log_softmax(x, dim=1))",
         {"atol": 1e-4, "rtol": 1e-4}, None),
    ]:
        src = SRC.format(problem=problem(num)["problem"], what=what, kernel=kernel, tail=tail)
        desc = (title + " of a row-major fp32 tensor x of shape [B, D]: " + math +
                ". y has shape [B, D]. Subtracting the row maximum keeps exp() finite; "
                "inputs are normal(0, 2). Rows are long (D = 393216 at the default size, "
                "B*D > 2^31: use 64-bit offsets).")
        out.append(make_task(
            num, "softmax", title, desc, PARAMS, SHAPES,
            [buf("x", ["B", "D"], "in", init=normal(0, 2)), buf("y", ["B", "D"], "out")],
            src, [launch(kernel, ["B"], [1024], ["x", "y", i64("D")])],
            tolerance=tol, tolerance_note=tnote,
            flops="5 * B * D", bytes_="8 * B * D", trials=2,
            reference_note="one block per row, three passes over the row, the exponential "
                           "sum in double; PyTorch eager calls cunn_SoftMaxForward",
            example=(EXAMPLE, [launch("softmax_rows", ["B"], [256], ["x", "y", i64("D")])])
            if num == 23 else None))
    return out
