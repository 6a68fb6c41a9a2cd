"""Level 1 matrix multiplications (KernelBench 1-18): cuBLAS references (TF32 off)."""
from taskgen import make_task, buf, uniform, launch, gemm, i32, u64, scratch, problem

TOL = {"atol": 1e-4, "rtol": 1e-4}
TNOTE = ("A is uniform(-1, 1) and B uniform(-1, 1)/sqrt(K) (PyTorch's fan_in scaling), so "
         "outputs are O(0.3) at every K and one absolute tolerance fits all shape sets. Two "
         "correct fp32 GEMMs that accumulate in different orders differ by ~6e-8*sqrt(K)*0.3 "
         "(2e-6 at K = 8192), far inside 1e-4. TF32 tensor-core math (10-bit mantissa) errs by "
         "~2e-4 and fails: the contract is fp32 (3xTF32 error compensation passes).")
NOTE_CUBLAS = ("cuBLAS SGEMM with TF32 off, as PyTorch eager calls it (KernelBench inputs are "
               "torch.rand; here uniform(-1, 1) with fan_in scaling of the second operand)")

A_INIT = uniform(-1, 1)


def b_init(fan_in):
    return uniform(-1, 1, fan_in=fan_in)


def mm_desc(math, layout, extra=""):
    return (math + ". " + layout + " All matrices are row-major fp32. " + extra +
            " Accumulate in fp32 (or better); TF32 is not accurate enough.").replace("  ", " ")


GEMM_EXAMPLE = r'''
// A minimal correct candidate: 16 x 16 output tiles, A and B tiles staged in
// shared memory, fp32 accumulation (no TF32), bounds checked for any M, N, K.
#define T 16
extern "C" __global__ void sgemm_tiled(const float* A, const float* B, float* C, int M, int N, int K)
{
        __shared__ float As[T][T], Bs[T][T];
        int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
        float acc = 0.0f;
        for (int k0 = 0; k0 < K; k0 += T) {
                As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K)
                        ? A[(long long)row * K + k0 + threadIdx.x] : 0.0f;
                Bs[threadIdx.y][threadIdx.x] = (col < N && k0 + threadIdx.y < K)
                        ? B[(long long)(k0 + threadIdx.y) * N + col] : 0.0f;
                __syncthreads();
                for (int k = 0; k < T; k++)
                        acc = fmaf(As[threadIdx.y][k], Bs[k][threadIdx.x], acc);
                __syncthreads();
        }
        if (row < M && col < N)
                C[(long long)row * N + col] = acc;
}
'''


def simple(num, title, math, layout, params, shapes, a_shape, b_shape, c_shape, m, n, k,
           ta=False, tb=False, batch=1, flops=None, tol=TOL, tnote=TNOTE, trials=2,
           fan_in="K", extra="", example=None):
    return make_task(
        num, "matmul", title, mm_desc(math, layout, extra), params, shapes,
        [buf("A", a_shape, "in", init=A_INIT), buf("B", b_shape, "in", init=b_init(fan_in)),
         buf("C", c_shape, "out")],
        "// Reference for KernelBench level 1 problem %s: a cuBLAS SGEMM (library step in the\n"
        "// plan, TF32 off); this file holds no kernel.\n" % problem(num)["problem"],
        [gemm("A", "B", "C", m, n, k, trans_a=ta, trans_b=tb, batch=batch)],
        tolerance=tol, tolerance_note=tnote,
        flops=flops or "2 * %s * %s * %s%s" % (m, n, k, "" if batch == 1 else " * " + batch),
        bytes_="4 * (%s)" % " + ".join(" * ".join(s) for s in (a_shape, b_shape, c_shape)),
        trials=trials, reference_note=NOTE_CUBLAS, example=example)


MNK = {"M": "rows of C", "N": "columns of C", "K": "inner dimension"}
MNK_SHAPES = [{"name": "default", "M": 2048, "K": 8192, "N": 4096},
              {"name": "small", "M": 1000, "K": 513, "N": 777},
              {"name": "tiny", "M": 7, "K": 33, "N": 5}]

TRI_SRC = r'''
// Reference for KernelBench level 1 problem {problem}: {what}
// tri_copy writes the {part} triangle of a square N x N matrix into a scratch
// matrix and zeros the rest; cuBLAS multiplies the copies (TF32 off); tri_mask
// zeros the {other} triangle of the product.
extern "C" __global__ void tri_copy(const float* __restrict__ src, float* __restrict__ dst, int N)
{{
        unsigned long long n2 = (unsigned long long)N * N;
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long e = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; e < n2;
             e += stride) {{
                int i = (int)(e / N), j = (int)(e % N);
                dst[e] = ({keep}) ? src[e] : 0.0f;
        }}
}}

extern "C" __global__ void tri_mask(float* __restrict__ c, int N)
{{
        unsigned long long n2 = (unsigned long long)N * N;
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long e = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; e < n2;
             e += stride) {{
                int i = (int)(e / N), j = (int)(e % N);
                if (!({keep}))
                        c[e] = 0.0f;
        }}
}}
'''

