"""Level 1 losses (KernelBench 94, 95, 96, 98, 99, 100): scalar outputs, deterministic references."""
from taskgen import make_task, buf, normal, uniform, intdist, launch, i32, i64, u64, f32, scratch, problem

FINAL = r'''
// Stage 2: one block sums the n partials in a fixed order (strided per-thread
// sums, then a shared-memory tree) and writes out[0] = sum / divisor.
extern "C" __global__ void __launch_bounds__(1024) loss_final(const double* __restrict__ part,
        int n, long long divisor, float* __restrict__ out)
{
        __shared__ double sh[1024];
        double a = 0.0;
        for (int i = threadIdx.x; i < n; i += 1024)
                a += part[i];
        sh[threadIdx.x] = a;
        __syncthreads();
        for (int k = 512; k > 0; k >>= 1) {
                if (threadIdx.x < k)
                        sh[threadIdx.x] += sh[threadIdx.x + k];
                __syncthreads();
        }
        if (threadIdx.x == 0)
                out[0] = (float)(sh[0] / (double)divisor);
}
'''

ELEM = r'''
// Reference for KernelBench level 1 problem {problem}: {what}
// Stage 1 (loss_partial): 1024 blocks of 256 threads; block k takes rows k,
// k + 1024, ... and sums their per-element loss in double into part[k]
// (per-thread sums in a fixed order, then a shared-memory tree; no atomics).
// A row is read with float4 loads when it and its target row are 16-byte
// aligned (the tail of a row whose length is not a multiple of 4 scalar),
// with scalar loads otherwise.
{helpers}
__device__ static double term(float pf, float tf)
{{
        {decl}
        return {term};
}}

extern "C" __global__ void __launch_bounds__(256) loss_partial(const float* __restrict__ p,
        const float* __restrict__ t, double* __restrict__ part, unsigned long long n, long long D)
{{
        __shared__ double sh[256];
        double a = 0.0;
        long long B = (long long)(n / (unsigned long long)D);
        for (long long b = blockIdx.x; b < B; b += gridDim.x) {{
                const float* pr = p + (unsigned long long)b * D;
                const float* tr = t + {trow};
                long long d0 = 0;
                if ((((unsigned long long)pr | (unsigned long long)tr) & 15) == 0) {{
                        const float4* p4 = (const float4*)pr;
                        const float4* t4 = (const float4*)tr;
                        for (long long i = threadIdx.x; i < D / 4; i += 256) {{
                                float4 u = p4[i], v = t4[i];
                                a += term(u.x, v.x) + term(u.y, v.y) + term(u.z, v.z) +
                                     term(u.w, v.w);
                        }}
                        d0 = D / 4 * 4;
                }}
                for (long long i = d0 + threadIdx.x; i < D; i += 256)
                        a += term(pr[i], tr[i]);
        }}
        sh[threadIdx.x] = a;
        __syncthreads();
        for (int k = 128; k > 0; k >>= 1) {{
                if (threadIdx.x < k)
                        sh[threadIdx.x] += sh[threadIdx.x + k];
                __syncthreads();
        }}
        if (threadIdx.x == 0)
                part[blockIdx.x] = sh[0];
}}
'''

ROW = r'''
// Reference for KernelBench level 1 problem {problem}: {what}
// Stage 1 (loss_rows): one block of 256 threads per row computes that row's
// loss in double into part[row]; stage 2 sums the rows in a fixed order.
{body}
'''

DET = (" The reference is deterministic (fixed reduction order, no atomics). kevald runs every "
       "candidate twice on the same inputs and requires bit-identical outputs, so a candidate "
       "that accumulates with floating-point atomics (order-dependent) is judged "
       "nondeterministic: use a fixed-order reduction (per-block partials in scratch, then a "
       "final pass).")

TOL = {"atol": 1e-6, "rtol": 1e-5}
TNOTE = ("Scalar mean over up to 1e9 terms: rtol 1e-5 admits any float tree/blocked reduction "
         "(relative error ~1e-6) but not a naive sequential float sum, and is tight enough that "
         "a hard-coded constant fails (the mean fluctuates from seed to seed by more than 1e-5 "
         "at the small sizes). The reference accumulates in double.")

BD = {"B": "rows (batch_size)", "D": "row length (input_shape[0])"}
SH = [{"name": "default", "B": 32768, "D": 32768},
      {"name": "small", "B": 129, "D": 4093},
      {"name": "tiny", "B": 3, "D": 33}]


