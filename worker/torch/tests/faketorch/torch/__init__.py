"""
A stand-in for PyTorch, for the torchworker tests only (CI has no PyTorch and
no GPU): just the part of torch's API that kevald-torch's judge and the
tests' sample models call, over numpy arrays, with "cuda" a label and CUDA
events host clocks. It lets the tests drive the real worker (frames, start-up,
sandbox, judge flow, verdicts, RESULT, watchdog, exits) end to end; the
numbers it times mean nothing. The real worker is checked with real PyTorch
on a GPU host (tests/gpu/torch/run.sh).
"""
import numpy as np

from . import backends, cuda, fft, linalg, nn, random, special, utils, version  # noqa: F401

__version__ = "0.0-fake"

float32, float16, float64 = np.dtype("float32"), np.dtype("float16"), np.dtype("float64")
uint8, int64, bool_ = np.dtype("uint8"), np.dtype("int64"), np.dtype("bool")
half, double = float16, float64
_rng = np.random.default_rng(0)
_default_device = ["cpu"]


class _Device:
    def __init__(self, kind, index=None):
        self.type = str(kind).split(":")[0]
        self.index = index

    def __enter__(self):
        self._saved = _default_device[0]
        _default_device[0] = self.type
        return self

    def __exit__(self, *exc):
        _default_device[0] = self._saved

    def __str__(self):
        return self.type


device = _Device


class _Storage:
    def __init__(self, arr):
        base = arr
        while base.base is not None and isinstance(base.base, np.ndarray):
            base = base.base
        self.base = base

    def data_ptr(self):
        return self.base.__array_interface__["data"][0]

    def nbytes(self):
        return self.base.nbytes


class _TensorBase:
    """As torch._C.TensorBase: methods torch.Tensor inherits rather than defines (a candidate that sets
    torch.Tensor.__gt__ adds a name to Tensor rather than replacing one)."""

    def __gt__(self, o):
        return self._w(self.a > self._u(o))


class Tensor(_TensorBase):
    def __init__(self, a, dev="cpu"):
        self.a = np.asarray(a)
        self.device = _Device(dev)

    def _w(self, a):
        return Tensor(a, self.device.type)

    @staticmethod
    def _u(x):
        return x.a if isinstance(x, Tensor) else x

    shape = property(lambda self: tuple(self.a.shape))
    dtype = property(lambda self: self.a.dtype)

    def size(self, i=None):
        return self.shape if i is None else self.shape[i]

    def numel(self):
        return int(self.a.size)

    def element_size(self):
        return self.a.itemsize

    def untyped_storage(self):
        return _Storage(self.a)

    def is_floating_point(self):
        return self.a.dtype.kind == "f"

    def is_complex(self):
        return self.a.dtype.kind == "c"

    def cuda(self):
        return Tensor(self.a, "cuda")

    def cpu(self):
        return Tensor(self.a, "cpu")

    def detach(self):
        return self

    def contiguous(self):
        return self._w(np.ascontiguousarray(self.a))

    def clone(self):
        return self._w(self.a.copy())

    def view(self, *spec):
        if len(spec) == 1 and isinstance(spec[0], np.dtype):
            return self._w(self.a.view(spec[0]))
        return self._w(self.a.reshape(*spec))

    reshape = view

    def float(self):
        return self._w(self.a.astype(np.float32, copy=False))

    def double(self):
        return self._w(self.a.astype(np.float64))

    def half(self):
        return self._w(self.a.astype(np.float16))

    def abs(self):
        return self._w(np.abs(self.a))

    def exp(self):
        return self._w(np.exp(self.a))

    def sum(self, dim=None, keepdim=False):
        return self._w(np.sum(self.a, axis=dim, keepdims=keepdim))

    def max(self, dim=None, keepdim=False):
        return self._w(np.max(self.a, axis=dim, keepdims=keepdim))

    def any(self):
        return self._w(np.any(self.a))

    def item(self):
        return self.a.item()

    def tolist(self):
        return self.a.tolist()

    def zero_(self):
        self.a[...] = 0
        return self

    def add_(self, x):
        self.a += self._u(x)
        return self

    def copy_(self, src):
        self.a[...] = self._u(src)
        return self

    def masked_fill_(self, mask, value):
        self.a[self._u(mask)] = value
        return self

    def __getitem__(self, i):
        return self._w(self.a[self._u(i)])

    def __len__(self):
        return len(self.a)

    def __ne__(self, o):
        return self._w(self.a != self._u(o))

    def __eq__(self, o):
        return self._w(self.a == self._u(o))

    def __sub__(self, o):
        return self._w(self.a - self._u(o))

    def __add__(self, o):
        return self._w(self.a + self._u(o))

    __radd__ = __add__

    def __mul__(self, o):
        return self._w(self.a * self._u(o))

    __rmul__ = __mul__

    def __truediv__(self, o):
        return self._w(self.a / self._u(o))

    def __matmul__(self, o):
        return self._w(self.a @ self._u(o))

    def __or__(self, o):
        return self._w(self.a | self._u(o))

    def __and__(self, o):
        return self._w(self.a & self._u(o))

    def __invert__(self):
        return self._w(~self.a)

    __hash__ = object.__hash__


