"""Level-2 rows of the KernelBench task table (see gen.py for the row format).

Every level-2 Model starts with its layer (`self.conv` for convolutions,
`self.gemm` for nn.Linear, so that tools/kernelbench/check.py can load a C
task's weights into it) and then applies the fused sequence of operations the
problem's name lists, with the problem's constants. Spatial sizes that
problems.json does not give are `extra` constants (gen.py's defaults: 2-D
128x128 when in_channels >= 16 else 256x256, 3-D 16x32x32 when in_channels >= 16
else 16x64x64; a C task's default size where one exists).
"""

IMG = "torch.randn(batch_size, in_channels, height, width)"
VOL = "torch.randn(batch_size, in_channels, depth, height, width)"
ROWS = {}


def row(num, **kw):
    ROWS[(2, num)] = kw


def c2(extra=""):
    return "self.conv = nn.Conv2d(in_channels, out_channels, kernel_size%s)" % extra


def c3(extra=""):
    return "self.conv = nn.Conv3d(in_channels, out_channels, kernel_size%s)" % extra


def t2(extra=""):
    return "self.conv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size%s)" % extra


def t3(extra=""):
    return "self.conv = nn.ConvTranspose3d(in_channels, out_channels, kernel_size%s)" % extra


def lin(i="in_features", o="out_features", extra=""):
    return "self.gemm = nn.Linear(%s, %s%s)" % (i, o, extra)


def vec(i="in_features", std=1):
    return "torch.randn(batch_size, %s)%s" % (i, "" if std == 1 else " * %s" % std)


SPO = ", stride=stride, padding=padding, output_padding=output_padding"
SP = ", stride=stride, padding=padding"
CI = "in_channels, out_channels, kernel_size"
GEMM_C = {"batch_size": "M", "in_features": "K", "out_features": "N"}
GEMM_CI = {"batch_size": "M", "input_size": "K", "hidden_size": "N"}
CONV_C = {"batch_size": "N", "in_channels": "CI", "out_channels": "CO", "height": "H", "width": "W",
          "kernel_size": "K"}

# ---------------------------------------------------------------- with a C task
row(1, init=CI + ", bias_shape", layers=[c2(), "self.bias = nn.Parameter(torch.randn(bias_shape))"],
    fwd=["x = self.conv(x)", "x = torch.relu(x)", "x = x + self.bias", "return x"], inputs=[IMG], cmap=CONV_C)
row(9, init="in_features, out_features, subtract_value, multiply_value",
    layers=[lin(), "self.subtract_value = subtract_value", "self.multiply_value = multiply_value"],
    fwd=["x = self.gemm(x)", "x = x - self.subtract_value", "x = x * self.multiply_value",
         "return torch.relu(x)"], inputs=[vec(std=6)], cmap=GEMM_C)
row(12, init="in_features, out_features, multiplier, negative_slope",
    layers=[lin(), "self.multiplier = multiplier", "self.leaky_relu = nn.LeakyReLU(negative_slope)"],
    fwd=["x = self.gemm(x)", "x = x * self.multiplier", "return self.leaky_relu(x)"], inputs=[vec()], cmap=GEMM_C)
row(18, init="in_features, out_features", layers=[lin()],
    fwd=["x = self.gemm(x)", "x = torch.sum(x, dim=1, keepdim=True)", "x = torch.max(x, dim=1, keepdim=True)[0]",
         "x = torch.mean(x, dim=1, keepdim=True)", "x = torch.logsumexp(x, dim=1, keepdim=True)",
         "x = torch.logsumexp(x, dim=1, keepdim=True)", "return x"], inputs=[vec()], cmap=GEMM_C)
row(22, init="input_size, hidden_size, scale_factor, clamp_min, clamp_max",
    layers=[lin("input_size", "hidden_size"), "self.scale_factor = scale_factor", "self.clamp_min = clamp_min",
            "self.clamp_max = clamp_max"],
    fwd=["x = self.gemm(x)", "x = x * self.scale_factor", "x = x + x",
         "x = torch.clamp(x, self.clamp_min, self.clamp_max)", "x = torch.logsumexp(x, dim=1, keepdim=True)",
         "x = x * F.mish(x)", "return x"], inputs=[vec("input_size")], cmap=GEMM_CI)
row(29, init="in_features, out_features", layers=[lin()],
    fwd=["x = self.gemm(x)", "x = F.mish(x)", "return F.mish(x)"], inputs=[vec(std=2)], cmap=GEMM_C)
row(30, init="in_features, out_features, num_groups, hardtanh_min, hardtanh_max",
    layers=[lin(), "self.group_norm = nn.GroupNorm(num_groups, out_features)",
            "self.hardtanh = nn.Hardtanh(min_val=hardtanh_min, max_val=hardtanh_max)"],
    fwd=["x = self.gemm(x)", "x = self.group_norm(x)", "return self.hardtanh(x)"], inputs=[vec()],
    cmap=dict(GEMM_C, num_groups="G"))
row(40, init="in_features, out_features, scaling_factor", layers=[lin(), "self.scaling_factor = scaling_factor"],
    fwd=["x = self.gemm(x)", "original_x = x.clone().detach()", "x = x * self.scaling_factor",
         "return x + original_x"], inputs=[vec()], cmap=GEMM_C)
row(53, init="in_features, out_features, scaling_factor, hardtanh_min, hardtanh_max",
    layers=[lin(), "self.scaling_factor = scaling_factor",
            "self.hardtanh = nn.Hardtanh(min_val=hardtanh_min, max_val=hardtanh_max)"],
    fwd=["x = self.gemm(x)", "x = x * self.scaling_factor", "x = self.hardtanh(x)", "return F.gelu(x)"],
    inputs=[vec(std=4)], cmap=GEMM_C)
