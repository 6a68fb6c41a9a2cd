from . import cuda, cudnn  # noqa: F401