def _t(x):
    return x.a if isinstance(x, Tensor) else x


def is_tensor(x):
    return isinstance(x, Tensor)


def manual_seed(s):
    global _rng
    _rng = np.random.default_rng(int(s) % (2 ** 63))


def randn(*shape, device=None, dtype=float32):
    return Tensor(_rng.standard_normal(shape).astype(dtype), device or _default_device[0])


def rand(*shape, device=None, dtype=float32):
    return Tensor(_rng.random(shape).astype(dtype), device or _default_device[0])


def randint(lo, hi, shape, device=None):
    return Tensor(_rng.integers(lo, hi, shape), device or _default_device[0])


def empty(*shape, dtype=float32, device=None):
    return Tensor(np.empty(shape, dtype=dtype), str(device or _default_device[0]))


def zeros(*shape, dtype=float32, device=None):
    return Tensor(np.zeros(shape, dtype=dtype), str(device or _default_device[0]))


def ones(*shape, dtype=float32, device=None):
    return Tensor(np.ones(shape, dtype=dtype), str(device or _default_device[0]))


def equal(a, b):
    return a.shape == b.shape and bool(np.array_equal(a.a, b.a))


def isnan(x):
    return x._w(np.isnan(x.a))


def isinf(x):
    return x._w(np.isinf(x.a))


def abs(x):  # noqa: A001
    return x._w(np.abs(x.a))


def exp(x):
    return x._w(np.exp(x.a))


def nonzero(x):
    return x._w(np.argwhere(x.a))


def softmax(x, dim):
    e = np.exp(x.a - x.a.max(axis=dim, keepdims=True))
    y = (e / e.sum(axis=dim, keepdims=True)).astype(x.a.dtype)
    if backends.cudnn.allow_tf32:   # the stand-in's "reduced precision": visibly wrong
        y = y + 1
    return x._w(y)


def relu(x):
    return x._w(np.maximum(x.a, 0))


_grad = [True]
_default_dtype = [float32]


def is_grad_enabled():
    return _grad[0]


def set_grad_enabled(on):
    _grad[0] = bool(on)


def get_default_dtype():
    return _default_dtype[0]


def set_default_dtype(d):
    _default_dtype[0] = d


class no_grad:
    def __enter__(self):
        self._saved = _grad[0]
        _grad[0] = False
        return self

    def __exit__(self, *exc):
        _grad[0] = self._saved
        return False


class _Ops:
    def load_library(self, path):
        raise RuntimeError("no extensions in the stand-in")


ops = _Ops()


_function_modes = []   # overrides.TorchFunctionMode's stack


class _C:
    _len_torch_function_stack = staticmethod(lambda: len(_function_modes))