row(56, init="input_size, hidden_size", layers=[lin("input_size", "hidden_size")],
    fwd=["x = self.gemm(x)", "x = torch.sigmoid(x)", "return torch.sum(x, dim=1, keepdim=True)"],
    inputs=[vec("input_size")], cmap=GEMM_CI)
row(57, init=CI, layers=[c2()],
    fwd=["x = self.conv(x)", "x = torch.relu(x)", "return x * torch.clamp((x + 3) / 6, 0, 1)"],
    inputs=[IMG], cmap=CONV_C)
row(59, init="in_features, out_features, scaling_factor", layers=[lin(), "self.scaling_factor = scaling_factor"],
    fwd=["x = self.gemm(x)", "x = x * torch.sigmoid(x)", "return x * self.scaling_factor"],
    inputs=[vec(std=2)], cmap=GEMM_C)
row(62, init="input_size, hidden_size, num_groups, eps=1e-5, negative_slope=0.01",
    layers=[lin("input_size", "hidden_size"), "self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=hidden_size, eps=eps)",
            "self.leaky_relu = nn.LeakyReLU(negative_slope=negative_slope)"],
    fwd=["x = self.gemm(x)", "x = self.gn(x)", "x = self.leaky_relu(x)", "return x + x"],
    inputs=[vec("input_size")], cmap=dict(GEMM_CI, num_groups="G"))
row(63, init="in_features, out_features, divisor", layers=[lin(), "self.divisor = divisor"],
    fwd=["x = self.gemm(x)", "x = torch.relu(x)", "return x / self.divisor"], inputs=[vec()], cmap=GEMM_C)
row(64, init="in_features, out_features", layers=[lin()],
    fwd=["x = self.gemm(x)", "x = torch.logsumexp(x, dim=1, keepdim=True)",
         "x = F.leaky_relu(x, negative_slope=0.01)", "x = F.leaky_relu(x, negative_slope=0.01)",
         "x = F.gelu(x)", "return F.gelu(x)"], inputs=[vec()], cmap=GEMM_C)
row(67, init=CI, layers=[c2()],
    fwd=["x = self.conv(x)", "x = F.gelu(x)", "x = F.adaptive_avg_pool2d(x, 1)",
         "return x.squeeze(-1).squeeze(-1)"], inputs=[IMG], cmap=CONV_C)
row(68, init="in_features, out_features, constant",
    layers=[lin(), "self.constant = nn.Parameter(torch.tensor(constant))"],
    fwd=["x = self.gemm(x)", "x = torch.min(x, self.constant)", "return x - self.constant"],
    inputs=[vec(std=4)], cmap=GEMM_C)
row(69, init=CI, layers=[c2()],
    fwd=["x = self.conv(x)", "x = F.hardswish(x)", "return torch.relu(x)"], inputs=[IMG], cmap=CONV_C)
row(70, init="input_size, hidden_size, scaling_factor",
    layers=[lin("input_size", "hidden_size"), "self.scaling_factor = scaling_factor"],
    fwd=["x = self.gemm(x)", "original_x = x", "x = torch.sigmoid(x)", "x = x * self.scaling_factor",
         "return x + original_x"], inputs=[vec("input_size")], cmap=GEMM_CI)
row(71, init=CI + ", divisor", layers=[c2(), "self.divisor = divisor"],
    fwd=["x = self.conv(x)", "x = x / self.divisor", "return F.leaky_relu(x, negative_slope=0.01)"],
    inputs=[IMG], cmap=CONV_C)
row(76, init="in_features, out_features, bias_shape",
    layers=[lin(extra=", bias=False"), "self.bias = nn.Parameter(torch.randn(bias_shape))"],
    fwd=["x = self.gemm(x)", "x = x + self.bias", "return torch.relu(x)"], inputs=[vec()], cmap=GEMM_C)
row(81, init="in_features, out_features", layers=[lin()],
    fwd=["x = self.gemm(x)", "x = x * torch.sigmoid(x)", "x = x / 2.0", "x = torch.clamp(x, min=-1.0, max=1.0)",
         "x = torch.tanh(x)", "return torch.clamp(x, min=-1.0, max=1.0)"], inputs=[vec(std=4)], cmap=GEMM_C)
row(86, init="input_size, output_size, divisor", layers=[lin("input_size", "output_size"), "self.divisor = divisor"],
    fwd=["x = self.gemm(x)", "x = x / self.divisor", "return F.gelu(x)"], inputs=[vec("input_size", 10)],
    cmap={"batch_size": "M", "input_size": "K", "output_size": "N"})
row(87, init=CI + ", subtract_value_1, subtract_value_2",
    layers=[c2(), "self.subtract_value_1 = subtract_value_1", "self.subtract_value_2 = subtract_value_2"],
    fwd=["x = self.conv(x)", "x = x - self.subtract_value_1", "x = x - self.subtract_value_2",
         "return F.mish(x)"], inputs=[IMG], cmap=CONV_C)
row(88, init="in_features, out_features, num_groups, multiply_weight_shape",
    layers=[lin(), "self.group_norm = nn.GroupNorm(num_groups, out_features)",
            "self.multiply_weight = nn.Parameter(torch.randn(multiply_weight_shape))"],
    fwd=["x = self.gemm(x)", "x = self.group_norm(x)", "x = x * torch.sigmoid(x)", "x = x * self.multiply_weight",
         "return x * torch.sigmoid(x)"], inputs=[vec()], cmap=dict(GEMM_C, num_groups="G"))
