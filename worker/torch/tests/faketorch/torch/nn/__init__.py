from . import functional  # noqa: F401


class Module:
    def __init__(self):
        pass

    def __call__(self, *args, **kwargs):
        return self._call_impl(*args, **kwargs)

    def _call_impl(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def cuda(self):
        return self

    def eval(self):
        return self
