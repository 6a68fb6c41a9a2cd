"""Triton kernels for kevald's tasks, written for the tests of issue 28.

One entry of CASES per task: the @triton.jit function, the launch grid as
kevald expressions over the task's params, the kernel's arguments in order
(one per parameter that is not a constexpr: a string names a task buffer; a
(type, expression) pair is a scalar), its constexprs, num_warps and
num_stages (default 3). Every kernel indexes with 64-bit offsets where a
default-size tensor passes 2^31 elements. NEGATIVE holds two kernels that
must fail, each with the verdict it must get ("expect"): a wrong one
(incorrect, with the mismatch report) and one that faults (runtime_error,
named by the fault).

The GPU host (Triton 3.6) compiles them through the Python client and runs
them through kevald: tests/gpu/triton/run.py (which turns the positional
args into kevald.triton's mapping by parameter name). CI compiles none of
them (no Triton on the development machines) but binds every case to its
task with a stand-in for Triton and has the server plan-check it
(clients/python/tests/test_triton.py); the PTX Triton makes of the prompts'
examples is committed as fixtures under tests/fixtures/triton/ with the
Triton version.
"""
import triton
import triton.language as tl
try:
    from triton.language.extra import libdevice       # Triton 3.x: dispatches to the backend's
except ImportError:  # pragma: no cover - a layout some 3.x builds have
    from triton.language.extra.cuda import libdevice

ELEM_BLOCK = 4096


# ---- elementwise activations: y = f(x) over B*D elements -----------------

@triton.jit
def act_kernel(x_ptr, y_ptr, n, ACT: tl.constexpr, BLOCK: tl.constexpr):
    """y = ACT(x) over @n elements; ACT names the activation (a constexpr string)."""
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    if ACT == "relu":
        y = tl.maximum(x, 0.0)
    elif ACT == "leaky_relu":
        y = tl.where(x >= 0.0, x, 0.01 * x)
    elif ACT == "sigmoid":
        y = 1.0 / (1.0 + tl.exp(-x))
    elif ACT == "tanh":
        y = libdevice.tanh(x)
    elif ACT == "swish":
        y = x / (1.0 + tl.exp(-x))
    elif ACT == "gelu":
        y = 0.5 * x * (1.0 + libdevice.erf(x * 0.7071067811865476))
    elif ACT == "selu":
        y = 1.0507009873554805 * tl.where(x > 0.0, x, 1.6732632423543772 * libdevice.expm1(x))
    elif ACT == "hardsigmoid":
        y = tl.minimum(tl.maximum(x + 3.0, 0.0), 6.0) / 6.0
    elif ACT == "softplus":
        y = tl.where(x > 20.0, x, libdevice.log1p(tl.exp(x)))
    elif ACT == "softsign":
        y = x / (1.0 + tl.abs(x))
    elif ACT == "elu":
        y = tl.where(x > 0.0, x, libdevice.expm1(x))
    elif ACT == "hardtanh":
        y = tl.minimum(tl.maximum(x, -1.0), 1.0)
    else:  # "new_gelu": minGPT's tanh approximation
        y = 0.5 * x * (1.0 + libdevice.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
    tl.store(y_ptr + offs, y, mask=mask)


# ---- softmax and log-softmax over the last dimension of [B, D] -------------

@triton.jit
def _row_stats(x_row, D, BLOCK: tl.constexpr):
    """The row's maximum and sum of exp(x - max), in one online pass."""
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, D, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < D
        x = tl.load(x_row + offs, mask=mask, other=float("-inf"))
        m_new = tl.maximum(m, x)
        alpha = tl.where(m_new == float("-inf"), 0.0, tl.exp(m - m_new))
        p = tl.where(mask, tl.exp(x - m_new), 0.0)
        s = s * alpha + p
        m = m_new
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp(m - row_max)), axis=0)
    return row_max, row_sum