row(95, init="in_features, out_features, add_value_shape",
    layers=[lin(), "self.add_value = nn.Parameter(torch.randn(add_value_shape))"],
    fwd=["x = self.gemm(x)", "x = x + self.add_value", "x = torch.sigmoid(x) * x", "x = torch.tanh(x)",
         "x = F.gelu(x)", "return F.hardtanh(x, min_val=-1, max_val=1)"], inputs=[vec(std=2)], cmap=GEMM_C)
row(99, init="in_features, out_features", layers=[lin()],
    fwd=["x = self.gemm(x)", "x = F.gelu(x)", "return F.softmax(x, dim=1)"], inputs=[vec(std=2)], cmap=GEMM_C)

# ---------------------------------------------------------------- without a C task
row(2, init=CI + ", stride, padding, output_padding, bias_shape, scaling_factor",
    layers=[t2(SPO), "self.bias = nn.Parameter(torch.randn(bias_shape))", "self.scaling_factor = scaling_factor"],
    fwd=["x = self.conv(x)", "x = x + self.bias", "x = torch.clamp(x, min=0.0, max=1.0)",
         "x = x * self.scaling_factor", "x = torch.clamp(x, min=0.0, max=1.0)", "return x / self.scaling_factor"],
    inputs=[IMG])
row(3, init=CI + ", stride, padding, output_padding, sum_weight, norm_shape, pool_kernel_size",
    layers=[t3(SPO), "self.sum_weight = nn.Parameter(torch.tensor(sum_weight))",
            "self.norm = nn.LayerNorm(norm_shape)", "self.avg_pool = nn.AvgPool3d(kernel_size=pool_kernel_size)",
            "self.gelu = nn.GELU()"],
    fwd=["x = self.conv(x)", "x = x + self.sum_weight", "x = self.norm(x)", "x = self.avg_pool(x)",
         "return self.gelu(x)"], inputs=[VOL], extra={"depth": 16, "height": 32, "width": 32},
    tiny={"width": 4, "out_channels": 8}, small={"width": 8, "out_channels": 16},
    note="LayerNorm(norm_shape) normalizes the last dimension, so the output width 2 * width must equal out_channels (every shape set keeps that)")
row(4, init=CI, layers=[c2()], fwd=["x = self.conv(x)", "x = F.mish(x)", "return F.mish(x)"], inputs=[IMG])
row(5, init=CI + ", bias_shape, stride=2, padding=1, output_padding=1",
    layers=[t2(SPO), "self.bias = nn.Parameter(torch.randn(bias_shape))"],
    fwd=["x = self.conv(x)", "x = x - self.bias", "return torch.tanh(x)"], inputs=[IMG],
    note="stride 2, padding 1, output_padding 1 are the constructor's defaults (problems.json lists no such constants)")
row(6, init=CI + ", pool_kernel_size",
    layers=[c3(), "self.pool1 = nn.MaxPool3d(pool_kernel_size)", "self.pool2 = nn.MaxPool3d(pool_kernel_size)"],
    fwd=["x = self.conv(x)", "x = torch.softmax(x, dim=1)", "x = self.pool1(x)", "return self.pool2(x)"],
    inputs=[VOL])
row(7, init=CI + ", bias_shape", layers=[c3(), "self.bias = nn.Parameter(torch.randn(bias_shape))"],
    fwd=["x = self.conv(x)", "x = torch.relu(x)", "x = F.leaky_relu(x, negative_slope=0.01)", "x = F.gelu(x)",
         "x = torch.sigmoid(x)", "return x + self.bias"], inputs=[VOL])
row(8, init=CI + ", divisor, pool_size, bias_shape, sum_dim",
    layers=[c3(), "self.divisor = divisor", "self.max_pool = nn.MaxPool3d(pool_size)",
            "self.global_avg_pool = nn.AdaptiveAvgPool3d((1, 1, 1))",
            "self.bias = nn.Parameter(torch.randn(bias_shape))", "self.sum_dim = sum_dim"],
    fwd=["x = self.conv(x)", "x = x / self.divisor", "x = self.max_pool(x)", "x = self.global_avg_pool(x)",
         "x = x + self.bias", "return torch.sum(x, dim=self.sum_dim)"], inputs=[VOL])
row(10, init=CI + ", stride, padding, maxpool_kernel_size, maxpool_stride, hardtanh_min, hardtanh_max",
    layers=[t2(SP), "self.maxpool = nn.MaxPool2d(kernel_size=maxpool_kernel_size, stride=maxpool_stride)",
            "self.hardtanh = nn.Hardtanh(min_val=hardtanh_min, max_val=hardtanh_max)"],
    fwd=["x = self.conv(x)", "x = self.maxpool(x)", "x = self.hardtanh(x)",
         "x = torch.mean(x, dim=(2, 3), keepdim=True)", "return torch.tanh(x)"], inputs=[IMG])
row(11, init=CI + ", stride, padding, groups, num_groups",
    layers=[t2(SP), "self.batch_norm = nn.BatchNorm2d(out_channels)", "self.tanh = nn.Tanh()",
            "self.max_pool = nn.MaxPool2d(kernel_size=2, stride=2)",
            "self.group_norm = nn.GroupNorm(num_groups=num_groups, num_channels=out_channels)"],
    fwd=["x = self.conv(x)", "x = self.batch_norm(x)", "x = self.tanh(x)", "x = self.max_pool(x)",
         "return self.group_norm(x)"], inputs=[IMG], note="groups is unused, as in KernelBench")
