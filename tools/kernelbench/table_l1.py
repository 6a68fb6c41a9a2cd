"""Level-1 rows of the KernelBench task table (see gen.py for the row format).

Each row says, for one KernelBench problem, what its Model computes: the
constructor's arguments (names of module-level constants), the layers, the
forward body and the inputs. Where a kevald C task exists for the problem
(tasks/level1), the Model computes exactly what that task computes and the
inputs follow that task's distributions; `cmap` turns the C task's shape-set
params into KernelBench's constant names (gen.py derives it for the common
families).
"""

U = "(torch.rand({s}) * 2 - 1)"            # uniform(-1, 1)
UF = "((torch.rand({s}) * 2 - 1) / {f} ** 0.5)"  # uniform(-1, 1) / sqrt(fan_in)


def u(shape):
    return U.format(s=shape)


def uf(shape, fan):
    return UF.format(s=shape, f=fan)


def n(shape, std=1, mean=0):
    e = "torch.randn(%s)" % shape
    if std != 1:
        e += " * %s" % std
    if mean:
        e += " + %s" % mean
    return e


ROWS = {}


def row(num, **kw):
    ROWS[(1, num)] = kw


# ------------------------------------------------------------------ matmul
BD = {"batch_size": "B", "dim": "D"}
row(1, args="A, B", fwd=["return torch.matmul(A, B)"], inputs=[u("N, N"), uf("N, N", "N")])
for k in (2, 6, 7, 8):
    row(k, args="A, B", fwd=["return torch.matmul(A, B)"], inputs=[u("M, K"), uf("K, N", "K")])
row(3, args="A, B", fwd=["return torch.bmm(A, B)"],
    inputs=[u("batch_size, m, k"), uf("batch_size, k, n", "k")],
    cmap={"batch_size": "BATCH", "m": "M", "k": "K", "n": "N"})
row(4, args="A, B", fwd=["return torch.matmul(A, B)"], inputs=[u("M, K"), uf("K, 1", "K")])
row(5, args="A, s", fwd=["return A * s"],
    inputs=[u("M, N"), "float(torch.empty(()).uniform_(0.5, 4.0))"],
    note="s is a Python float drawn from uniform(0.5, 4) (KernelBench passes 3.14)")
row(9, args="A, B", fwd=["return torch.matmul(A, B)"], inputs=[u("M, N"), uf("N, M", "N")])
row(10, args="A, B", fwd=["return torch.matmul(A, B)"], inputs=[u("N, M, K"), uf("K, L", "K")])
row(11, args="A, B", fwd=['return torch.einsum("bijl,lk->bijk", A, B)'],
    inputs=[u("b, i, j, l"), uf("l, k", "l")],
    cmap={"b": "B", "i": "I", "j": "J", "l": "L", "k": "K"})
row(12, args="A, B", fwd=["return torch.diag(A) @ B"], inputs=[u("N"), u("N, M")])
row(13, args="A, B",
    fwd=["A = torch.tril(A) + torch.tril(A, -1).T",
         "B = torch.tril(B) + torch.tril(B, -1).T",
         "return torch.matmul(A, B)"],
    inputs=["_sym(%s)" % u("N, N"), "_sym(%s)" % uf("N, N", "N")],
    helpers=["def _sym(m):\n    return torch.tril(m) + torch.tril(m, -1).T"],
    note="A and B are given by their lower triangles, as in the C task (get_inputs draws them symmetric, as KernelBench does)")
row(14, args="A, B", fwd=["return torch.triu(torch.matmul(torch.triu(A), torch.triu(B)))"],
    inputs=["torch.triu(%s)" % u("N, N"), "torch.triu(%s)" % uf("N, N", "N")],
    note="the lower triangles of A and B are ignored, as in the C task")