SYM_SRC = r'''
// Reference for KernelBench level 1 problem {problem}: C = A @ B for symmetric A, B
// given by their lower triangles. sym_fill builds the full symmetric matrix
// S[i][j] = X[max(i, j)][min(i, j)] in scratch; cuBLAS multiplies (TF32 off).
extern "C" __global__ void sym_fill(const float* __restrict__ src, float* __restrict__ dst, int N)
{{
        unsigned long long n2 = (unsigned long long)N * N;
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long e = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; e < n2;
             e += stride) {{
                int i = (int)(e / N), j = (int)(e % N);
                dst[e] = i >= j ? src[e] : src[(unsigned long long)j * N + i];
        }}
}}
'''

DIAG_SRC = r'''
// Reference for KernelBench level 1 problem {problem}: C = diag(a) @ B, computed
// as PyTorch eager does it: diag_fill builds the dense N x N diagonal matrix in
// scratch, then a cuBLAS SGEMM (TF32 off). Every product but one per output is
// an exact zero, so C[i][j] = a[i] * B[i][j] exactly.
extern "C" __global__ void diag_fill(const float* __restrict__ a, float* __restrict__ d, int N)
{{
        unsigned long long n2 = (unsigned long long)N * N;
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long e = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; e < n2;
             e += stride) {{
                int i = (int)(e / N), j = (int)(e % N);
                d[e] = i == j ? a[i] : 0.0f;
        }}
}}
'''

SCALAR_SRC = r'''
// Reference for KernelBench level 1 problem {problem}: C = A * s, elementwise,
// s a scalar held in a one-element device buffer. 64-bit indices; when A and C
// are 16-byte aligned each thread loads two float4s before storing either
// (blocks of 256 threads cover 2048 elements, a grid-stride loop the rest when
// the grid is capped), then a scalar tail; otherwise a scalar grid-stride loop.
extern "C" __global__ void scale_ref(const float* __restrict__ A, const float* __restrict__ s,
        float* __restrict__ C, unsigned long long n)
{{
        float v = s[0];
        unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x * 2 + threadIdx.x;
        if ((((unsigned long long)A | (unsigned long long)C) & 15) == 0) {{
                const float4* a4 = (const float4*)A;
                float4* c4 = (float4*)C;
                unsigned long long n4 = n / 4;
                unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x * 2;
                for (unsigned long long i = t; i < n4; i += stride) {{
                        unsigned long long j = i + blockDim.x;
                        float4 a = a4[i];
                        if (j < n4) {{
                                float4 b = a4[j];
                                c4[i] = make_float4(a.x * v, a.y * v, a.z * v, a.w * v);
                                c4[j] = make_float4(b.x * v, b.y * v, b.z * v, b.w * v);
                        }} else {{
                                c4[i] = make_float4(a.x * v, a.y * v, a.z * v, a.w * v);
                        }}
                }}
                unsigned long long k = n4 * 4 + (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
                if (k < n)
                        C[k] = A[k] * v;
        }} else {{
                unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
                for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
                     i < n; i += stride)
                        C[i] = A[i] * v;
        }}
}}
'''

GRID_N2 = ["min(ceil_div(N * N, 256), 1048576)"]