row(13, init=CI + ", stride, padding, scaling_factor",
    layers=[t3(SP), "self.bias = nn.Parameter(torch.randn(1, 1, 1, 1, 1))", "self.scaling_factor = scaling_factor"],
    fwd=["x = self.conv(x)", "x = x.mean(dim=1, keepdim=True)", "x = x + self.bias",
         "x = torch.softmax(x, dim=1)", "x = torch.tanh(x)", "return x * self.scaling_factor"], inputs=[VOL],
    note="softmax over the size-1 channel dimension is 1 everywhere: the output is the constant tanh(1) * scaling_factor (KernelBench's problem as named)")
row(14, init="input_size, hidden_size, scaling_factor",
    layers=["self.weight = nn.Parameter(torch.randn(hidden_size, input_size))", "self.scaling_factor = scaling_factor"],
    fwd=["x = torch.matmul(x, self.weight.T)", "x = x / 2", "x = torch.sum(x, dim=1, keepdim=True)",
         "return x * self.scaling_factor"], inputs=[vec("input_size")])
row(15, init=CI + ", stride, padding, bias=True",
    layers=[t3(SP + ", bias=bias"), "self.batch_norm = nn.BatchNorm3d(out_channels)"],
    fwd=["x = self.conv(x)", "x = self.batch_norm(x)", "return x - torch.mean(x, dim=(2, 3, 4), keepdim=True)"],
    inputs=[VOL])
row(16, init=CI + ", stride, padding, output_padding, add_value, scale",
    layers=[t2(SPO), "self.add_value = add_value", "self.scale = scale"],
    fwd=["x = self.conv(x)", "x = F.mish(x)", "x = x + self.add_value",
         "x = F.hardtanh(x, min_val=-1, max_val=1)", "return x * self.scale"], inputs=[IMG])
row(17, init=CI + ", divide_by",
    layers=[c2(), "self.instance_norm = nn.InstanceNorm2d(out_channels)", "self.divide_by = divide_by"],
    fwd=["x = self.conv(x)", "x = self.instance_norm(x)", "return x / self.divide_by"], inputs=[IMG])
row(19, init=CI + ", stride, groups, num_groups",
    layers=[t2(", stride=stride"), "self.group_norm = nn.GroupNorm(num_groups=num_groups, num_channels=out_channels)"],
    fwd=["x = self.conv(x)", "x = F.gelu(x)", "return self.group_norm(x)"], inputs=[IMG],
    note="groups is unused, as in KernelBench")
row(20, init=CI + ", stride, padding, output_padding, bias_shape",
    layers=[t3(SPO), "self.bias = nn.Parameter(torch.randn(bias_shape))"],
    fwd=["x = self.conv(x)", "original_x = x.clone().detach()", "x = x + self.bias", "x = x + original_x",
         "x = x * original_x", "return x + original_x"], inputs=[VOL])
row(21, init=CI + ", num_groups, bias_shape, scale_shape",
    layers=[c2(), "self.bias = nn.Parameter(torch.randn(bias_shape))",
            "self.scale = nn.Parameter(torch.randn(scale_shape))",
            "self.group_norm = nn.GroupNorm(num_groups, out_channels)"],
    fwd=["x = self.conv(x)", "x = x + self.bias", "x = x * self.scale", "x = torch.sigmoid(x)",
         "return self.group_norm(x)"], inputs=[IMG])
row(23, init=CI + ", num_groups", layers=[c3(), "self.group_norm = nn.GroupNorm(num_groups, out_channels)"],
    fwd=["x = self.conv(x)", "x = self.group_norm(x)", "return x.mean(dim=[1, 2, 3, 4])"], inputs=[VOL])
row(24, init=CI + ", dim", layers=[c3(), "self.dim = dim"],
    fwd=["x = self.conv(x)", "x = torch.min(x, dim=self.dim)[0]", "return torch.softmax(x, dim=1)"], inputs=[VOL])
row(25, init=CI, layers=[c2()],
    fwd=["x = self.conv(x)", "x = torch.min(x, dim=1, keepdim=True)[0]", "x = torch.tanh(x)",
         "return torch.tanh(x)"], inputs=[IMG])
row(26, init=CI + ", stride, padding, output_padding, bias_shape",
    layers=[t3(SPO), "self.bias = nn.Parameter(torch.randn(bias_shape))"], args="x, add_input",
    fwd=["x = self.conv(x)", "x = x + add_input", "return x * F.hardswish(x)"],
    inputs=[VOL, "torch.randn(batch_size, out_channels, depth * stride, height * stride, width * stride)"],
    note="bias is an unused parameter, as in KernelBench; add_input has the convolution's output shape")
row(27, init=CI + ", num_groups=4, bias=True",
    layers=[c3(", bias=bias"), "self.group_norm = nn.GroupNorm(num_groups, out_channels)"],
    fwd=["x = self.conv(x)", "x = F.hardswish(x)", "x = self.group_norm(x)",
         "return torch.mean(x, dim=[2, 3, 4])"], inputs=[VOL],
    extra={"depth": 16, "height": 32, "width": 32})
row(28, init="in_features, out_features, eps=1e-5, momentum=0.1",
    layers=[lin(), "self.instance_norm = nn.InstanceNorm2d(out_features, eps=eps, momentum=momentum)"],
    args="x, y",
    fwd=["x = self.gemm(x)", "x = self.instance_norm(x.unsqueeze(1).unsqueeze(1)).squeeze(1).squeeze(1)",
         "x = x + y", "return x * y"], inputs=[vec(), "torch.randn(batch_size, out_features)"])
