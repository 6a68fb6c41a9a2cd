"""Level 1 softmax family (KernelBench 23, 24)."""
from taskgen import make_task, buf, normal, launch, i64, problem

PARAMS = {"B": "rows (KernelBench batch_size)", "D": "row length (KernelBench dim); softmax over it"}
SHAPES = [{"name": "default", "B": 4096, "D": 393216},
          {"name": "small", "B": 129, "D": 4093},
          {"name": "tiny", "B": 5, "D": 33}]

SRC = r'''
// Reference for KernelBench level 1 problem {problem}: {what} over the last
// dimension of a row-major [B, D] fp32 tensor. One block of 1024 threads per
// row, two passes over the row (online softmax):
//   pass 1 reads the row once and keeps, per thread, the running maximum m and
//   the sum s of exp(x - m) in double, rescaling s when m grows; the pairs are
//   combined by warp shuffles, then across the 32 warps, in a fixed order;
//   pass 2 reads the row again and writes y (last chunk first, so that what
//   pass 1 left in L2 is read before it is evicted).
// Loads and stores are float4 where the row is 16-byte aligned (a scalar head
// up to the first aligned element, a scalar tail), scalar otherwise. The
// order of every sum is fixed, so the result is deterministic.
#define THREADS 1024
#define WARPS (THREADS / 32)

/* Fold element v into the running (m, s); m only grows. */
__device__ static void online_add(float v, float& m, double& s)
{{
        if (v > m) {{
                s = s * (double)expf(m - v);
                m = v;
        }}
        s += (double)expf(v - m);
}}

/* Merge (m2, s2) into (m, s); an empty side has m = -inf, s = 0. */
__device__ static void online_merge(float& m, double& s, float m2, double s2)
{{
        float mm = fmaxf(m, m2);
        double a = m == mm ? s : s * (double)expf(m - mm);
        double b = m2 == mm ? s2 : s2 * (double)expf(m2 - mm);
        m = mm;
        s = a + b;
}}

extern "C" __global__ void __launch_bounds__(THREADS) {kernel}(const float* __restrict__ x,
        float* __restrict__ y, long long D)
{{
        __shared__ float shm[WARPS];
        __shared__ double shs[WARPS];
        const float* row = x + (unsigned long long)blockIdx.x * D;
        float* out = y + (unsigned long long)blockIdx.x * D;
        /* head: elements before the first 16-byte aligned one; body: float4s */
        long long head = (long long)((16 - ((unsigned long long)row & 15)) & 15) / 4;
        if (head > D)
                head = D;
        long long nvec = (D - head) / 4;
        long long tail = head + nvec * 4;
        const float4* row4 = (const float4*)(row + head);

        float m = -__int_as_float(0x7f800000);
        double s = 0.0;
        if (threadIdx.x < head)
                online_add(row[threadIdx.x], m, s);
#pragma unroll 4
        for (long long i = threadIdx.x; i < nvec; i += THREADS) {{
                float4 v = row4[i];
                online_add(v.x, m, s);
                online_add(v.y, m, s);
                online_add(v.z, m, s);
                online_add(v.w, m, s);
        }}
        for (long long i = tail + threadIdx.x; i < D; i += THREADS)
                online_add(row[i], m, s);
        for (int o = 16; o > 0; o >>= 1) {{
                float m2 = __shfl_xor_sync(0xffffffffu, m, o);
                double s2 = __shfl_xor_sync(0xffffffffu, s, o);
                online_merge(m, s, m2, s2);
        }}
        if (threadIdx.x % 32 == 0) {{
                shm[threadIdx.x / 32] = m;
                shs[threadIdx.x / 32] = s;
        }}
        __syncthreads();
        m = shm[0];
        s = shs[0];
        for (int w = 1; w < WARPS; w++)
                online_merge(m, s, shm[w], shs[w]);
{tail_code}
}}
'''

SOFTMAX_TAIL = r'''        float inv = (float)(1.0 / s);
        if (((unsigned long long)out & 15) == ((unsigned long long)row & 15)) {
                float4* out4 = (float4*)(out + head);
#pragma unroll 4
                for (long long i = nvec - 1 - threadIdx.x; i >= 0; i -= THREADS) {
                        float4 v = row4[i];
                        out4[i] = make_float4(expf(v.x - m) * inv, expf(v.y - m) * inv,
                                              expf(v.z - m) * inv, expf(v.w - m) * inv);
                }
                if (threadIdx.x < head)
                        out[threadIdx.x] = expf(row[threadIdx.x] - m) * inv;
                for (long long i = tail + threadIdx.x; i < D; i += THREADS)
                        out[i] = expf(row[i] - m) * inv;
        } else {
                for (long long i = threadIdx.x; i < D; i += THREADS)
                        out[i] = expf(row[i] - m) * inv;
        }'''
LOGSOFTMAX_TAIL = r'''        float ls = (float)log(s);
        if (((unsigned long long)out & 15) == ((unsigned long long)row & 15)) {
                float4* out4 = (float4*)(out + head);
#pragma unroll 4
                for (long long i = nvec - 1 - threadIdx.x; i >= 0; i -= THREADS) {
                        float4 v = row4[i];
                        out4[i] = make_float4((v.x - m) - ls, (v.y - m) - ls, (v.z - m) - ls,
                                              (v.w - m) - ls);
                }
                if (threadIdx.x < head)
                        out[threadIdx.x] = (row[threadIdx.x] - m) - ls;
                for (long long i = tail + threadIdx.x; i < D; i += THREADS)
                        out[i] = (row[i] - m) - ls;
        } else {
                for (long long i = threadIdx.x; i < D; i += THREADS)
                        out[i] = (row[i] - m) - ls;
        }'''


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
        src = SRC.format(problem=problem(num)["problem"], what=what, kernel=kernel, tail_code=tail)
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
            reference_note="one block per row, two passes over the row (online maximum and "
                           "exponential sum, the sum in double; then the write), float4 "
                           "loads; PyTorch eager calls cunn_SoftMaxForward",
            example=(EXAMPLE, [launch("softmax_rows", ["B"], [256], ["x", "y", i64("D")])])
            if num == 23 else None))
    return out