def tri(num, upper):
    keep = "i <= j" if upper else "i >= j"
    part, other = ("upper", "lower") if upper else ("lower", "upper")
    what = ("C = %s(%s(A) @ %s(B))" % (("triu",) * 3 if upper else ("tril",) * 3))
    src = TRI_SRC.format(problem=problem(num)["problem"], what=what, part=part, other=other, keep=keep)
    desc = ("Product of two %s-triangular N x N matrices: C = %s. Only the %s triangle "
            "(%s, diagonal included) of A and B is defined: the other elements hold arbitrary "
            "values and must be treated as zero. C is %s triangular too: its %s part must be "
            "written as 0. So C[i][j] = sum_{k: %s} A[i][k] * B[k][j] for %s, else 0. "
            "All matrices are row-major fp32 N x N. Accumulate in fp32 (or better); TF32 is not "
            "accurate enough."
            % (part, what, part, "i <= j" if upper else "i >= j", part + "-", other,
               "i <= k <= j" if upper else "j <= k <= i", "i <= j" if upper else "i >= j"))
    return make_task(
        num, "matmul", "Matmul of %s-triangular matrices" % part, desc,
        {"N": "matrix size"},
        [{"name": "default", "N": 4096}, {"name": "small", "N": 1000}, {"name": "tiny", "N": 33}],
        [buf("A", ["N", "N"], "in", init=A_INIT), buf("B", ["N", "N"], "in", init=b_init("N")),
         buf("C", ["N", "N"], "out")],
        src,
        [launch("tri_copy", GRID_N2, [256], ["A", "At", i32("N")]),
         launch("tri_copy", GRID_N2, [256], ["B", "Bt", i32("N")]),
         gemm("At", "Bt", "C", "N", "N", "N"),
         launch("tri_mask", GRID_N2, [256], ["C", i32("N")])],
        scratch_bufs=[scratch("At", "f32", "N * N"), scratch("Bt", "f32", "N * N")],
        tolerance=TOL, tolerance_note=TNOTE, flops="N * N * N / 3", bytes_="12 * N * N",
        trials=2,
        reference_note="masking copies of A and B (scratch), a full cuBLAS SGEMM (TF32 off), then "
                       "masking C; PyTorch eager (KernelBench: torch.%s(torch.matmul(A, B)) on "
                       "triangular inputs) runs the GEMM and one mask kernel: the copies add "
                       "~2 N^2 x 8 bytes of traffic" % ("triu" if upper else "tril"))