row(31, init=CI + ", constant_value, bias_shape, scaling_factor",
    layers=[c2(), "self.constant_value = constant_value", "self.bias = nn.Parameter(torch.randn(bias_shape))",
            "self.scaling_factor = scaling_factor"],
    fwd=["x = self.conv(x)", "x = torch.min(x, torch.tensor(self.constant_value))", "x = x + self.bias",
         "return x * self.scaling_factor"], inputs=[IMG])
row(32, init=CI + ", scale_factor", layers=[c2(), "self.scale_factor = scale_factor"],
    fwd=["x = self.conv(x)", "x = x * self.scale_factor", "return torch.min(x, dim=1, keepdim=True)[0]"],
    inputs=[IMG])
for k in (33, 39):
    row(k, init="in_features, out_features, scale_shape, eps=1e-5, momentum=0.1",
        layers=[lin(), "self.scale = nn.Parameter(torch.randn(scale_shape))",
                "self.bn = nn.BatchNorm1d(out_features, eps=eps, momentum=momentum)"],
        fwd=["x = self.gemm(x)", "x = x * self.scale", "return self.bn(x)"], inputs=[vec()])
row(34, init=CI + ", stride, padding, bias, eps, scaling_factor",
    layers=[t3(SP + ", bias=bias"), "self.layer_norm = nn.LayerNorm(out_channels, eps=eps)",
            "self.scaling_factor = scaling_factor"],
    fwd=["x = self.conv(x)", "x = self.layer_norm(x)", "x = F.gelu(x)", "return x * self.scaling_factor"],
    inputs=[VOL], extra={"depth": 16, "height": 32, "width": 32},
    tiny={"width": 4, "out_channels": 8}, small={"width": 8, "out_channels": 16},
    note="LayerNorm(out_channels) normalizes the last dimension, so the output width 2 * width must equal out_channels (every shape set keeps that)")
row(35, init=CI + ", subtract_value, pool_kernel_size",
    layers=[c2(), "self.subtract_value = subtract_value", "self.pool = nn.MaxPool2d(pool_kernel_size)"],
    fwd=["x = self.conv(x)", "x = x - self.subtract_value", "x = F.hardswish(x)", "x = self.pool(x)",
         "return F.mish(x)"], inputs=[IMG])
row(36, init=CI + ", stride, padding, output_padding, bias_shape",
    layers=[t2(SPO), "self.bias = nn.Parameter(torch.randn(bias_shape))"],
    fwd=["x = self.conv(x)", "x = torch.min(x, dim=1, keepdim=True)[0]", "x = torch.sum(x, dim=2, keepdim=True)",
         "x = F.gelu(x)", "return x + self.bias"], inputs=[IMG])
row(37, init="in_features, out_features, num_groups, bias_shape",
    layers=[lin(), "self.bias = nn.Parameter(torch.randn(bias_shape))",
            "self.group_norm = nn.GroupNorm(num_groups, out_features)"],
    fwd=["x = self.gemm(x)", "x = torch.sigmoid(x) * x", "x = x + self.bias", "return self.group_norm(x)"],
    inputs=[vec()])
row(38, init=CI + ", stride, padding, output_padding, pool_kernel_size, clamp_min, clamp_max",
    layers=[t3(SPO), "self.avg_pool = nn.AvgPool3d(pool_kernel_size)", "self.clamp_min = clamp_min",
            "self.clamp_max = clamp_max"],
    fwd=["x = self.conv(x)", "x = self.avg_pool(x)", "x = torch.clamp(x, self.clamp_min, self.clamp_max)",
         "x = torch.softmax(x, dim=1)", "return x * 2"], inputs=[VOL])
row(41, init="in_features, out_features", layers=[lin(), "self.batch_norm = nn.BatchNorm1d(out_features)"],
    fwd=["x = self.gemm(x)", "x = self.batch_norm(x)", "x = F.gelu(x)", "return torch.relu(x)"], inputs=[vec()])
row(42, init=CI + ", bias_shape", layers=[t2(), "self.bias = nn.Parameter(torch.randn(bias_shape))"],
    fwd=["x = self.conv(x)", "x = torch.mean(x, dim=(2, 3), keepdim=True)", "x = x + self.bias",
         "x = torch.logsumexp(x, dim=1, keepdim=True)", "x = torch.sum(x, dim=(2, 3))", "return x * 10.0"],
    inputs=[IMG])
row(43, init=CI + ", stride, padding",
    layers=[c3(SP), "self.max_pool = nn.MaxPool3d(kernel_size=2, stride=2)"],
    fwd=["x = self.conv(x)", "x = self.max_pool(x)", "x = torch.logsumexp(x, dim=1, keepdim=True)",
         "return torch.relu(x)"], inputs=[VOL])
row(44, init=CI + ", stride, padding, output_padding, multiplier",
    layers=[t2(SPO), "self.multiplier = multiplier"],
    fwd=["x = self.conv(x)", "x = x * self.multiplier", "x = torch.mean(x, dim=[2, 3], keepdim=True)",
         "return torch.mean(x, dim=[2, 3], keepdim=True)"], inputs=[IMG])
row(45, init="input_size, hidden_size, output_size",
    layers=["self.gemm = nn.Linear(input_size, hidden_size)", "self.linear2 = nn.Linear(hidden_size, output_size)"],
    fwd=["x = self.gemm(x)", "x = torch.sigmoid(x)", "x = self.linear2(x)", "return torch.logsumexp(x, dim=1)"],
    inputs=[vec("input_size")])
