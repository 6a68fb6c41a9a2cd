# KernelBench level 1, problem 19 (ReLU): the file has a class named ModelNew,
# but it is not an nn.Module subclass (a plain callable class). The build
# stage imports the file and finds ModelNew is no nn.Module.
# Expected: rejected (no ModelNew module); a service that reports the build
# stage's "no_model_new" as compile_error is also acceptable.
import torch


class ModelNew:
    def __init__(self):
        pass

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)
