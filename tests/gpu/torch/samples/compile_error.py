# A load_inline whose CUDA does not compile: the build stage says compile, with nvcc's log.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

ext = load_inline(name="kb_broken", cpp_sources="torch::Tensor f(torch::Tensor x);",
                  cuda_sources="#include <torch/extension.h>\ntorch::Tensor f(torch::Tensor x) { return x +; }\n",
                  functions=["f"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.f(x)