MSE_EXAMPLE = r'''
// A minimal correct candidate: 512 blocks write per-block partial sums to
// scratch (float per thread, double per block), one block adds them in a fixed
// order. No atomics, so the result is the same bits on every run.
extern "C" __global__ void mse_partial(const float* p, const float* t, double* part,
                                       unsigned long long n)
{
        __shared__ double sh[256];
        float a = 0.0f;
        for (unsigned long long i = (unsigned long long)blockIdx.x * 256 + threadIdx.x; i < n;
             i += 512ull * 256) {
                float d = p[i] - t[i];
                a += d * d;
        }
        sh[threadIdx.x] = a;
        __syncthreads();
        for (int s = 128; s > 0; s >>= 1) {
                if (threadIdx.x < s)
                        sh[threadIdx.x] += sh[threadIdx.x + s];
                __syncthreads();
        }
        if (threadIdx.x == 0)
                part[blockIdx.x] = sh[0];
}

extern "C" __global__ void mse_final(const double* part, float* loss, unsigned long long n)
{
        if (threadIdx.x == 0) {
                double s = 0.0;
                for (int i = 0; i < 512; i++)
                        s += part[i];
                loss[0] = (float)(s / (double)n);
        }
}
'''


def elem_loss(num, title, what, math, term, pinit, tinit, tshape=("B", "D"), trow="(unsigned long long)b * D",
              flops_per=3, note="", example=None):
    decl = "double pv = pf, tv = tf;" if "pv" in term else "double tv = tf;"
    src = ELEM.format(problem=problem(num)["problem"], what=what, helpers="", term=term, trow=trow,
                      decl=decl) + FINAL
    tbytes = "4 * D" if list(tshape) == ["D"] else "4 * B * D"
    return make_task(
        num, "loss", title,
        title + ": " + math + ". predictions p is a row-major fp32 matrix [B, D]; the output "
        "loss is an fp32 scalar (shape []). " + note + DET,
        BD, SH,
        [buf("p", ["B", "D"], "in", init=pinit), buf("t", list(tshape), "in", init=tinit),
         buf("loss", [], "out")],
        src,
        [launch("loss_partial", [1024], [256], ["p", "t", "part", u64("B * D"), i64("D")]),
         launch("loss_final", [1], [1024], ["part", i32(1024), i64("B * D"), "loss"])],
        scratch_bufs=[scratch("part", "f64", 1024)],
        tolerance=TOL, tolerance_note=TNOTE,
        flops="%d * B * D" % flops_per, bytes_="4 * B * D + %s + 4" % tbytes, trials=2,
        reference_note="two-stage deterministic reduction in double, float4 loads (logarithms "
                       "in float: logf, then double); PyTorch eager runs elementwise kernels "
                       "and a mean reduction", example=example)