row(15, args="A, B", fwd=["return torch.tril(torch.matmul(torch.tril(A), torch.tril(B)))"],
    inputs=["torch.tril(%s)" % u("M, M"), "torch.tril(%s)" % uf("M, M", "M")],
    cmap={"M": "N"}, note="the upper triangles of A and B are ignored, as in the C task")
row(16, args="A, B", fwd=["return torch.matmul(A.T, B)"], inputs=[u("K, M"), uf("K, N", "K")])
row(17, args="A, B", fwd=["return torch.matmul(A, B.T)"], inputs=[u("M, K"), uf("N, K", "K")])
row(18, args="A, B", fwd=["return torch.matmul(A.T, B.T)"], inputs=[u("K, M"), uf("N, K", "K")])

# ------------------------------------------------------------------ activations
ACT = {
    19: ("return torch.relu(x)", 1), 20: ("return F.leaky_relu(x, negative_slope=0.01)", 1),
    21: ("return torch.sigmoid(x)", 3), 22: ("return torch.tanh(x)", 2),
    23: ("return torch.softmax(x, dim=1)", 2), 24: ("return torch.log_softmax(x, dim=1)", 2),
    25: ("return x * torch.sigmoid(x)", 3), 26: ("return F.gelu(x)", 2),
    27: ("return torch.selu(x)", 2), 28: ("return F.hardsigmoid(x)", 4),
    29: ("return F.softplus(x)", 8), 30: ("return x / (1 + torch.abs(x))", 3),
    31: ("return F.elu(x, alpha=1.0)", 2), 32: ("return F.hardtanh(x, min_val=-1.0, max_val=1.0)", 3),
    38: ("return x / torch.mean(torch.abs(x), dim=1, keepdim=True)", 1),
    39: ("return x / torch.norm(x, p=2, dim=1, keepdim=True)", 1),
    88: ("return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))", 2),
}
for k, (f, std) in ACT.items():
    row(k, fwd=[f], inputs=[n("batch_size, dim", std)], cmap=BD)

# ------------------------------------------------------------------ norms
NCHW = {"batch_size": "N", "features": "C", "dim1": "H", "dim2": "W"}
X4 = "batch_size, features, dim1, dim2"
row(33, init="num_features", layers=["self.bn = nn.BatchNorm2d(num_features)"],
    fwd=["return self.bn(x)"], inputs=[n(X4, "2.0", "1.0")], init_values="features", cmap=NCHW,
    note="training mode (batch statistics), weight 1 and bias 0 as initialized")
row(34, init="num_features", layers=["self.inorm = nn.InstanceNorm2d(num_features=num_features)"],
    fwd=["return self.inorm(x)"], inputs=[n(X4, "2.0", "1.0")], init_values="features", cmap=NCHW)
row(35, init="num_features, num_groups",
    layers=["self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)"],
    fwd=["return self.gn(x)"], inputs=[n(X4, "2.0", "1.0")], init_values="features, num_groups",
    cmap=dict(NCHW, num_groups="G"))
row(36, init="num_features, eps=1e-5", layers=["self.num_features = num_features", "self.eps = eps"],
    fwd=["rms = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps)", "return x / rms"],
    inputs=[n(X4)], init_values="features", cmap=NCHW)
row(37, fwd=["norm = torch.norm(x, p='fro')", "return x / norm"], inputs=[n(X4)], cmap=NCHW)
row(40, init="normalized_shape", layers=["self.ln = nn.LayerNorm(normalized_shape=normalized_shape)"],
    fwd=["return self.ln(x)"], inputs=[n(X4, "2.0", "1.0")], init_values="(features, dim1, dim2)",
    cmap=NCHW)

# ------------------------------------------------------------------ pooling
PCA = {"batch_size": "N", "kernel_size": "K", "stride": "S", "padding": "PAD"}
PC = dict(PCA, dilation="DIL")
row(41, init="kernel_size, stride, padding, dilation, return_indices",
    layers=["self.pool = nn.MaxPool1d(kernel_size=kernel_size, stride=stride, padding=padding, "
            "dilation=dilation, return_indices=return_indices)"],
    fwd=["return self.pool(x)"], inputs=[n("batch_size, features, sequence_length")],
    cmap=dict(PC, features="C", sequence_length="L"))