@triton.jit
def softmax_kernel(x_ptr, y_ptr, D, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * D
    y_row = y_ptr + row * D
    row_max, row_sum = _row_stats(x_row, D, BLOCK)
    inv = 1.0 / row_sum
    for start in range(0, D, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < D
        x = tl.load(x_row + offs, mask=mask, other=0.0)
        tl.store(y_row + offs, tl.exp(x - row_max) * inv, mask=mask)


@triton.jit
def log_softmax_kernel(x_ptr, y_ptr, D, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * D
    y_row = y_ptr + row * D
    row_max, row_sum = _row_stats(x_row, D, BLOCK)
    shift = row_max + tl.log(row_sum)
    for start in range(0, D, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < D
        x = tl.load(x_row + offs, mask=mask, other=0.0)
        tl.store(y_row + offs, x - shift, mask=mask)


# ---- reductions over dimension 1 of [B, D1, D2] ------------------------------
# grid (ceil_div(D2, BLOCK_J), B): a program owns BLOCK_J columns of one batch
# and walks D1 in tiles of BLOCK_I rows (loads coalesced along D2).

@triton.jit
def _dim1_tile(x_ptr, b, i0, D1, D2, BLOCK_I: tl.constexpr, BLOCK_J: tl.constexpr, other):
    j = tl.program_id(0) * BLOCK_J + tl.arange(0, BLOCK_J)
    i = i0 + tl.arange(0, BLOCK_I)
    offs = b * D1 * D2 + i[:, None].to(tl.int64) * D2 + j[None, :]
    mask = (i[:, None] < D1) & (j[None, :] < D2)
    return tl.load(x_ptr + offs, mask=mask, other=other), i


@triton.jit
def sum_dim1_kernel(x_ptr, y_ptr, D1, D2, SCALE: tl.constexpr, BLOCK_I: tl.constexpr, BLOCK_J: tl.constexpr):
    b = tl.program_id(1).to(tl.int64)
    acc = tl.zeros([BLOCK_J], tl.float32)
    for i0 in range(0, D1, BLOCK_I):
        x, _ = _dim1_tile(x_ptr, b, i0, D1, D2, BLOCK_I, BLOCK_J, 0.0)
        acc += tl.sum(x, axis=0)
    if SCALE:
        acc = acc / D1
    j = tl.program_id(0) * BLOCK_J + tl.arange(0, BLOCK_J)
    tl.store(y_ptr + b * D2 + j, acc, mask=j < D2)


@triton.jit
def max_dim1_kernel(x_ptr, y_ptr, D1, D2, BLOCK_I: tl.constexpr, BLOCK_J: tl.constexpr):
    b = tl.program_id(1).to(tl.int64)
    best = tl.full([BLOCK_J], float("-inf"), tl.float32)
    for i0 in range(0, D1, BLOCK_I):
        x, _ = _dim1_tile(x_ptr, b, i0, D1, D2, BLOCK_I, BLOCK_J, float("-inf"))
        best = tl.maximum(best, tl.max(x, axis=0))
    j = tl.program_id(0) * BLOCK_J + tl.arange(0, BLOCK_J)
    tl.store(y_ptr + b * D2 + j, best, mask=j < D2)


@triton.jit
def argext_dim1_kernel(x_ptr, y_ptr, D1, D2, SIGN: tl.constexpr, BLOCK_I: tl.constexpr, BLOCK_J: tl.constexpr):
    """argmax (SIGN = 1) or argmin (SIGN = -1) over dimension 1, the smallest index on ties."""
    b = tl.program_id(1).to(tl.int64)
    best = tl.full([BLOCK_J], float("-inf"), tl.float32)
    idx = tl.zeros([BLOCK_J], tl.int64)
    for i0 in range(0, D1, BLOCK_I):
        x, _ = _dim1_tile(x_ptr, b, i0, D1, D2, BLOCK_I, BLOCK_J, float("-inf") * SIGN)
        v = x * SIGN
        tile_best = tl.max(v, axis=0)
        tile_idx = tl.argmax(v, axis=0).to(tl.int64) + i0
        upd = tile_best > best
        best = tl.where(upd, tile_best, best)
        idx = tl.where(upd, tile_idx, idx)
    j = tl.program_id(0) * BLOCK_J + tl.arange(0, BLOCK_J)
    tl.store(y_ptr + b * D2 + j, idx, mask=j < D2)


# ---- RMS norm over C of NCHW ---------------------------------------------------

@triton.jit
def rmsnorm_kernel(x_ptr, y_ptr, C, HW, BLOCK: tl.constexpr):
    n = tl.program_id(1).to(tl.int64)
    hw = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = hw < HW
    base = n * C * HW + hw
    ss = tl.zeros([BLOCK], tl.float32)
    for c in range(0, C):
        x = tl.load(x_ptr + base + c * HW, mask=mask, other=0.0)
        ss += x * x
    inv = 1.0 / tl.sqrt_rn(ss / C + 1e-5)
    for c in range(0, C):
        x = tl.load(x_ptr + base + c * HW, mask=mask, other=0.0)
        tl.store(y_ptr + base + c * HW, x * inv, mask=mask)


# ---- matmul, fp32 in and out, IEEE products (no TF32) ------------------------

@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_n
    first_m = (pid // group) * GROUP_M
    size_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % size_m
    pid_n = (pid % group) // size_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + rk
        a = tl.load(a_ptr + rm[:, None].to(tl.int64) * K + kk[None, :],
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None].to(tl.int64) * N + rn[None, :],
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    tl.store(c_ptr + rm[:, None].to(tl.int64) * N + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


# ---- kernels that must fail ----------------------------------------------------

@triton.jit
def relu_off_by_one_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """ReLU whose mask lets index n through: reads x[n] and writes y[n], one past the end, whenever
    n is not a multiple of BLOCK (the small shape sets)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs <= n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


# ---- the cases ------------------------------------------------------------------

def _act(task, act):
    return dict(task=task, kernel=act_kernel, grid=["ceil_div(B * D, %d)" % ELEM_BLOCK],
                args=["x", "y", ("i64", "B * D")], constexprs={"ACT": act, "BLOCK": ELEM_BLOCK}, num_warps=8)


def _dim1(task, kernel, **constexprs):
    c = dict(constexprs, BLOCK_I=32, BLOCK_J=128)
    return dict(task=task, kernel=kernel, grid=["ceil_div(D2, 128)", "B"],
                args=["x", "y", ("i32", "D1"), ("i32", "D2")], constexprs=c, num_warps=4)


MATMUL = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}

CASES = [
    _act("l1_19_relu", "relu"),
    _act("l1_20_leakyrelu", "leaky_relu"),
    _act("l1_21_sigmoid", "sigmoid"),
    _act("l1_22_tanh", "tanh"),
    _act("l1_25_swish", "swish"),
    _act("l1_26_gelu", "gelu"),
    _act("l1_27_selu", "selu"),
    _act("l1_28_hardsigmoid", "hardsigmoid"),
    _act("l1_29_softplus", "softplus"),
    _act("l1_30_softsign", "softsign"),
    _act("l1_31_elu", "elu"),
    _act("l1_32_hardtanh", "hardtanh"),
    _act("l1_88_mingptnewgelu", "new_gelu"),
    dict(task="l1_23_softmax", kernel=softmax_kernel, grid=["B"], args=["x", "y", ("i64", "D")],
         constexprs={"BLOCK": 2048}, num_warps=8),
    dict(task="l1_24_logsoftmax", kernel=log_softmax_kernel, grid=["B"], args=["x", "y", ("i64", "D")],
         constexprs={"BLOCK": 2048}, num_warps=8),
    _dim1("l1_47_sum_reduction_over_a_dimension", sum_dim1_kernel, SCALE=False),
    _dim1("l1_48_mean_reduction_over_a_dimension", sum_dim1_kernel, SCALE=True),
    _dim1("l1_49_max_reduction_over_a_dimension", max_dim1_kernel),
    _dim1("l1_51_argmax_over_a_dimension", argext_dim1_kernel, SIGN=1),
    _dim1("l1_52_argmin_over_a_dimension", argext_dim1_kernel, SIGN=-1),
    dict(task="l1_36_rmsnorm", kernel=rmsnorm_kernel, grid=["ceil_div(H * W, 1024)", "N"],
         args=["x", "y", ("i32", "C"), ("i32", "H * W")], constexprs={"BLOCK": 1024}, num_warps=4),
    dict(task="l1_1_square_matrix_multiplication", kernel=matmul_kernel,
         grid=["ceil_div(N, 64) * ceil_div(N, 64)"], args=["A", "B", "C", ("i32", "N"), ("i32", "N"), ("i32", "N")],
         constexprs=MATMUL, num_warps=4, num_stages=3),
    dict(task="l1_2_standard_matrix_multiplication", kernel=matmul_kernel,
         grid=["ceil_div(M, 64) * ceil_div(N, 64)"], args=["A", "B", "C", ("i32", "M"), ("i32", "N"), ("i32", "K")],
         constexprs=MATMUL, num_warps=4, num_stages=3),
]

NEGATIVE = [
    dict(_act("l1_20_leakyrelu", "relu"), expect="incorrect",
         why="ReLU for LeakyReLU: every negative input gives 0 where 0.01 * x is wanted"),
    dict(task="l1_19_relu", kernel=relu_off_by_one_kernel, grid=["ceil_div(B * D, 1024)"],
         args=["x", "y", ("i64", "B * D")], constexprs={"BLOCK": 1024}, num_warps=4, expect="runtime_error",
         why="mask offs <= n: x[n] and y[n], one element past the end, on the small shape set"),
]