def tasks():
    out = []
    out.append(elem_loss(
        94, "Mean squared error loss", "loss = mean((p - t)^2).",
        "loss = (1 / (B*D)) * sum_{b,d} (p[b, d] - t[b, d])^2 (torch.mean((p - t) ** 2)); "
        "targets t have shape [B, D]", "(pv - tv) * (pv - tv)", normal(0, 1), normal(0, 1),
        note="Inputs: p and t normal(0, 1).",
        example=(MSE_EXAMPLE,
                 [launch("mse_partial", [512], [256], ["p", "t", "part", u64("B * D")]),
                  launch("mse_final", [1], [32], ["part", "loss", u64("B * D")])],
                 [scratch("part", "f64", 512)])))
    out.append(elem_loss(
        96, "Smooth L1 (Huber) loss", "loss = mean(smooth_l1(p - t)), beta = 1.",
        "with d = p[b, d] - t[b, d], l = 0.5 * d^2 if |d| < 1 else |d| - 0.5; loss = mean of l "
        "over all B*D elements (torch.nn.functional.smooth_l1_loss, beta = 1, reduction = mean); "
        "targets t have shape [B, D]",
        "(fabs(pv - tv) < 1.0 ? 0.5 * (pv - tv) * (pv - tv) : fabs(pv - tv) - 0.5)",
        normal(0, 2), normal(0, 1), flops_per=5,
        note="Inputs: p normal(0, 2), t normal(0, 1), so both branches occur."))
    out.append(elem_loss(
        100, "Hinge loss", "loss = mean(max(0, 1 - p * t)) with t broadcast along rows.",
        "loss = (1 / (B*D)) * sum_{b,d} max(0, 1 - p[b, d] * t[d]) (torch.mean(torch.clamp(1 - "
        "p * t, min=0))); t has shape [D] and broadcasts over the rows (KernelBench writes it "
        "as shape (batch_size,) with batch_size == D)",
        "fmax(0.0, 1.0 - pv * tv)", normal(0, 1), uniform(-1, 1), tshape=("D",),
        trow="0", flops_per=3,
        note="Inputs: p normal(0, 1); t uniform(-1, 1) (KernelBench draws t from {-1, +1}; "
             "continuous t keeps the clamp active for about a third of the elements)."))
    out.append(elem_loss(
        98, "KL divergence loss (batchmean)", "loss = sum(t * (log t - log p)) / B.",
        "loss = (1 / B) * sum_{b,d} t[b, d] * (log(t[b, d]) - log(p[b, d])) "
        "(torch.nn.functional.kl_div(torch.log(p), t, reduction='batchmean')); t has shape [B, D]; "
        "all inputs are strictly positive",
        "tv * ((double)logf(tf) - (double)logf(pf))", uniform(0.05, 1.05), uniform(0.05, 1.05),
        flops_per=4,
        note="Inputs: p and t uniform[0.05, 1.05) (strictly positive; KernelBench feeds row "
             "softmaxes, for which the same formula applies; rows need not sum to 1 here)."))
    # divisor: B*D except KL (B)
    for cat, task, files in out:
        inv = "B" if task["name"].startswith("l1_98_") else "B * D"
        st = task["reference"]["plan"][1]
        # loss_final takes the divisor as an integer and divides in double
        st["args"][2] = i64(inv)
    out.append(cross_entropy())
    out.append(triplet())
    return out


CE_BODY = r'''extern "C" __global__ void __launch_bounds__(256) loss_rows(const float* __restrict__ x,
        const long long* __restrict__ target, double* __restrict__ part, int C)
{
        __shared__ double sh[256];
        __shared__ float shm[256];
        const float* row = x + (unsigned long long)blockIdx.x * C;
        float m = -__int_as_float(0x7f800000);
        for (int i = threadIdx.x; i < C; i += 256)
                m = fmaxf(m, row[i]);
        shm[threadIdx.x] = m;
        __syncthreads();
        for (int k = 128; k > 0; k >>= 1) {
                if (threadIdx.x < k)
                        shm[threadIdx.x] = fmaxf(shm[threadIdx.x], shm[threadIdx.x + k]);
                __syncthreads();
        }
        m = shm[0];
        double s = 0.0;
        for (int i = threadIdx.x; i < C; i += 256)
                s += exp((double)row[i] - (double)m);
        sh[threadIdx.x] = s;
        __syncthreads();
        for (int k = 128; k > 0; k >>= 1) {
                if (threadIdx.x < k)
                        sh[threadIdx.x] += sh[threadIdx.x + k];
                __syncthreads();
        }
        if (threadIdx.x == 0) {
                long long t = target[blockIdx.x];
                /* loss_b = logsumexp(x_b) - x_b[t_b] */
                part[blockIdx.x] = (double)m + log(sh[0]) - (double)row[t];
        }
}'''


def cross_entropy():
    num = 95
    src = ROW.format(problem=problem(num)["problem"],
                     what="loss = mean_b (logsumexp(x[b, :]) - x[b, target[b]]).", body=CE_BODY) + FINAL
    return make_task(
        num, "loss", "Cross-entropy loss",
        "Cross-entropy loss over C classes (torch.nn.functional.cross_entropy(x, target), "
        "reduction = mean, no weights, no label smoothing): loss = (1/B) * sum_b (log(sum_c "
        "exp(x[b, c])) - x[b, target[b]]). x (logits) is a row-major fp32 matrix [B, C]; "
        "target is an int64 vector [B] with values in [0, C); the output loss is an fp32 "
        "scalar (shape []). Inputs: logits normal(0, 3)." + DET,
        {"B": "rows (batch_size)", "C": "classes (num_classes)"},
        [{"name": "default", "B": 32768, "C": 4096},
         {"name": "small", "B": 129, "C": 1000},
         {"name": "tiny", "B": 3, "C": 33}],
        [buf("x", ["B", "C"], "in", init=normal(0, 3)),
         buf("target", ["B"], "in", dtype="i64", init=intdist(0, "C")),
         buf("loss", [], "out")],
        src,
        [launch("loss_rows", ["B"], [256], ["x", "target", "part", i32("C")]),
         launch("loss_final", [1], [1024], ["part", i32("B"), i64("B"), "loss"])],
        scratch_bufs=[scratch("part", "f64", "B")],
        tolerance=TOL, tolerance_note=TNOTE, flops="4 * B * C", bytes_="4 * B * C + 8 * B + 4",
        trials=3,
        reference_note="one block per row (logsumexp in double), then a fixed-order mean; "
                       "PyTorch eager runs log_softmax and nll_loss; KernelBench draws logits "
                       "uniform[0, 1), which makes the loss nearly constant (~log C): here "
                       "normal(0, 3)")


