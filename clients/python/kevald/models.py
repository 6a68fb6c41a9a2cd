"""
Typed views of kevald's JSON (docs/internals.md "Result JSON",
schema/result.schema.json, schema/openapi.json).

Every class is built leniently with `from_dict()`: missing fields are None
(or empty lists), unexpected types are kept as they are, and the whole
source dict stays in `.raw`, so a field the server adds later is never lost.
"""
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional

DONE = "done"
STATES = ("queued", "compiling", "compiled", "running", "done")
VERDICTS = ("compiled", "correct", "incorrect", "compile_error", "runtime_error", "timeout", "rejected",
            "internal_error", "cancelled")


def _list(cls, v):
    return [cls.from_dict(x) for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def _obj(cls, v):
    return cls.from_dict(v) if isinstance(v, dict) else None


class _Lenient:
    """from_dict(): copy the known scalar fields, convert the nested ones (_nested), keep raw."""

    _nested: Dict[str, Any] = {}

    @classmethod
    def from_dict(cls, d):
        if not isinstance(d, dict):
            d = {}
        kw = {}
        for f in fields(cls):
            if f.name == "raw":
                continue
            conv = cls._nested.get(f.name)
            v = d.get(f.name)
            if conv is not None:
                kind, sub = conv
                v = _list(sub, v) if kind == "list" else _obj(sub, v)
            kw[f.name] = v
        kw["raw"] = d
        return cls(**kw)

    def to_dict(self):
        """The server's JSON this object was built from."""
        return self.raw


@dataclass
class Mismatch(_Lenient):
    index: Optional[int] = None
    got: Any = None
    want: Any = None
    raw: dict = field(default_factory=dict, repr=False)


@dataclass
class BufferCheck(_Lenient):
    name: Optional[str] = None
    max_abs: Optional[float] = None
    max_rel: Optional[float] = None
    mismatches: Optional[int] = None
    count: Optional[int] = None
    nan_inf_mismatches: Optional[int] = None
    first_mismatches: List[Mismatch] = field(default_factory=list)
    raw: dict = field(default_factory=dict, repr=False)
    _nested = {"first_mismatches": ("list", Mismatch)}


@dataclass
class ShapeCorrectness(_Lenient):
    shape: Optional[str] = None
    passed: Optional[bool] = None
    trials: Optional[int] = None
    guard_ok: Optional[bool] = None
    inputs_intact: Optional[bool] = None
    deterministic: Optional[bool] = None
    revalidated: Optional[bool] = None
    buffers: List[BufferCheck] = field(default_factory=list)
    raw: dict = field(default_factory=dict, repr=False)
    _nested = {"buffers": ("list", BufferCheck)}


@dataclass
class Correctness(_Lenient):
    passed: Optional[bool] = None
    shapes: List[ShapeCorrectness] = field(default_factory=list)
    raw: dict = field(default_factory=dict, repr=False)
    _nested = {"shapes": ("list", ShapeCorrectness)}


@dataclass
class Stats(_Lenient):
    median_ms: Optional[float] = None
    mean_ms: Optional[float] = None
    stdev_ms: Optional[float] = None
    min_ms: Optional[float] = None
    max_ms: Optional[float] = None
    trials: Optional[int] = None
    precision: Optional[float] = None
    raw: dict = field(default_factory=dict, repr=False)


@dataclass
class ShapeTiming(_Lenient):
    shape: Optional[str] = None
    candidate: Optional[Stats] = None
    reference: Optional[Stats] = None
    speedup: Optional[float] = None
    roofline: Optional[dict] = None
    raw: dict = field(default_factory=dict, repr=False)
    _nested = {"candidate": ("obj", Stats), "reference": ("obj", Stats)}


@dataclass
class Timing(_Lenient):
    """`suspicious`: some shape set ran faster than half its roofline bound (`note` says so too)."""
    speedup: Optional[float] = None
    shapes: List[ShapeTiming] = field(default_factory=list)
    suspicious: Optional[bool] = None
    note: Optional[str] = None
    raw: dict = field(default_factory=dict, repr=False)
    _nested = {"shapes": ("list", ShapeTiming)}


@dataclass
class KernelInfo(_Lenient):
    name: Optional[str] = None
    params: Optional[list] = None
    registers: Optional[int] = None
    shared_static: Optional[int] = None
    local: Optional[int] = None
    spill_stores: Optional[int] = None
    spill_loads: Optional[int] = None
    stack: Optional[int] = None
    barriers: Optional[int] = None
    max_threads_per_block: Optional[int] = None
    raw: dict = field(default_factory=dict, repr=False)


@dataclass
class CompileInfo(_Lenient):
    ok: Optional[bool] = None
    cache_hit: Optional[bool] = None
    compile_ms: Optional[float] = None
    arch: Optional[str] = None
    nvrtc: Optional[str] = None
    log: Optional[str] = None
    log_truncated: Optional[bool] = None
    kernels: List[KernelInfo] = field(default_factory=list)
    error: Optional[str] = None
    raw: dict = field(default_factory=dict, repr=False)
    _nested = {"kernels": ("list", KernelInfo)}

    @property
    def first_error(self):
        """The first `error` line of the log (kevald puts the first error's block first), or None."""
        for line in (self.log or "").splitlines():
            if "error" in line:
                return line.strip()
        return None


@dataclass
class ErrorInfo(_Lenient):
    kind: Optional[str] = None
    name: Optional[str] = None
    message: Optional[str] = None
    shape: Optional[str] = None
    phase: Optional[str] = None
    trial: Optional[int] = None
    launch: Optional[int] = None
    kernel: Optional[str] = None
    raw: dict = field(default_factory=dict, repr=False)


@dataclass
class GpuInfo(_Lenient):
    name: Optional[str] = None
    driver: Optional[str] = None
    cc: Optional[str] = None
    index: Optional[int] = None
    raw: dict = field(default_factory=dict, repr=False)


@dataclass
class Result(_Lenient):
    verdict: Optional[str] = None
    reward_fields: Optional[dict] = None
    task: Optional[str] = None
    seed: Optional[str] = None
    compile: Optional[CompileInfo] = None
    resources: Optional[list] = None
    correctness: Optional[Correctness] = None
    timing: Optional[Timing] = None
    error: Optional[ErrorInfo] = None
    gpu: Optional[GpuInfo] = None
    feedback: Optional[str] = None
    frontend: Optional[str] = None   # the tool that made a PTX submission ("triton 3.6.0"), when it said
    raw: dict = field(default_factory=dict, repr=False)
    _nested = {"compile": ("obj", CompileInfo), "correctness": ("obj", Correctness), "timing": ("obj", Timing),
               "error": ("obj", ErrorInfo), "gpu": ("obj", GpuInfo)}

    @property
    def correct(self):
        rf = self.reward_fields or {}
        return bool(rf.get("correct", self.verdict == "correct"))

    @property
    def compiled(self):
        rf = self.reward_fields or {}
        if "compiled" in rf:
            return bool(rf["compiled"])
        return self.verdict not in ("compile_error", None)

    @property
    def suspicious(self):
        """
        True when the candidate ran faster than half the roofline bound: the
        server then withholds the speedup from reward_fields (the verdict stays
        correct; the measured number is still in .timing.speedup).
        reward_fields.suspicious, else (a server that predates it)
        timing.suspicious or any shape's roofline.suspicious.
        """
        rf = self.reward_fields or {}
        if isinstance(rf.get("suspicious"), bool):
            return rf["suspicious"]
        t = self.timing
        if t is None:
            return False
        return t.suspicious is True or any(isinstance(sh.roofline, dict) and sh.roofline.get("suspicious") is True
                                           for sh in t.shapes)

    @property
    def speedup(self):
        """reward_fields.speedup (else timing.speedup); None when there is none or it is withheld as suspicious."""
        rf = self.reward_fields or {}
        s = rf.get("speedup")
        if s is None and self.timing is not None and not self.suspicious:
            s = self.timing.speedup
        return s if isinstance(s, (int, float)) else None


@dataclass
class Submission(_Lenient):
    id: Optional[int] = None
    state: Optional[str] = None
    verdict: Optional[str] = None
    task: Optional[str] = None
    mode: Optional[str] = None
    priority: Optional[str] = None
    tags: Optional[dict] = None
    created_at: Optional[str] = None
    started_at: Optional[str] = None
    finished_at: Optional[str] = None
    attempts: Optional[int] = None
    speedup: Optional[float] = None
    result: Optional[Result] = None
    raw: dict = field(default_factory=dict, repr=False)
    _nested = {"result": ("obj", Result)}

    @property
    def done(self):
        return self.state == DONE

    @property
    def feedback(self):
        return self.result.feedback if self.result else None

    @property
    def suspicious(self):
        """The result's .suspicious (False while there is no result)."""
        return self.result.suspicious if self.result else False