row(42, init="kernel_size, stride, padding, dilation",
    layers=["self.pool = nn.MaxPool2d(kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation)"],
    fwd=["return self.pool(x)"], inputs=[n("batch_size, channels, height, width")],
    cmap=dict(PC, channels="C", height="H", width="W"))
row(43, init="kernel_size, stride, padding, dilation",
    layers=["self.pool = nn.MaxPool3d(kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation)"],
    fwd=["return self.pool(x)"], inputs=[n("batch_size, channels, dim1, dim2, dim3")],
    cmap=dict(PC, channels="C", dim1="D", dim2="H", dim3="W"))
row(44, init="kernel_size, stride, padding",
    layers=["self.pool = nn.AvgPool1d(kernel_size=kernel_size, stride=stride, padding=padding)"],
    fwd=["return self.pool(x)"], inputs=[n("batch_size, in_channels, input_length")],
    cmap=dict(PCA, in_channels="C", input_length="L"))
row(45, init="kernel_size, stride, padding",
    layers=["self.pool = nn.AvgPool2d(kernel_size=kernel_size, stride=stride, padding=padding)"],
    fwd=["return self.pool(x)"], inputs=[n("batch_size, channels, height, width")],
    extra={"stride": 11, "padding": 0}, cmap=dict(PCA, channels="C", height="H", width="W"),
    note="stride and padding are constants here (KernelBench: stride = kernel_size, padding 0) so that the small and tiny sets can change them as the C task does")
row(46, init="kernel_size, stride, padding",
    layers=["self.pool = nn.AvgPool3d(kernel_size=kernel_size, stride=stride, padding=padding)"],
    fwd=["return self.pool(x)"], inputs=[n("batch_size, channels, depth, height, width")],
    cmap=dict(PCA, channels="C", depth="D", height="H", width="W"))

# ------------------------------------------------------------------ reductions
RD = {"batch_size": "B", "dim1": "D1", "dim2": "D2"}
X3 = "batch_size, dim1, dim2"
row(47, init="dim", layers=["self.dim = dim"], fwd=["return torch.sum(x, dim=self.dim, keepdim=True)"],
    inputs=[n(X3)], init_values="reduce_dim", cmap=RD)
row(48, init="dim", layers=["self.dim = dim"], fwd=["return torch.mean(x, dim=self.dim)"],
    inputs=[n(X3)], init_values="1", cmap=RD)
row(49, init="dim", layers=["self.dim = dim"], fwd=["return torch.max(x, dim=self.dim)[0]"],
    inputs=[n(X3)], init_values="1", cmap=RD)
row(51, init="dim", layers=["self.dim = dim"], fwd=["return torch.argmax(x, dim=self.dim)"],
    inputs=[n(X3)], init_values="1", cmap=RD)
row(52, init="dim", layers=["self.dim = dim"], fwd=["return torch.argmin(x, dim=self.dim)"],
    inputs=[n(X3)], init_values="dim", cmap=RD)
row(53, init="dim", layers=["self.dim = dim"], fwd=["return torch.min(x, dim=self.dim)[0]"],
    inputs=[n(X3)], init_values="1", cmap=RD)