row(46, init=CI + ", subtract1_value, subtract2_value, kernel_size_pool",
    layers=[c2(), "self.subtract1_value = subtract1_value", "self.subtract2_value = subtract2_value",
            "self.avgpool = nn.AvgPool2d(kernel_size_pool)"],
    fwd=["x = self.conv(x)", "x = x - self.subtract1_value", "x = torch.tanh(x)", "x = x - self.subtract2_value",
         "return self.avgpool(x)"], inputs=[IMG])
row(47, init=CI, layers=[c3()], fwd=["x = self.conv(x)", "x = F.mish(x)", "return torch.tanh(x)"], inputs=[VOL])
row(48, init=CI + ", scaling_factor, bias_shape",
    layers=[c3(), "self.scaling_factor = nn.Parameter(torch.randn(bias_shape))",
            "self.bias = nn.Parameter(torch.randn(bias_shape))"],
    fwd=["x = self.conv(x)", "x = x * self.scaling_factor", "x = torch.tanh(x)", "x = x * self.bias",
         "return torch.sigmoid(x)"], inputs=[VOL],
    note="the scaling factor is a per-channel parameter of bias_shape (scaling_factor, the constant, is unused, as in KernelBench)")
row(49, init=CI + ", stride, padding, output_padding, bias=True",
    layers=[t3(SPO + ", bias=bias")],
    fwd=["x = self.conv(x)", "x = torch.softmax(x, dim=1)", "return torch.sigmoid(x)"], inputs=[VOL])
row(50, init=CI + ", stride, padding, scale1, scale2, bias_shape",
    layers=[t3(SP), "self.scale1 = nn.Parameter(torch.tensor(scale1))", "self.avg_pool = nn.AvgPool3d(kernel_size=2)",
            "self.bias = nn.Parameter(torch.randn(bias_shape))", "self.scale2 = nn.Parameter(torch.tensor(scale2))"],
    fwd=["x = self.conv(x)", "x = x * self.scale1", "x = self.avg_pool(x)", "x = x + self.bias",
         "return x * self.scale2"], inputs=[VOL])
row(51, init="in_features, out_features, bias=True",
    layers=[lin(extra=", bias=bias"), "self.subtract = nn.Parameter(torch.randn(out_features))"],
    fwd=["original_x = x.clone().detach()", "x = self.gemm(x)", "x = x - self.subtract",
         "x = torch.mean(x, dim=1, keepdim=True)", "x = torch.logsumexp(x, dim=1, keepdim=True)",
         "x = F.gelu(x)", "return x + original_x"], inputs=[vec()])
row(52, init=CI + ", eps=1e-5, momentum=0.1",
    layers=[c2(), "self.bn = nn.BatchNorm2d(out_channels, eps=eps, momentum=momentum)"],
    fwd=["x = self.conv(x)", "x = torch.multiply(torch.tanh(F.softplus(x)), x)", "return self.bn(x)"],
    inputs=[IMG])
row(54, init=CI + ", multiplier_shape",
    layers=[c2(), "self.multiplier = nn.Parameter(torch.randn(multiplier_shape))", "self.leaky_relu = nn.LeakyReLU()"],
    fwd=["x = self.conv(x)", "x = x * self.multiplier", "x = self.leaky_relu(x)", "return F.gelu(x)"],
    inputs=[IMG])
row(55, init="in_features, out_features, kernel_size, scale_factor",
    layers=[lin(), "self.max_pool = nn.MaxPool1d(kernel_size)", "self.scale_factor = scale_factor"],
    fwd=["x = self.gemm(x)", "x = self.max_pool(x.unsqueeze(1)).squeeze(1)", "x = torch.sum(x, dim=1)",
         "return x * self.scale_factor"], inputs=[vec()])
row(58, init=CI + ", stride, padding, bias_shape",
    layers=[t3(SP), "self.bias = nn.Parameter(torch.randn(bias_shape))"],
    fwd=["x = self.conv(x)", "x = torch.logsumexp(x, dim=1, keepdim=True)", "x = x * torch.sigmoid(x + 3) / 6",
         "x = x - self.bias", "return torch.clamp(x, min=-1, max=1)"], inputs=[VOL])
row(60, init=CI + ", stride, padding, groups, eps, bias=True",
    layers=[t3(SP + ", bias=bias"), "self.group_norm = nn.GroupNorm(num_groups=groups, num_channels=out_channels, eps=eps)"],
    fwd=["x = self.conv(x)", "x = torch.sigmoid(x) * x", "x = self.group_norm(x)", "return F.hardswish(x)"],
    inputs=[VOL])
row(61, init=CI + ", groups, bias",
    layers=[t3(", bias=bias"), "self.group_norm = nn.GroupNorm(num_groups=groups, num_channels=out_channels)"],
    fwd=["x = self.conv(x)", "x = torch.relu(x)", "return self.group_norm(x)"], inputs=[VOL])
row(65, init=CI + ", pool_kernel_size", layers=[c2(), "self.avg_pool = nn.AvgPool2d(pool_kernel_size)"],
    fwd=["x = self.conv(x)", "x = self.avg_pool(x)", "x = torch.sigmoid(x)", "return torch.sum(x, dim=[1, 2, 3])"],
    inputs=[IMG])
row(66, init="in_features, out_features, dropout_p", layers=[lin(), "self.dropout_p = dropout_p"],
    fwd=["x = self.gemm(x)", "x = F.dropout(x, p=self.dropout_p, training=False)", "return torch.softmax(x, dim=1)"],
    inputs=[vec()], note="dropout is applied as in evaluation (the identity): a training-mode dropout draws a random mask that no candidate can reproduce")
