"""torch_ops_level2 - the PyTorch computation of every level-2 task, from its inputs.

OPS2 (also exported as OPS, the name torch_ops._load_extensions() merges into
torch_ops.OPS) maps a task name to fn(inp, P) -> {output buffer name: tensor},
like torch_ops.OPS: inp maps input buffer names to fp32
tensors, P the shape set's params. These are the KernelBench level-2 Models'
forward passes written with torch / torch.nn.functional, the module's
parameters taken from the task's buffers (nn.Linear weight W [N, K] and bias b;
nn.Conv2d weight w and bias cb; extra parameters under the model's names) and
its constants from the problem (problems.json). Nothing here shares code with
kevald's CUDA references.
"""
import torch
import torch.nn.functional as F

OPS2 = {}
OPS = OPS2


def op(name):
    def deco(fn):
        OPS2[name] = fn
        return fn
    return deco


def _lin(inp):
    return F.linear(inp["x"], inp["W"], inp.get("b"))


# ---- gemm_epilogue -------------------------------------------------------
@op("l2_9_matmul_subtract_multiply_relu")
def _k9(inp, P):
    x = _lin(inp)
    x = x - 2.0
    x = x * 1.5
    return {"y": torch.relu(x)}


@op("l2_12_gemm_multiply_leakyrelu")
def _k12(inp, P):
    x = _lin(inp) * 2.0
    return {"y": F.leaky_relu(x, negative_slope=0.1)}


@op("l2_29_matmul_mish_mish")
def _k29(inp, P):
    return {"y": F.mish(F.mish(_lin(inp)))}


@op("l2_40_matmul_scaling_residualadd")
def _k40(inp, P):
    x = _lin(inp)
    orig = x.clone().detach()
    x = x * 0.5
    return {"y": x + orig}


@op("l2_53_gemm_scaling_hardtanh_gelu")
def _k53(inp, P):
    x = _lin(inp) * 0.5
    x = F.hardtanh(x, min_val=-2.0, max_val=2.0)
    return {"y": F.gelu(x)}


@op("l2_59_matmul_swish_scaling")
def _k59(inp, P):
    x = _lin(inp)
    x = x * torch.sigmoid(x)
    return {"y": x * 2.0}


@op("l2_63_gemm_relu_divide")
def _k63(inp, P):
    return {"y": torch.relu(_lin(inp)) / 2.0}


@op("l2_68_matmul_min_subtract")
def _k68(inp, P):
    c = torch.tensor(2.0, device=inp["x"].device)
    x = torch.min(_lin(inp), c)
    return {"y": x - c}


@op("l2_70_gemm_sigmoid_scaling_residualadd")
def _k70(inp, P):
    x = _lin(inp)
    orig = x
    x = torch.sigmoid(x) * 2.0
    return {"y": x + orig}


@op("l2_76_gemm_add_relu")
def _k76(inp, P):
    x = F.linear(inp["x"], inp["W"]) + inp["bias"]
    return {"y": torch.relu(x)}


@op("l2_81_gemm_swish_divide_clamp_tanh_clamp")
def _k81(inp, P):
    x = _lin(inp)
    x = x * torch.sigmoid(x)
    x = x / 2.0
    x = torch.clamp(x, min=-1.0, max=1.0)
    x = torch.tanh(x)
    return {"y": torch.clamp(x, min=-1.0, max=1.0)}


@op("l2_86_matmul_divide_gelu")
def _k86(inp, P):
    return {"y": F.gelu(_lin(inp) / 10.0)}


@op("l2_95_matmul_add_swish_tanh_gelu_hardtanh")
def _k95(inp, P):
    x = _lin(inp) + inp["add_value"]
    x = torch.sigmoid(x) * x
    x = torch.tanh(x)
    x = F.gelu(x)
    return {"y": F.hardtanh(x, min_val=-1, max_val=1)}