# ------------------------------------------------------------------ convolutions
# conv(num, layer class, init names, layer keyword text, spatial input names)
CONV = {
    50: ("Conv2d", "in_channels, out_channels, kernel_size, stride, padding",
         "stride=stride, padding=padding", ["height", "width"]),
    54: ("Conv3d", "in_channels, out_channels, kernel_size", "bias=False", ["depth", "height", "width"]),
    55: ("Conv2d", "in_channels, out_channels, kernel_size", "bias=False", ["height", "width"]),
    56: ("Conv2d", "in_channels, out_channels, kernel_size", "bias=False", ["height", "width"]),
    57: ("ConvTranspose2d", "in_channels, out_channels, kernel_size", "bias=False", ["height", "width"]),
    58: ("ConvTranspose3d", "in_channels, out_channels, kernel_size", "bias=False",
         ["depth_in", "height_in", "width_in"]),
    59: ("Conv3d", "in_channels, out_channels, kernel_size", "bias=False", ["depth", "height", "width"]),
    60: ("Conv3d", "in_channels, out_channels, kernel_size", "bias=False", ["depth", "height", "width"]),
    61: ("ConvTranspose3d", "in_channels, out_channels, kernel_size", "bias=False", ["depth", "height", "width"]),
    62: ("Conv2d", "in_channels, out_channels, kernel_size", "bias=False", ["height", "width"]),
    63: ("Conv2d", "in_channels, out_channels, kernel_size", "bias=False", ["height", "width"]),
    64: ("ConvTranspose1d", "in_channels, out_channels, kernel_size", "bias=False", ["length"]),
    65: ("ConvTranspose2d", "in_channels, out_channels, kernel_size", "bias=False", ["height", "width"]),
    66: ("Conv3d", "in_channels, out_channels, kernel_size", "bias=False", ["depth", "height", "width"]),
    67: ("Conv1d", "in_channels, out_channels, kernel_size", "bias=False", ["length"]),
    68: ("ConvTranspose3d", "in_channels, out_channels, kernel_size", "bias=False", ["depth", "height", "width"]),
    69: ("ConvTranspose2d", "in_channels, out_channels, kernel_size", "bias=False", ["height_in", "width_in"]),
    70: ("ConvTranspose3d", "in_channels, out_channels, kernel_size", "bias=False", ["depth", "height", "width"]),
    71: ("ConvTranspose2d", "in_channels, out_channels, kernel_size", "bias=False", ["height_in", "width_in"]),
    72: ("ConvTranspose3d", "in_channels, out_channels, kernel_size, stride, padding, output_padding, groups",
         "stride=stride, padding=padding, output_padding=output_padding, groups=groups, bias=False",
         ["depth", "height", "width"]),
    73: ("ConvTranspose3d", "in_channels, out_channels, kernel_size, stride, padding, groups",
         "stride=stride, padding=padding, groups=groups, bias=False", ["depth", "height", "width"]),
    74: ("ConvTranspose1d", "in_channels, out_channels, kernel_size, stride, padding, dilation",
         "stride=stride, padding=padding, dilation=dilation, bias=False", ["length"]),
    75: ("ConvTranspose2d", "in_channels, out_channels, kernel_size, stride, padding, dilation, groups",
         "stride=stride, padding=padding, dilation=dilation, groups=groups, bias=False", ["height", "width"]),
    76: ("Conv1d", "in_channels, out_channels, kernel_size, stride, dilation",
         "stride=stride, dilation=dilation, bias=False", ["length"]),
    77: ("ConvTranspose3d", "in_channels, out_channels, kernel_size, stride, padding, dilation",
         "stride=stride, padding=padding, dilation=dilation, bias=False", ["depth", "height", "width"]),
    78: ("ConvTranspose2d", "in_channels, out_channels, kernel_size, stride, padding",
         "stride=stride, padding=padding, bias=False", ["height", "width"]),
    79: ("ConvTranspose1d", "in_channels, out_channels, kernel_size, stride, padding, dilation",
         "stride=stride, padding=padding, dilation=dilation, bias=False", ["length"]),
    80: ("Conv2d", "in_channels, out_channels, kernel_size, stride, padding, dilation",
         "stride=stride, padding=padding, dilation=dilation, bias=False", ["height", "width"]),
    81: ("ConvTranspose2d", "in_channels, out_channels, kernel_size, stride, padding, dilation",
         "stride=stride, padding=padding, dilation=dilation, bias=False", ["height_in", "width_in"]),
    82: ("Conv2d", "in_channels, kernel_size, stride, padding",
         "stride=stride, padding=padding, groups=in_channels, bias=False", ["height", "width"]),
    83: ("Conv2d", "in_channels, kernel_size, stride, padding, dilation",
         "stride=stride, padding=padding, dilation=dilation, groups=in_channels, bias=False", ["height", "width"]),
    84: ("Conv2d", "in_channels, out_channels, kernel_size, stride, padding",
         "stride=stride, padding=padding, groups=in_channels, bias=False", ["height_in", "width_in"]),
    85: ("Conv2d", "in_channels, out_channels, kernel_size_h, kernel_size_w, stride_h, stride_w, "
         "padding_h, padding_w, dilation_h, dilation_w, groups",
         "stride=(stride_h, stride_w), padding=(padding_h, padding_w), dilation=(dilation_h, dilation_w), "
         "groups=groups, bias=False", ["height", "width"]),
    87: ("Conv2d", "in_channels, out_channels", "bias=False", ["height", "width"]),
}
for k, (cls, init, kws, sp) in CONV.items():
    if k in (82, 83):
        ks = "kernel_size" if k == 82 else "(kernel_size, 1)"
        ctor = "nn.%s(in_channels, in_channels, %s, %s)" % (cls, ks, kws)
    elif k == 85:
        ctor = "nn.%s(in_channels, in_channels, (kernel_size_h, kernel_size_w), %s)" % (cls, kws)
    elif k == 87:
        ctor = "nn.%s(in_channels, out_channels, kernel_size=1, %s)" % (cls, kws)
    elif k == 68:
        ctor = "nn.%s(in_channels, out_channels, (kernel_depth, kernel_height, kernel_width), %s)" % (cls, kws)
        init = "in_channels, out_channels, kernel_depth, kernel_height, kernel_width"
    else:
        ctor = "nn.%s(in_channels, out_channels, kernel_size, %s)" % (cls, kws)
    row(k, init=init, layers=["self.conv = " + ctor], fwd=["return self.conv(x)"],
        inputs=[n("batch_size, in_channels, " + ", ".join(sp))], conv_spatial=sp)