row(72, init=CI + ", stride, padding, bias_shape",
    layers=[t3(SP), "self.batch_norm = nn.BatchNorm3d(out_channels)", "self.avg_pool1 = nn.AvgPool3d(kernel_size=2)",
            "self.avg_pool2 = nn.AvgPool3d(kernel_size=2)"],
    fwd=["x = self.conv(x)", "x = self.batch_norm(x)", "x = self.avg_pool1(x)", "return self.avg_pool2(x)"],
    inputs=[VOL], note="bias_shape is unused, as in KernelBench")
row(73, init=CI + ", scaling_factor",
    layers=[c2(), "self.bn = nn.BatchNorm2d(out_channels)", "self.scaling_factor = scaling_factor"],
    fwd=["x = self.conv(x)", "x = self.bn(x)", "return x * self.scaling_factor"], inputs=[IMG])
row(74, init=CI + ", stride, padding, output_padding, multiplier_shape",
    layers=[t3(SPO), "self.multiplier = nn.Parameter(torch.randn(multiplier_shape))",
            "self.leaky_relu = nn.LeakyReLU(negative_slope=0.2)", "self.max_pool = nn.MaxPool3d(kernel_size=2)"],
    fwd=["x = self.conv(x)", "x = self.leaky_relu(x)", "x = x * self.multiplier", "x = self.leaky_relu(x)",
         "return self.max_pool(x)"], inputs=[VOL])
row(75, init="in_features, out_features, num_groups, bias_shape",
    layers=[lin(), "self.group_norm = nn.GroupNorm(num_groups, out_features)",
            "self.bias = nn.Parameter(torch.randn(bias_shape))"],
    fwd=["x = self.gemm(x)", "x = self.group_norm(x)", "x = torch.min(x, dim=1, keepdim=True)[0]",
         "return x + self.bias"], inputs=[vec()],
    note="the [batch_size, 1] minimum plus the (1, out_features, 1, 1) bias broadcasts to [1, out_features, batch_size, 1], as in KernelBench")
row(77, init=CI + ", scale_factor, eps=1e-5, momentum=0.1",
    layers=[t3(), "self.scale_factor = scale_factor",
            "self.batch_norm = nn.BatchNorm3d(out_channels, eps=eps, momentum=momentum)",
            "self.global_avg_pool = nn.AdaptiveAvgPool3d((1, 1, 1))"],
    fwd=["x = self.conv(x)", "x = x * self.scale_factor", "x = self.batch_norm(x)",
         "return self.global_avg_pool(x)"], inputs=[VOL])
row(78, init=CI + ", stride, padding",
    layers=[t3(SP), "self.max_pool1 = nn.MaxPool3d(kernel_size=2)", "self.max_pool2 = nn.MaxPool3d(kernel_size=3)"],
    fwd=["x = self.conv(x)", "x = self.max_pool1(x)", "x = self.max_pool2(x)",
         "return torch.sum(x, dim=1, keepdim=True)"], inputs=[VOL])
row(79, init=CI + ", multiplier_shape, clamp_min, clamp_max",
    layers=[c3(), "self.multiplier = nn.Parameter(torch.randn(multiplier_shape))",
            "self.instance_norm = nn.InstanceNorm3d(out_channels)", "self.clamp_min = clamp_min",
            "self.clamp_max = clamp_max"],
    fwd=["x = self.conv(x)", "x = x * self.multiplier", "x = self.instance_norm(x)",
         "x = torch.clamp(x, self.clamp_min, self.clamp_max)", "x = x * self.multiplier",
         "return torch.max(x, dim=1)[0]"], inputs=[VOL])
row(80, init="in_features, out_features, max_dim", layers=[lin(), "self.max_dim = max_dim"],
    fwd=["x = self.gemm(x)", "x = torch.max(x, dim=self.max_dim, keepdim=True).values",
         "x = x - x.mean(dim=1, keepdim=True)", "return F.gelu(x)"], inputs=[vec()],
    note="with max_dim = 1 the maximum is [batch_size, 1] and subtracting its own mean gives zeros: the output is 0 (KernelBench's problem as named)")
row(82, init=CI + ", scaling_factor, bias_shape, pool_kernel_size",
    layers=[c2(), "self.scaling_factor = scaling_factor", "self.bias = nn.Parameter(torch.randn(bias_shape))",
            "self.max_pool = nn.MaxPool2d(pool_kernel_size)"],
    fwd=["x = self.conv(x)", "x = torch.tanh(x)", "x = x * self.scaling_factor", "x = x + self.bias",
         "return self.max_pool(x)"], inputs=[IMG])
row(83, init=CI + ", groups, min_value, max_value, dropout_p",
    layers=[c3(), "self.norm = nn.GroupNorm(groups, out_channels)", "self.min_value = min_value",
            "self.max_value = max_value", "self.dropout_p = dropout_p"],
    fwd=["x = self.conv(x)", "x = self.norm(x)", "x = torch.min(x, torch.tensor(self.min_value))",
         "x = torch.clamp(x, min=self.min_value, max=self.max_value)",
         "return F.dropout(x, p=self.dropout_p, training=False)"], inputs=[VOL],
    note="min(x, 0) then clamp to [0, 1] is 0 everywhere (KernelBench's problem as named); dropout as in evaluation (see 66)")
row(84, init="in_features, out_features, bn_eps, bn_momentum, scale_shape",
    layers=[lin(), "self.bn = nn.BatchNorm1d(out_features, eps=bn_eps, momentum=bn_momentum)",
            "self.scale = nn.Parameter(torch.ones(scale_shape))"],
    fwd=["x = self.gemm(x)", "x = self.bn(x)", "x = self.scale * x", "return torch.softmax(x, dim=1)"],
    inputs=[vec()])
