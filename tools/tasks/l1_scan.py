"""Level 1 scans (KernelBench 89-93)."""
from taskgen import make_task, buf, uniform, intdist, launch, i64, problem

PARAMS = {"B": "rows (batch_size)", "L": "row length (input_shape[0]); the scan runs along it"}
SHAPES = [{"name": "default", "B": 32768, "L": 32768},
          {"name": "small", "B": 65, "L": 10007},
          {"name": "tiny", "B": 3, "L": 33}]

SRC = r'''
// Reference for KernelBench level 1 problem {problem}: {what}
// One block of 1024 threads per row. The row is processed in tiles of
// 1024 * 8 elements (in {direction} order): each thread combines its 8
// consecutive elements in double, a Hillis-Steele scan over the 1024 thread
// totals (double, shared memory) gives each thread its offset, and a carry
// moves from tile to tile. Deterministic, and exact to double precision.
#define THREADS 1024
#define ITEMS 8

extern "C" __global__ void __launch_bounds__(THREADS) {kernel}(const float* __restrict__ x,
        {mask_param}float* __restrict__ y, long long L)
{{
        __shared__ double sh[THREADS];
        unsigned long long row = (unsigned long long)blockIdx.x * L;
        double carry = {ident};
        for (long long t0 = 0; t0 < L; t0 += (long long)THREADS * ITEMS) {{
                double v[ITEMS];
                double local = {ident};
                for (int k = 0; k < ITEMS; k++) {{
                        long long j = t0 + (long long)threadIdx.x * ITEMS + k;  /* scan position */
                        double e = {ident};
                        if (j < L) {{
                                long long i = {pos};                       /* element index */
                                e = {load};
                        }}
                        v[k] = e;
                        local = local {op} e;
                }}
                sh[threadIdx.x] = local;
                __syncthreads();
                for (int s = 1; s < THREADS; s <<= 1) {{
                        double add = threadIdx.x >= s ? sh[threadIdx.x - s] : {ident};
                        __syncthreads();
                        sh[threadIdx.x] = sh[threadIdx.x] {op} add;
                        __syncthreads();
                }}
                double run = carry {op} (threadIdx.x > 0 ? sh[threadIdx.x - 1] : {ident});
                for (int k = 0; k < ITEMS; k++) {{
                        long long j = t0 + (long long)threadIdx.x * ITEMS + k;
                        if (j < L) {{
                                long long i = {pos};
{emit}
                        }}
                }}
                carry = carry {op} sh[THREADS - 1];
                __syncthreads();
        }}
}}
'''

INCL = ("                                run = run {op} v[k];\n"
        "                                y[row + i] = (float)run;")
EXCL = ("                                y[row + i] = (float)run;\n"
        "                                run = run {op} v[k];")


def scan_task(num, kernel, title, what, math, torch_desc, op="+", reverse=False, exclusive=False,
              masked=False, init=None, tol=None, tnote=None, note=""):
    ident = "1.0" if op == "*" else "0.0"
    pos = "L - 1 - j" if reverse else "j"
    load = "(double)x[row + i]" + (" * (double)(mask[row + i] != 0)" if masked else "")
    src = SRC.format(problem=problem(num)["problem"], what=what, kernel=kernel,
                     direction="reverse" if reverse else "forward",
                     mask_param="const unsigned char* __restrict__ mask, " if masked else "",
                     ident=ident, pos=pos, load=load, op=op,
                     emit=(EXCL if exclusive else INCL).format(op=op))
    bufs = [buf("x", ["B", "L"], "in", init=init or uniform(0.0, 1.0))]
    args = ["x"]
    if masked:
        bufs.append(buf("mask", ["B", "L"], "in", dtype="u8", init=intdist(0, 2)))
        args.append("mask")
    bufs.append(buf("y", ["B", "L"], "out"))
    args += ["y", i64("L")]
    desc = (title + " along dimension 1 of a row-major fp32 matrix x of shape [B, L]: " + math +
            ". y has shape [B, L], fp32. %s Rows are long (L = 32768 at the default size): "
            "accumulate carefully; the reference accumulates in double." % note)
    return make_task(
        num, "scan", title, desc, PARAMS, SHAPES, bufs, src,
        [launch(kernel, ["B"], [1024], args)],
        tolerance=tol, tolerance_note=tnote,
        flops="B * L", bytes_="%d * B * L" % (9 if masked else 8), trials=2,
        reference_note=("one block per row, tiled block scan in double; PyTorch eager calls "
                        "%s" % torch_desc))


def tasks():
    ptol = {"atol": 1e-6, "rtol": 1e-4}
    return [
        scan_task(89, "cumsum_ref", "Inclusive prefix sum (cumsum)",
                  "y = torch.cumsum(x, dim=1).", "y[b, i] = sum_{j <= i} x[b, j]",
                  "its cub-based scan (torch.cumsum)",
                  note="Inputs are uniform[0, 1) as in KernelBench, so sums grow to ~L/2."),
        scan_task(90, "cumprod_ref", "Inclusive prefix product (cumprod)",
                  "y = torch.cumprod(x, dim=1).", "y[b, i] = prod_{j <= i} x[b, j]",
                  "its scan (torch.cumprod)", op="*", init=uniform(0.99, 1.01), tol=ptol,
                  tnote="Products of up to 32768 factors: rtol 1e-4 admits float products "
                        "combined in any order (relative error ~sqrt(L) * 6e-8).",
                  note="Inputs are uniform[0.99, 1.01) (KernelBench draws uniform[0, 1), whose "
                       "products underflow to 0 after a few dozen elements: a degenerate task), "
                       "so the products stay within about e^-6 .. e^6."),
        scan_task(91, "cumsum_reverse_ref", "Reverse cumulative sum",
                  "y = torch.cumsum(x.flip(1), dim=1).flip(1).",
                  "y[b, i] = sum_{j >= i} x[b, j]", "flip, cumsum, flip", reverse=True,
                  note="Inputs are uniform[0, 1)."),
        scan_task(92, "cumsum_exclusive_ref", "Exclusive prefix sum",
                  "y[b, i] = sum_{j < i} x[b, j], y[b, 0] = 0.",
                  "y[b, 0] = 0 and y[b, i] = sum_{j < i} x[b, j] for i >= 1", "cat and cumsum",
                  exclusive=True,
                  note="Inputs are uniform[0, 1). (KernelBench's module slices [:-1] on the batch "
                       "dimension instead of the scanned one, returning [B-1, L+1]; this task "
                       "computes the intended exclusive scan with the input's shape.)"),
        scan_task(93, "masked_cumsum_ref", "Masked cumulative sum",
                  "y = torch.cumsum(x * mask, dim=1) with a boolean mask.",
                  "y[b, i] = sum_{j <= i, mask[b, j] != 0} x[b, j]; mask is a u8 tensor of "
                  "the same shape holding 0 or 1 (a torch.bool tensor's bytes)",
                  "a multiply and cumsum", masked=True,
                  note="Inputs: x uniform[0, 1), mask uniform over {0, 1}."),
    ]