ROWS[(1, 50)].update(
    extra={"in_channels": 3, "out_channels": 96, "kernel_size": 11, "stride": 4, "padding": 2,
           "height": 224, "width": 224},
    init="num_classes, in_channels, out_channels, kernel_size, stride, padding",
    layers=["self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)"],
    note="AlexNet's first layer: KernelBench hard-codes Conv2d(3, 96, 11, stride 4, padding 2) on 224x224 inputs; "
         "here those are constants (same defaults) so the small and tiny sets can shrink them; num_classes is unused, as there")
row(86, init="in_channels, out_channels, kernel_size, stride, padding, dilation",
    layers=["self.depthwise = nn.Conv2d(in_channels, in_channels, kernel_size, stride=stride, padding=padding, "
            "dilation=dilation, groups=in_channels, bias=False)",
            "self.pointwise = nn.Conv2d(in_channels, out_channels, kernel_size=1, bias=False)"],
    fwd=["return self.pointwise(self.depthwise(x))"], inputs=[n("batch_size, in_channels, height, width")],
    conv_spatial=["height", "width"])
ROWS[(1, 86)]["cmap"] = {"batch_size": "N", "in_channels": "CI", "out_channels": "CO", "height": "H",
                         "width": "W", "kernel_size": "K", "stride": "S", "padding": "PAD", "dilation": "DIL"}
del ROWS[(1, 86)]["conv_spatial"]

# ------------------------------------------------------------------ scans
SC = {"batch_size": "B", "input_shape": "[L]"}
XS = "batch_size, *input_shape"
row(89, init="dim", layers=["self.dim = dim"], fwd=["return torch.cumsum(x, dim=self.dim)"],
    inputs=["torch.rand(%s)" % XS], init_values="dim", cmap=SC)