row(85, init=CI + ", num_groups, scale_shape, maxpool_kernel_size, clamp_min, clamp_max",
    layers=[c2(), "self.group_norm = nn.GroupNorm(num_groups, out_channels)",
            "self.scale = nn.Parameter(torch.ones(scale_shape))",
            "self.maxpool = nn.MaxPool2d(kernel_size=maxpool_kernel_size)", "self.clamp_min = clamp_min",
            "self.clamp_max = clamp_max"],
    fwd=["x = self.conv(x)", "x = self.group_norm(x)", "x = x * self.scale", "x = self.maxpool(x)",
         "return torch.clamp(x, self.clamp_min, self.clamp_max)"], inputs=[IMG])
row(89, init=CI + ", stride, padding, output_padding, pool_kernel_size, pool_stride, pool_padding",
    layers=[t3(SPO), "self.max_pool = nn.MaxPool3d(kernel_size=pool_kernel_size, stride=pool_stride, padding=pool_padding)",
            "self.subtract = nn.Parameter(torch.randn(out_channels))"],
    fwd=["x = self.conv(x)", "x = self.max_pool(x)", "x = torch.softmax(x, dim=1)",
         "x = x - self.subtract.view(1, -1, 1, 1, 1)", "x = torch.sigmoid(x) * x", "return torch.max(x, dim=1)[0]"],
    inputs=[VOL])
row(90, init=CI + ", sum_tensor_shape",
    layers=[c3(), "self.sum_tensor = nn.Parameter(torch.randn(sum_tensor_shape))"],
    fwd=["x = self.conv(x)", "x = F.leaky_relu(x, negative_slope=0.2)", "x = x + self.sum_tensor",
         "x = torch.clamp(x, min=-1.0, max=1.0)", "return F.gelu(x)"], inputs=[VOL])
row(91, init=CI + ", stride, padding, output_padding, bias_shape, scaling_factor",
    layers=[t2(SPO), "self.bias = nn.Parameter(torch.randn(bias_shape))", "self.scaling_factor = scaling_factor"],
    fwd=["x = self.conv(x)", "x = torch.softmax(x, dim=1)", "x = x + self.bias", "x = x * self.scaling_factor",
         "return torch.sigmoid(x)"], inputs=[IMG])
row(92, init=CI + ", groups, eps=1e-5",
    layers=[c2(), "self.group_norm = nn.GroupNorm(groups, out_channels, eps=eps)", "self.tanh = nn.Tanh()",
            "self.hard_swish = nn.Hardswish()"],
    fwd=["x_conv = self.conv(x)", "x_norm = self.group_norm(x_conv)", "x_tanh = self.tanh(x_norm)",
         "x_hard_swish = self.hard_swish(x_tanh)", "x_res = x_conv + x_hard_swish",
         "return torch.logsumexp(x_res, dim=1, keepdim=True)"], inputs=[IMG])
row(93, init=CI + ", stride, add_value, multiply_value",
    layers=[t2(", stride=stride"), "self.add_value = add_value", "self.multiply_value = multiply_value"],
    fwd=["x = self.conv(x)", "x = x + self.add_value", "x = torch.min(x, torch.tensor(0.0))", "x = F.gelu(x)",
         "return x * self.multiply_value"], inputs=[IMG])
row(94, init="in_features, out_features, bias_shape, num_groups",
    layers=[lin(), "self.bias = nn.Parameter(torch.randn(bias_shape))", "self.hardtanh = nn.Hardtanh()",
            "self.mish = nn.Mish()", "self.groupnorm = nn.GroupNorm(num_groups=num_groups, num_channels=out_features)"],
    fwd=["x = self.gemm(x)", "x = x + self.bias", "x = self.hardtanh(x)", "x = self.mish(x)",
         "return self.groupnorm(x)"], inputs=[vec()])
row(96, init=CI + ", stride, padding, scale, maxpool_kernel_size",
    layers=[t3(SP), "self.scale = scale", "self.maxpool = nn.MaxPool3d(kernel_size=maxpool_kernel_size)",
            "self.global_avg_pool = nn.AdaptiveAvgPool3d((1, 1, 1))"],
    fwd=["x = self.conv(x)", "x = x * self.scale", "x = self.maxpool(x)", "x = self.global_avg_pool(x)",
         "return torch.clamp(x, min=0, max=1)"], inputs=[VOL])
row(97, init="in_features, out_features, bn_eps, bn_momentum, bias_shape, divide_value",
    layers=[lin(), "self.bn = nn.BatchNorm1d(out_features, eps=bn_eps, momentum=bn_momentum)",
            "self.bias = nn.Parameter(torch.randn(bias_shape))", "self.divide_value = divide_value"],
    fwd=["x = self.gemm(x)", "x = self.bn(x)", "x = x + self.bias", "x = x / self.divide_value",
         "return x * torch.sigmoid(x)"], inputs=[vec()])
row(98, init="in_features, out_features, pool_kernel_size, scale_factor",
    layers=[lin(), "self.avg_pool = nn.AvgPool1d(kernel_size=pool_kernel_size)", "self.scale_factor = scale_factor"],
    fwd=["x = self.gemm(x)", "x = self.avg_pool(x.unsqueeze(1)).squeeze(1)", "x = F.gelu(x)",
         "x = x * self.scale_factor", "return torch.max(x, dim=1).values"], inputs=[vec()])
row(100, init=CI + ", stride, padding, min_value, divisor",
    layers=[t3(SP), "self.min_value = min_value", "self.divisor = divisor"],
    fwd=["x = self.conv(x)", "x = torch.clamp(x, min=self.min_value)", "return x / self.divisor"], inputs=[VOL])