TRIPLET_BODY = r'''extern "C" __global__ void __launch_bounds__(256) loss_rows(const float* __restrict__ a,
        const float* __restrict__ p, const float* __restrict__ q, double* __restrict__ part,
        long long D, float margin, float eps)
{
        __shared__ double s1[256], s2[256];
        unsigned long long off = (unsigned long long)blockIdx.x * D;
        double dp = 0.0, dn = 0.0;
        for (long long i = threadIdx.x; i < D; i += 256) {
                double av = a[off + i];
                double u = av - (double)p[off + i] + (double)eps;
                double v = av - (double)q[off + i] + (double)eps;
                dp += u * u;
                dn += v * v;
        }
        s1[threadIdx.x] = dp;
        s2[threadIdx.x] = dn;
        __syncthreads();
        for (int k = 128; k > 0; k >>= 1) {
                if (threadIdx.x < k) {
                        s1[threadIdx.x] += s1[threadIdx.x + k];
                        s2[threadIdx.x] += s2[threadIdx.x + k];
                }
                __syncthreads();
        }
        if (threadIdx.x == 0) {
                double l = sqrt(s1[0]) - sqrt(s2[0]) + (double)margin;
                part[blockIdx.x] = l > 0.0 ? l : 0.0;
        }
}'''


def triplet():
    num = 99
    src = ROW.format(problem=problem(num)["problem"],
                     what="triplet margin loss, margin 1, p = 2, eps = 1e-6.", body=TRIPLET_BODY) + FINAL
    return make_task(
        num, "loss", "Triplet margin loss",
        "Triplet margin loss (torch.nn.TripletMarginLoss(margin=1.0), p = 2, eps = 1e-6, "
        "reduction = mean): for each row b, d_ap = sqrt(sum_i (a[b, i] - p[b, i] + eps)^2), "
        "d_an = sqrt(sum_i (a[b, i] - n[b, i] + eps)^2) (torch.pairwise_distance adds eps to the "
        "difference), l_b = max(d_ap - d_an + 1, 0); loss = (1/B) * sum_b l_b. a (anchor), p "
        "(positive) and n (negative) are row-major fp32 matrices [B, D]; the output loss is an "
        "fp32 scalar (shape []). Inputs: all normal(0, 1), so the clamp is active for some rows."
        + DET,
        {"B": "rows (batch_size)", "D": "embedding length (input_shape[0])"},
        [{"name": "default", "B": 32768, "D": 8192},
         {"name": "small", "B": 129, "D": 4093},
         {"name": "tiny", "B": 3, "D": 33}],
        [buf("a", ["B", "D"], "in", init=normal(0, 1)), buf("p", ["B", "D"], "in", init=normal(0, 1)),
         buf("n", ["B", "D"], "in", init=normal(0, 1)), buf("loss", [], "out")],
        src,
        [launch("loss_rows", ["B"], [256], ["a", "p", "n", "part", i64("D"), f32(1.0), f32(1e-6)]),
         launch("loss_final", [1], [1024], ["part", i32("B"), i64("B"), "loss"])],
        scratch_bufs=[scratch("part", "f64", "B")],
        tolerance=TOL, tolerance_note=TNOTE, flops="8 * B * D", bytes_="12 * B * D + 4",
        trials=2,
        reference_note="one block per row (both distances in double), then a fixed-order mean; "
                       "PyTorch eager runs pairwise_distance twice, clamp_min and mean")