def tasks():
    out = []
    out.append(simple(1, "Square matrix multiplication", "C = A @ B for square N x N matrices",
                      "A, B and C are N x N.", {"N": "matrix size"},
                      [{"name": "default", "N": 4096}, {"name": "small", "N": 1023},
                       {"name": "tiny", "N": 33}],
                      ["N", "N"], ["N", "N"], ["N", "N"], "N", "N", "N", fan_in="N"))
    out.append(simple(2, "Standard matrix multiplication", "C = A @ B",
                      "A is [M, K], B is [K, N], C is [M, N].", MNK, MNK_SHAPES,
                      ["M", "K"], ["K", "N"], ["M", "N"], "M", "N", "K",
                      example=(GEMM_EXAMPLE, [launch("sgemm_tiled", ["ceil_div(N, 16)", "ceil_div(M, 16)"],
                                                     [16, 16], ["A", "B", "C", i32("M"), i32("N"), i32("K")])])))
    out.append(simple(3, "Batched matrix multiplication", "C[b] = A[b] @ B[b] for each b (torch.bmm)",
                      "A is [BATCH, M, K], B is [BATCH, K, N], C is [BATCH, M, N]; matrices packed "
                      "back to back.",
                      {"BATCH": "batch (batch_size)", "M": "m", "K": "k", "N": "n"},
                      [{"name": "default", "BATCH": 128, "M": 512, "K": 1024, "N": 2048},
                       {"name": "small", "BATCH": 3, "M": 100, "K": 129, "N": 77},
                       {"name": "tiny", "BATCH": 2, "M": 5, "K": 7, "N": 3}],
                      ["BATCH", "M", "K"], ["BATCH", "K", "N"], ["BATCH", "M", "N"], "M", "N", "K",
                      batch="BATCH"))
    out.append(simple(4, "Matrix-vector multiplication", "C = A @ B with B a column vector",
                      "A is [M, K], B is [K, 1], C is [M, 1]. At the default size A is 8 GiB: "
                      "the task is memory-bound.",
                      {"M": "rows", "K": "columns (inner dimension)"},
                      [{"name": "default", "M": 2048, "K": 1048576},
                       {"name": "small", "M": 1000, "K": 4093}, {"name": "tiny", "M": 7, "K": 33}],
                      ["M", "K"], ["K", "1"], ["M", "1"], "M", "1", "K",
                      tol={"atol": 2e-4, "rtol": 1e-3},
                      tnote="Dot products of length K up to 2^20 with fan_in-scaled B (outputs "
                            "O(0.3)): float accumulation in any order errs by ~2e-5; atol 2e-4 "
                            "leaves a 10x margin.", trials=1))
    out.append(make_task(
        5, "matmul", "Matrix-scalar multiplication",
        "C = A * s: every element of the row-major fp32 matrix A [M, N] times the scalar s, "
        "which is an fp32 input buffer of shape [] (one element, drawn per trial). C is [M, N]. "
        "Memory-bound; 64-bit indices at the default size (1.07e9 elements).",
        {"M": "rows", "N": "columns"},
        [{"name": "default", "M": 65536, "N": 16384}, {"name": "small", "M": 1000, "N": 4093},
         {"name": "tiny", "M": 3, "N": 33}],
        [buf("A", ["M", "N"], "in", init=uniform(-1, 1)), buf("s", [], "in", init=uniform(0.5, 4.0)),
         buf("C", ["M", "N"], "out")],
        SCALAR_SRC.format(problem=problem(5)["problem"]),
        [launch("scale_ref", ["min(ceil_div(M * N, 2048), 1048576)"], [256], ["A", "s", "C", u64("M * N")])],
        flops="M * N", bytes_="8 * M * N + 4", trials=2,
        reference_note="elementwise kernel, float4 loads and stores (PyTorch eager: a vectorized "
                       "mul kernel); the scalar "
                       "is a device buffer (KernelBench passes a Python float 3.14)"))
    out.append(simple(6, "Matmul with a large K dimension", "C = A @ B with K >> M, N",
                      "A is [M, K], B is [K, N], C is [M, N].", MNK,
                      [{"name": "default", "M": 256, "K": 524288, "N": 256},
                       {"name": "small", "M": 33, "K": 100003, "N": 17},
                       {"name": "tiny", "M": 5, "K": 1000, "N": 7}],
                      ["M", "K"], ["K", "N"], ["M", "N"], "M", "N", "K",
                      tol={"atol": 2e-4, "rtol": 1e-3},
                      tnote="K up to 524288: float accumulation in different orders differs by "
                            "~6e-8*sqrt(K)*0.3 ~ 1.4e-5 (outputs are O(0.3) thanks to fan_in "
                            "scaling); atol 2e-4 leaves margin for split-K. TF32 still fails."))
    out.append(simple(7, "Matmul with a small K dimension", "C = A @ B with K << M, N",
                      "A is [M, K], B is [K, N], C is [M, N] (4 GiB at the default size: "
                      "output-bandwidth-bound).", MNK,
                      [{"name": "default", "M": 32768, "K": 64, "N": 32768},
                       {"name": "small", "M": 1000, "K": 17, "N": 999},
                       {"name": "tiny", "M": 7, "K": 3, "N": 5}],
                      ["M", "K"], ["K", "N"], ["M", "N"], "M", "N", "K"))
    out.append(simple(8, "Matmul with irregular shapes", "C = A @ B",
                      "A is [M, K], B is [K, N], C is [M, N]; the default sizes (8205, 2949, 5921) "
                      "are not multiples of any tile size.", MNK,
                      [{"name": "default", "M": 8205, "K": 2949, "N": 5921},
                       {"name": "small", "M": 1000, "K": 513, "N": 777},
                       {"name": "tiny", "M": 7, "K": 33, "N": 5}],
                      ["M", "K"], ["K", "N"], ["M", "N"], "M", "N", "K"))
    out.append(simple(9, "Tall-skinny matrix multiplication", "C = A @ B, an outer-product-like GEMM",
                      "A is [M, N] (tall and skinny), B is [N, M], C is [M, M] (4 GiB at the "
                      "default size: output-bandwidth-bound).",
                      {"M": "long dimension", "N": "short (inner) dimension"},
                      [{"name": "default", "M": 32768, "N": 32},
                       {"name": "small", "M": 1000, "N": 17}, {"name": "tiny", "M": 33, "N": 3}],
                      ["M", "N"], ["N", "M"], ["M", "M"], "M", "M", "N", fan_in="N"))
    out.append(simple(10, "3D tensor - matrix multiplication",
                      "C[n, m, l] = sum_k A[n, m, k] * B[k, l] (torch.matmul of a 3D tensor and "
                      "a matrix)",
                      "A is [N, M, K], B is [K, L], C is [N, M, L].",
                      {"N": "batch", "M": "rows per batch", "K": "inner", "L": "columns"},
                      [{"name": "default", "N": 16, "M": 1024, "K": 2048, "L": 768},
                       {"name": "small", "N": 3, "M": 100, "K": 129, "L": 77},
                       {"name": "tiny", "N": 2, "M": 5, "K": 7, "L": 3}],
                      ["N", "M", "K"], ["K", "L"], ["N", "M", "L"], "N * M", "L", "K"))
    out.append(simple(11, "4D tensor - matrix multiplication (einsum bijl,lk->bijk)",
                      "C[b, i, j, k] = sum_l A[b, i, j, l] * B[l, k] "
                      "(torch.einsum('bijl,lk->bijk', A, B))",
                      "A is [B, I, J, L], B is [L, K], C is [B, I, J, K].",
                      {"B": "b", "I": "i", "J": "j", "L": "l (contracted)", "K": "k"},
                      [{"name": "default", "B": 8, "I": 256, "J": 512, "L": 256, "K": 768},
                       {"name": "small", "B": 2, "I": 5, "J": 33, "L": 17, "K": 13},
                       {"name": "tiny", "B": 1, "I": 2, "J": 3, "L": 4, "K": 5}],
                      ["B", "I", "J", "L"], ["L", "K"], ["B", "I", "J", "K"], "B * I * J", "K", "L",
                      fan_in="L"))
    out.append(make_task(
        12, "matmul", "Diagonal matrix times a matrix",
        "C = diag(a) @ B: a is an fp32 vector [N] (the diagonal), B is a row-major fp32 "
        "matrix [N, M], C is [N, M]; C[i][j] = a[i] * B[i][j] (KernelBench: torch.diag(A) @ B, "
        "which PyTorch runs as a dense N x N GEMM).",
        {"N": "rows (length of the diagonal)", "M": "columns"},
        [{"name": "default", "N": 4096, "M": 4096}, {"name": "small", "N": 1000, "M": 777},
         {"name": "tiny", "N": 7, "M": 5}],
        [buf("a", ["N"], "in", init=uniform(-1, 1)), buf("B", ["N", "M"], "in", init=uniform(-1, 1)),
         buf("C", ["N", "M"], "out")],
        DIAG_SRC.format(problem=problem(12)["problem"]),
        [launch("diag_fill", GRID_N2, [256], ["a", "Dm", i32("N")]),
         gemm("Dm", "B", "C", "N", "M", "N")],
        scratch_bufs=[scratch("Dm", "f32", "N * N")],
        flops="N * M", bytes_="4 * N + 8 * N * M", trials=2,
        reference_note="dense diag matrix in scratch + cuBLAS SGEMM (TF32 off), as PyTorch eager "
                       "runs torch.diag(A) @ B; the result is exact"))
    out.append(make_task(
        13, "matmul", "Matmul of symmetric matrices",
        "C = A @ B for symmetric N x N matrices A and B, each given by its LOWER triangle: "
        "A_full[i][j] = A[max(i, j)][min(i, j)] (same for B); elements above the diagonal of "
        "the input buffers hold arbitrary values and must not be read as data. C = A_full @ "
        "B_full is a full (in general non-symmetric) N x N matrix. All matrices are row-major "
        "fp32. Accumulate in fp32 (or better); TF32 is not accurate enough.",
        {"N": "matrix size"},
        [{"name": "default", "N": 4096}, {"name": "small", "N": 1000}, {"name": "tiny", "N": 33}],
        [buf("A", ["N", "N"], "in", init=A_INIT), buf("B", ["N", "N"], "in", init=b_init("N")),
         buf("C", ["N", "N"], "out")],
        SYM_SRC.format(problem=problem(13)["problem"]),
        [launch("sym_fill", GRID_N2, [256], ["A", "As", i32("N")]),
         launch("sym_fill", GRID_N2, [256], ["B", "Bs", i32("N")]),
         gemm("As", "Bs", "C", "N", "N", "N")],
        scratch_bufs=[scratch("As", "f32", "N * N"), scratch("Bs", "f32", "N * N")],
        tolerance=TOL, tolerance_note=TNOTE, flops="2 * N * N * N", bytes_="12 * N * N", trials=2,
        reference_note="symmetrizing copies (scratch) + cuBLAS SGEMM (TF32 off). KernelBench "
                       "feeds fully symmetric matrices ((X + X^T) / 2); kevald cannot draw "
                       "symmetric inputs, so the task defines A and B by their lower triangles"))
    out.append(tri(14, True))
    out.append(tri(15, False))
    out.append(simple(16, "Matmul with transposed A", "C = A^T @ B",
                      "A is stored [K, M] (so C uses its transpose), B is [K, N], C is [M, N].",
                      MNK, MNK_SHAPES, ["K", "M"], ["K", "N"], ["M", "N"], "M", "N", "K", ta=True))
    out.append(simple(17, "Matmul with transposed B", "C = A @ B^T",
                      "A is [M, K], B is stored [N, K], C is [M, N].",
                      MNK, MNK_SHAPES, ["M", "K"], ["N", "K"], ["M", "N"], "M", "N", "K", tb=True))
    out.append(simple(18, "Matmul with both operands transposed", "C = A^T @ B^T",
                      "A is stored [K, M], B is stored [N, K], C is [M, N].",
                      MNK, MNK_SHAPES, ["K", "M"], ["N", "K"], ["M", "N"], "M", "N", "K",
                      ta=True, tb=True))
    return out