row(90, init="dim", layers=["self.dim = dim"], fwd=["return torch.cumprod(x, dim=self.dim)"],
    inputs=["torch.rand(%s) * 0.02 + 0.99" % XS], init_values="dim", cmap=SC,
    note="inputs uniform[0.99, 1.01) as in the C task (products of torch.rand values underflow)")
row(91, init="dim", layers=["self.dim = dim"],
    fwd=["return torch.cumsum(x.flip(self.dim), dim=self.dim).flip(self.dim)"],
    inputs=["torch.rand(%s)" % XS], init_values="dim", cmap=SC)
row(92, init="dim", layers=["self.dim = dim"], fwd=["return torch.cumsum(x, dim=self.dim) - x"],
    inputs=["torch.rand(%s)" % XS], init_values="dim", cmap=SC,
    note="the exclusive scan itself, [B, L] (KernelBench's module slices the batch dimension by mistake), as the C task")
row(93, init="dim", layers=["self.dim = dim"], args="x, mask",
    fwd=["return torch.cumsum(x * mask, dim=self.dim)"],
    inputs=["torch.rand(%s)" % XS, "torch.randint(0, 2, (batch_size, *input_shape)).bool()"],
    init_values="dim", cmap=SC)

# ------------------------------------------------------------------ losses
LS = {"batch_size": "B", "input_shape": "[D]"}
row(94, args="predictions, targets", fwd=["return torch.mean((predictions - targets) ** 2)"],
    inputs=[n(XS), n(XS)], cmap=LS)
row(95, args="predictions, targets", fwd=["return F.cross_entropy(predictions, targets)"],
    inputs=[n(XS, 3), "torch.randint(0, num_classes, (batch_size,))"],
    cmap={"batch_size": "B", "num_classes": "C"})
row(96, args="predictions, targets", fwd=["return F.smooth_l1_loss(predictions, targets)"],
    inputs=[n(XS, 2), n(XS)], cmap=LS)
row(97, args="Q, K, V",
    fwd=["if hasattr(F, 'scaled_dot_product_attention'):",
         "    return F.scaled_dot_product_attention(Q, K, V)",
         "s = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(Q.size(-1))",
         "return torch.matmul(torch.softmax(s, dim=-1), V)"],
    inputs=["torch.randn(batch_size, num_heads, sequence_length, embedding_dimension, dtype=torch.float16)"] * 3,
    tiny={"batch_size": 2, "num_heads": 3, "sequence_length": 17, "embedding_dimension": 16},
    small={"batch_size": 4, "num_heads": 8, "sequence_length": 256, "embedding_dimension": 64},
    tolerance={"atol": 1e-2, "rtol": 1e-2},
    note="fp16 inputs as KernelBench; PyTorch < 2.0 has no scaled_dot_product_attention, so the same math is written out there")
row(98, args="predictions, targets",
    fwd=["return F.kl_div(torch.log(predictions), targets, reduction='batchmean')"],
    inputs=["torch.rand(%s) + 0.05" % XS, "torch.rand(%s) + 0.05" % XS], cmap=LS,
    note="inputs uniform[0.05, 1.05) as in the C task, not row softmaxes; the formula is KernelBench's")
row(99, init="margin=1.0", layers=["self.loss_fn = nn.TripletMarginLoss(margin=margin)"],
    args="anchor, positive, negative", fwd=["return self.loss_fn(anchor, positive, negative)"],
    inputs=[n(XS)] * 3, init_values="1.0", cmap=LS)
row(100, args="predictions, targets",
    fwd=["return torch.mean(torch.clamp(1 - predictions * targets, min=0))"],
    inputs=[n(XS), "torch.rand(*input_shape) * 2 - 1"], cmap=LS,
    note="targets have shape input_shape (broadcast over rows; KernelBench's (batch_size,) is the same shape at the default) "
         "and are uniform(-1, 1) as in the C task")
