"""Level 1 scans (KernelBench 89-93)."""
from taskgen import make_task, buf, uniform, intdist, launch, i64, problem

PARAMS = {"B": "rows (batch_size)", "L": "row length (input_shape[0]); the scan runs along it"}
SHAPES = [{"name": "default", "B": 32768, "L": 32768},
          {"name": "small", "B": 65, "L": 10007},
          {"name": "tiny", "B": 3, "L": 33}]

SRC = r'''
// Reference for KernelBench level 1 problem {problem}: {what}
// One block of 256 threads per row; the row is read in chunks of
// 256 * 4 * UNROLL elements, in {direction} scan order. Each thread owns 4
// consecutive scan positions of each of the chunk's UNROLL tiles and loads
// all of them (float4 where the row is 16-byte aligned, else scalars) before
// scanning any: the loads of a chunk are in flight together (as floats, the
// mask applied; x * 0 and x * 1 are exact). Per tile: the thread combines its
// 4 elements in double, a warp shuffle scan and a scan of
// the 8 warp totals give each thread its offset, and a carry moves from tile
// to tile. Deterministic, and exact to double precision.
#define THREADS 256
#define WARPS (THREADS / 32)
#define UNROLL 4
#define REVERSE {reverse}

/* The 4 elements at scan positions j .. j+3 (identity past the row's end). */
__device__ static void load4(const float* __restrict__ xr, {mask_param_dev}long long L, long long j,
                             float* e)
{{
        long long p0 = REVERSE ? L - 4 - j : j;   /* lowest memory index of the 4 */
        if (j + 4 <= L && (((unsigned long long)(xr + p0)) & 15) == 0) {{
                float4 v = *(const float4*)(xr + p0);
                float a[4] = {{v.x, v.y, v.z, v.w}};
#pragma unroll
                for (int k = 0; k < 4; k++)
                        e[k] = a[REVERSE ? 3 - k : k]{mask_mul_vec};
        }} else {{
#pragma unroll
                for (int k = 0; k < 4; k++) {{
                        long long i = REVERSE ? L - 1 - (j + k) : j + k;
                        e[k] = j + k < L ? xr[i]{mask_mul} : {ident}f;
                }}
        }}
}}

/* Write the 4 results for scan positions j .. j+3 (those inside the row). */
__device__ static void store4(float* __restrict__ yr, long long L, long long j, const float* r)
{{
        long long p0 = REVERSE ? L - 4 - j : j;
        if (j + 4 <= L && (((unsigned long long)(yr + p0)) & 15) == 0) {{
                *(float4*)(yr + p0) = REVERSE ? make_float4(r[3], r[2], r[1], r[0])
                                              : make_float4(r[0], r[1], r[2], r[3]);
        }} else {{
#pragma unroll
                for (int k = 0; k < 4; k++)
                        if (j + k < L)
                                yr[REVERSE ? L - 1 - (j + k) : j + k] = r[k];
        }}
}}

extern "C" __global__ void __launch_bounds__(THREADS) {kernel}(const float* __restrict__ x,
        {mask_param}float* __restrict__ y, long long L)
{{
        __shared__ double warp_tot[2][WARPS];
        unsigned long long row = (unsigned long long)blockIdx.x * L;
        const float* xr = x + row;
        float* yr = y + row;
{mask_row}        int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
        double carry = {ident};
        int parity = 0;
        for (long long c0 = 0; c0 < L; c0 += (long long)THREADS * 4 * UNROLL) {{
                float e[UNROLL][4];
#pragma unroll
                for (int u = 0; u < UNROLL; u++)
                        load4(xr, {mask_arg}L, c0 + ((long long)u * THREADS + threadIdx.x) * 4, e[u]);
#pragma unroll
                for (int u = 0; u < UNROLL; u++) {{
                        long long j = c0 + ((long long)u * THREADS + threadIdx.x) * 4;
                        if (c0 + (long long)u * THREADS * 4 >= L)
                                continue;               /* uniform across the block */
                        double local = (double)e[u][0] {op} (double)e[u][1] {op} (double)e[u][2] {op}
                                       (double)e[u][3];
                        double incl = local;            /* inclusive scan over the warp */
#pragma unroll
                        for (int o = 1; o < 32; o <<= 1) {{
                                double v = __shfl_up_sync(0xffffffffu, incl, o);
                                if (lane >= o)
                                        incl = v {op} incl;
                        }}
                        if (lane == 31)
                                warp_tot[parity][warp] = incl;
                        __syncthreads();
                        double before = carry, total = carry;
                        for (int w = 0; w < WARPS; w++) {{
                                if (w < warp)
                                        before = before {op} warp_tot[parity][w];
                                total = total {op} warp_tot[parity][w];
                        }}
                        double excl = __shfl_up_sync(0xffffffffu, incl, 1);
                        double run = lane > 0 ? before {op} excl : before;
                        float r[4];
#pragma unroll
                        for (int k = 0; k < 4; k++) {{
{emit}
                        }}
                        store4(yr, L, j, r);
                        carry = total;
                        parity ^= 1;
                }}
        }}
}}
'''

INCL = ("                                run = run {op} (double)e[u][k];\n"
        "                                r[k] = (float)run;")
EXCL = ("                                r[k] = (float)run;\n"
        "                                run = run {op} (double)e[u][k];")


def scan_task(num, kernel, title, what, math, torch_desc, op="+", reverse=False, exclusive=False,
              masked=False, init=None, tol=None, tnote=None, note=""):
    ident = "1.0" if op == "*" else "0.0"
    src = SRC.format(problem=problem(num)["problem"], what=what, kernel=kernel,
                     direction="reverse" if reverse else "forward", reverse=1 if reverse else 0,
                     mask_param="const unsigned char* __restrict__ mask, " if masked else "",
                     mask_param_dev="const unsigned char* __restrict__ mr, " if masked else "",
                     mask_row=("        const unsigned char* mr = mask + row;\n" if masked else ""),
                     mask_arg="mr, " if masked else "",
                     mask_mul=" * (float)(mr[i] != 0)" if masked else "",
                     mask_mul_vec=(" * (float)(mr[p0 + (REVERSE ? 3 - k : k)] != 0)"
                                   if masked else ""),
                     ident=ident, op=op,
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
        [launch(kernel, ["B"], [256], args)],
        tolerance=tol, tolerance_note=tnote,
        flops="B * L", bytes_="%d * B * L" % (9 if masked else 8), trials=2,
        reference_note=("one block per row, tiled block scan in double (float4 loads, all the "
                        "loads of a 16 KiB chunk in flight before its scan, warp-shuffle scans); "
                        "PyTorch eager calls "
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
