"""
judge_check - the checks of one candidate run (torch): its outputs' kind,
device and storage, its inputs unchanged, and the comparison of its outputs
with the reference's.

Rules:
  * forward must return a torch.Tensor (not a subclass: kind "output_type"),
    or a tuple/list of them, on the GPU
    (kind "output_device" otherwise), none sharing storage with an input
    (kind "output_alias": an output that is an input, or a view of one,
    changes when the inputs are regenerated);
  * each output has the reference output's shape and dtype; a candidate that
    returns a lower precision than a float32 reference is caught here (kind
    "precision"), before any tolerance: a downcast must not pass by luck;
  * floats agree within |got - want| <= atol + rtol * |want|, NaN where the
    reference has NaN and the same infinity where it has one
    (nan_inf_mismatches); integers and booleans agree exactly;
  * inputs are compared bit for bit with a fresh copy generated from the
    same seed (kind "input_mutation").
Large tensors are compared in chunks of CHUNK elements so that the check
never needs more than a few chunk-sized temporaries.

The torch functions used are bound when this module is imported, before any
candidate runs (judge.py also checks that the candidate replaced none of
them).
"""
import torch

from . import result

CHUNK = 1 << 26

_isnan, _isinf, _abs, _nonzero = torch.isnan, torch.isinf, torch.abs, torch.nonzero
_equal, _is_tensor, _uint8, _float32 = torch.equal, torch.is_tensor, torch.uint8, torch.float32
_Tensor = torch.Tensor


class CheckFail(Exception):
    """A check that failed: the RESULT's error (kind, message, members)."""

    def __init__(self, kind, message, **fields):
        super().__init__(message)
        self.kind = kind
        self.fields = fields


def flatten(out):
    """The list of (name, tensor) of a forward's return value. Each must be a
    torch.Tensor itself: a subclass could answer the judge's comparisons
    with its own code (__torch_function__, overridden operators)."""
    outs = [("output", out)] if _is_tensor(out) else \
        [(f"output[{i}]", t) for i, t in enumerate(out)] if type(out) in (tuple, list) and out else None
    if outs is None or not all(_is_tensor(t) for _, t in outs):
        raise CheckFail("mismatch", f"forward returned {type(out).__name__}, not a tensor or a tuple of tensors")
    for name, t in outs:
        if type(t) is not _Tensor:
            raise CheckFail("output_type", f"{name} is a {type(t).__name__}, not a torch.Tensor: a subclass "
                            "could answer the judge's checks itself", buffer=name)
    return outs


def _span(t):
    st = t.untyped_storage()
    return st.data_ptr(), st.data_ptr() + st.nbytes()


def check_placement(outs, inputs):
    """Outputs on the GPU and not in an input's storage."""
    spans = [_span(x) for x in inputs if _is_tensor(x) and x.numel() > 0]
    for name, t in outs:
        if t.device.type != "cuda":
            raise CheckFail("output_device", f"{name} is on {t.device}, not on the GPU", buffer=name)
        if t.numel() == 0:
            continue
        lo, hi = _span(t)
        for i, (a, b) in enumerate(spans):
            if lo < b and a < hi:
                raise CheckFail("output_alias", f"{name} shares memory with input {i}: an output must be "
                                "a tensor of its own", buffer=name)


def _bytes(t):
    return t.detach().contiguous().view(-1).view(_uint8)


def check_inputs(used, fresh):
    """@used (the inputs the candidate ran on) bit for bit equal to @fresh
    (the same seed's inputs, generated again)."""
    for i, (a, b) in enumerate(zip(used, fresh)):
        if not _is_tensor(a):
            if a != b:
                raise CheckFail("input_mutation", f"input {i} changed", buffer=f"input[{i}]")
            continue
        if a.shape != b.shape or a.dtype != b.dtype:
            raise CheckFail("input_mutation", f"input {i} changed its shape or dtype", buffer=f"input[{i}]")
        x, y = _bytes(a), _bytes(b)
        if not _equal(x, y):
            diff = x != y
            n = int(diff.sum().item())
            first = int(_nonzero(diff)[0].item()) // max(1, a.element_size())
            raise CheckFail("input_mutation", f"the candidate wrote {n} bytes of input {i}",
                            buffer=f"input[{i}]", bytes=n, first_index=first)


def compare(name, got, want, atol, rtol):
    """The bufferCheck of @got against @want; raises CheckFail for a shape or
    dtype that differs. Mismatches are counted, not raised."""
    if tuple(got.shape) != tuple(want.shape):
        raise CheckFail("mismatch", f"{name} has shape {list(got.shape)}, the reference's is {list(want.shape)}",
                        buffer=name)
    if got.dtype != want.dtype:
        kind = "precision" if want.dtype == _float32 and got.is_floating_point() else "mismatch"
        raise CheckFail(kind, f"{name} is {str(got.dtype).replace('torch.', '')}, the reference returns "
                        f"{str(want.dtype).replace('torch.', '')}", buffer=name)
    g, w = got.detach().reshape(-1), want.detach().reshape(-1)
    n = g.numel()
    exact = not want.is_floating_point() and not want.is_complex()
    mism = naninf = 0
    max_abs = max_rel = 0.0
    first = []
    for lo in range(0, n, CHUNK):
        gc, wc = g[lo:lo + CHUNK], w[lo:lo + CHUNK]
        if exact:
            bad = gc != wc
            nbad = int(bad.sum().item())
        else:
            gf, wf = gc.float(), wc.float()
            gn, wn, gi, wi = _isnan(gf), _isnan(wf), _isinf(gf), _isinf(wf)
            special = gn | wn | gi | wi
            agree = (gn & wn) | (gi & wi & (gf == wf))
            nib = special & ~agree
            diff = _abs(gf - wf).masked_fill_(special, 0.0)
            bad = (diff > atol + rtol * _abs(wf)) | nib
            nbad = int(bad.sum().item())
            naninf += int(nib.sum().item())
            if diff.numel():
                max_abs = max(max_abs, float(diff.max().item()))
                nz = (wf != 0) & ~special
                if bool(nz.any().item()):
                    max_rel = max(max_rel, float((diff[nz] / _abs(wf[nz])).max().item()))
        mism += nbad
        if nbad and len(first) < result.FIRST_MISMATCHES:
            idx = _nonzero(bad).view(-1)[:result.FIRST_MISMATCHES - len(first)]
            gv, wv = gc[idx].double().tolist(), wc[idx].double().tolist()
            first += [(lo + int(i), a, b) for i, a, b in zip(idx.tolist(), gv, wv)]
    return result.buffer_check(name, n, mism, naninf, None if exact else max_abs,
                               None if exact else max_rel, first)


def same_bits(a_outs, b_outs):
    """Whether two runs' outputs are bit for bit equal."""
    return all(_equal(_bytes(a), _bytes(b)) for (_, a), (_, b) in zip(a_outs, b_outs))