# ---- gemm_reduction ------------------------------------------------------
@op("l2_18_matmul_sum_max_avgpool_logsumexp_logsumexp")
def _k18(inp, P):
    x = _lin(inp)
    x = torch.sum(x, dim=1, keepdim=True)
    x = torch.max(x, dim=1, keepdim=True)[0]
    x = torch.mean(x, dim=1, keepdim=True)
    x = torch.logsumexp(x, dim=1, keepdim=True)
    x = torch.logsumexp(x, dim=1, keepdim=True)
    return {"y": x}


@op("l2_56_matmul_sigmoid_sum")
def _k56(inp, P):
    return {"y": torch.sum(torch.sigmoid(_lin(inp)), dim=1, keepdim=True)}


@op("l2_22_matmul_scale_residualadd_clamp_logsumexp_mish")
def _k22(inp, P):
    x = _lin(inp)
    x = x * 2.0
    x = x + x
    x = torch.clamp(x, -10.0, 10.0)
    x = torch.logsumexp(x, dim=1, keepdim=True)
    return {"y": x * F.mish(x)}


@op("l2_64_gemm_logsumexp_leakyrelu_leakyrelu_gelu_gelu")
def _k64(inp, P):
    x = torch.logsumexp(_lin(inp), dim=1, keepdim=True)
    x = F.leaky_relu(x, negative_slope=0.01)
    x = F.leaky_relu(x, negative_slope=0.01)
    x = F.gelu(x)
    return {"y": F.gelu(x)}


@op("l2_99_matmul_gelu_softmax")
def _k99(inp, P):
    return {"y": F.softmax(F.gelu(_lin(inp)), dim=1)}


# ---- gemm_norm -------------------------------------------------------------

@op("l2_30_gemm_groupnorm_hardtanh")
def _k30(inp, P):
    x = F.group_norm(_lin(inp), P["G"], eps=1e-5)
    return {"y": F.hardtanh(x, min_val=-2.0, max_val=2.0)}


@op("l2_62_matmul_groupnorm_leakyrelu_sum")
def _k62(inp, P):
    x = F.group_norm(_lin(inp), P["G"], eps=1e-5)
    x = F.leaky_relu(x, negative_slope=0.01)
    return {"y": x + x}


@op("l2_88_gemm_groupnorm_swish_multiply_swish")
def _k88(inp, P):
    x = F.group_norm(_lin(inp), P["G"], eps=1e-5)
    x = x * torch.sigmoid(x)
    x = x * inp["multiply_weight"]
    return {"y": x * torch.sigmoid(x)}


# ---- conv_epilogue ---------------------------------------------------------
def _conv(inp):
    return F.conv2d(inp["x"], inp["w"], inp["cb"])


def _hswish(x):
    return F.hardswish(x)


@op("l2_1_conv2d_relu_biasadd")
def _k1(inp, P):
    x = torch.relu(_conv(inp))
    return {"y": x + inp["bias"].reshape(-1, 1, 1)}


@op("l2_57_conv2d_relu_hardswish")
def _k57(inp, P):
    x = torch.relu(_conv(inp))
    return {"y": x * torch.clamp((x + 3) / 6, 0, 1)}


@op("l2_69_conv2d_hardswish_relu")
def _k69(inp, P):
    return {"y": torch.relu(_hswish(_conv(inp)))}


@op("l2_71_conv2d_divide_leakyrelu")
def _k71(inp, P):
    x = _conv(inp) / 2.0
    return {"y": F.leaky_relu(x, negative_slope=0.01)}


@op("l2_87_conv2d_subtract_subtract_mish")
def _k87(inp, P):
    x = _conv(inp) - 0.5
    x = x - 0.2
    return {"y": F.mish(x)}


@op("l2_67_conv2d_gelu_globalavgpool")
def _k67(inp, P):
    x = F.gelu(_conv(inp))
    x = F.adaptive_avg_pool2d(x, 1)
    return {"y": x.squeeze(-1).squeeze(-1)}
