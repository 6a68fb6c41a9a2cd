"""
judge - the run role's job: a ModelNew judged against the task's eager Model
on the GPU, by the protocol kevald-gpu follows (docs/internals.md, "Torch
worker"). Theory of operation, per JOB:

  load         both sources executed as fresh modules; load_inline / load
               import the extension the build role built below build_dir
               (the run role never builds: it may not execute anything);
  correctness  per shape set (its constants set in both modules first): the
               models built from the same "init" seed (ModelNew first);
               correctness_trials trials, each on fresh inputs from its own
               "check" seed: the candidate runs first, its outputs and
               inputs are checked, then the reference runs on a fresh copy of
               the same inputs and the outputs are compared (judge_check);
               trial 0 also runs the candidate a second time on fresh copies
               (deterministic: the same bits; different bits that still pass
               the tolerance are reported, not failed);
  timing       per timed shape set (the first with timing.shapes "first",
               else each), judge_timing.time_shape(), with an even share
               of the budget (at most half of what is left of the deadline);
  verdict      the first failure ends the job: incorrect (mismatch,
               precision, input_mutation, output_device, output_alias,
               nondeterministic, output_type), runtime_error (a CUDA error, named; an
               exception of the candidate's code), rejected (no ModelNew, or
               the candidate changed what the judge relies on: the tamper
               check below),
               internal_error (the reference failed), or correct.

The watchdog (confine.py) is re-armed at each phase with a timeout RESULT
that names the shape set and phase; past deadline_ms it answers and the
worker exits 4. With the JOB's launch limits (jobspec.py) a forward is held
to one as well, as kevald-gpu holds a plan execution (launch_limit()): a
model's first forward (its first on a shape set, or one built again for
timing) may compile, autotune or set itself up for as long as the deadline
allows, but what it launched must finish within launch_timeout_ms after it
returns; each later forward, to its return and its work's end, gets
launch_factor x the reference's first call on the shape set, at least
launch_floor_ms, and both at least CALL_FLOOR_MS (a forward is Python: a
host busy with builds can hold it up), at most launch_timeout_ms. A hung
kernel then costs seconds, not the job's deadline. A sticky CUDA error
(cudaerr.py, or any CUDA error after which a probe fails) is answered with
"exiting": true, then exit 3.

torch's global switches (TF32, reduced-precision reductions, the float32
matmul precision, cuDNN's benchmark and deterministic modes) are the
judge's whenever the reference runs, whatever the candidate set. The
candidate runs in this interpreter. The judge binds the functions it uses
before any candidate is imported and checks, after each candidate call and
before each reference call (the tamper check; rejected, kind "tamper",
naming what changed):
  * the modes and defaults of _STATE are the judge's: no TorchFunctionMode
    or TorchDispatchMode (nor infrastructure mode) left entered, the
    default dtype and device, grad mode (as the judge had it at the call),
    inference mode, autocast, deterministic algorithms, __torch_function__
    handling; a mode left entered would run the candidate's code inside the
    reference and the judge's own comparisons;
  * no function of torch's main namespaces (torch, torch.cuda, nn,
    nn.functional, ...) nor of the judge's own modules was replaced: each
    callable member is the same object (names added since are not changes:
    torch imports submodules lazily);
  * every name a watched class resolves (dir(cls): Tensor, nn.Module,
    every class of torch.nn, cuda.Event) resolves in the same class of its
    MRO to the same raw value (as inspect.getattr_static finds it), so
    torch.Tensor.sum set over the one it inherits from TensorBase, or a
    replaced nn.Module member that nn.Linear inherits, is a change. Each
    class's __dict__ is compared by identity, in C, with a copy taken at
    start-up; a name is looked up only once something moved.
These checks cover this job only, and only what they read: the candidate's
code can still reach the judge (a function's __code__ replaced in place,
a global of torch's own Python modules rebound, e.g. torch.nn.modules.linear.F,
ctypes, gc walking to the judge's objects, a thread of its own), and what it
changes in the interpreter cannot all be found and put back; so every RESULT
says "exiting": true and the worker exits after it (0; 3 after a sticky
error, 1 if the judge failed): one JOB per process (issue 29), nothing
reaches the next job. The plan is the candidate in a child process of its
own. The sandbox, not these checks, is what confines a candidate that goes
further (docs/SECURITY.md).
"""
import logging
import math
import operator
import os
import time

import torch

from . import build, cudaerr, frames, judge_check, judge_timing, result, seeds, stats
from .jobspec import parse_run
from .loop import EXIT_FAILED, EXIT_OK, EXIT_STICKY

_manual_seed, _sync, _device, _is_tensor = torch.manual_seed, torch.cuda.synchronize, torch.device, torch.is_tensor
_no_grad = torch.no_grad
_is = operator.is_
_grad = getattr(torch, "is_grad_enabled", None) or (lambda: None)


_MISSING = object()

# The least a later forward (after the first on its shape set) is allowed (ms), whatever the
# reference's time: it is Python on a host that other workers share.
CALL_FLOOR_MS = 1000


def _watched_owners():
    """The namespaces whose functions and classes a candidate must not
    replace: what the judge and the task's reference call, and the judge's
    own modules. Classes: torch.Tensor, nn.Module and every class of torch.nn
    (the reference's layers), torch.cuda.Event."""
    import torch.nn.functional as F
    owners = [torch, torch.cuda, torch.cuda.Event, torch.Tensor, torch.nn, torch.nn.Module, F, torch.linalg,
              torch.fft, torch.special, torch.random, torch.backends.cuda, torch.backends.cudnn, time, os]
    owners += [judge_check, judge_timing, stats, result, seeds, frames, cudaerr, build]
    owners += [v for v in vars(torch.nn).values() if isinstance(v, type) and v not in owners]
    return owners


def _name(o):
    return getattr(o, "__name__", type(o).__name__)


def _same(a, b):
    """Whether two sequences hold the same objects (identity: an object the
    candidate made could say == to anything)."""
    return len(a) == len(b) and all(map(_is, a, b))


# Names Python itself adds to a class's __dict__ when they are read (a class
# without annotations of its own gets an empty __annotations__ at the first
# read of cls.__annotations__; copy and pickle cache __slotnames__ on the
# class of what they copy, e.g. nn.TransformerEncoder's layers): not the
# candidate's changes.
_LAZY = frozenset({"__annotations__", "__annotate__", "__annotate_func__", "__annotations_cache__",
                   "__slotnames__"})


def _resolve(mro, dicts):
    """{name: (class, raw value)} of every name a class of MRO @mro resolves
    (dir(cls)) but _LAZY: the first class of the MRO whose __dict__ (in
    @dicts) holds it, and that value, as inspect.getattr_static finds it."""
    res = {}
    for c in reversed(mro):
        res.update((k, (c, v)) for k, v in dicts[c].items() if k not in _LAZY)
    return res


class _Snapshot:
    """What _changed() compares with: each module owner's callable members;
    each class owner's MRO and, once per class of those MROs, its own
    __dict__ (a copy, and its values in order for the fast comparison)."""

    def __init__(self, owners):
        self.modules, self.classes, self.dicts = [], [], {}
        for o in owners:
            if isinstance(o, type):
                self.classes.append((o, o.__mro__))
                for c in o.__mro__:
                    if c not in self.dicts:
                        d = dict(c.__dict__)
                        self.dicts[c] = (d, list(d.values()))
                continue
            try:
                members = dict(vars(o))
            except TypeError:
                continue
            self.modules.append((o, {k: v for k, v in members.items() if callable(v)}, list(members.values())))


def _snapshot(owners):
    """The fingerprint of @owners (modules and classes) that _changed() checks."""
    return _Snapshot(owners)


def _class_changed(o, mro, snap):
    """The first name class @o resolves that now resolves elsewhere or to
    another value ("__bases__" for a new MRO), or None (names added that
    shadow nothing are not changes)."""
    if not _same(o.__mro__, mro):
        return "__bases__"
    old = _resolve(mro, {c: snap.dicts[c][0] for c in mro})
    new = _resolve(mro, {c: c.__dict__ for c in mro})
    for k, (c, v) in old.items():
        n = new.get(k)
        if n is None or n[0] is not c or n[1] is not v:
            return k
    return None


def _changed(snap):
    """The first "owner.name" of @snap that is no longer what it was, or None.
    A module's callable member must be the same object (names added since are
    not changes: torch imports submodules lazily); every name a class
    resolves must resolve in the same class of its MRO to the same object, so
    that an attribute set on torch.Tensor over one it inherits (__gt__, sum)
    is a change as much as a replaced one."""
    for o, members, values in snap.modules:
        cur = vars(o)
        if _same(cur.values(), values):
            continue
        for k, v in members.items():
            if cur.get(k, _MISSING) is not v:
                return f"{_name(o)}.{k}"
        values[:] = cur.values()   # names added, data rebound: the next fast comparison takes them
    moved = {c for c, (_, values) in snap.dicts.items() if not _same(c.__dict__.values(), values)}
    for o, mro in snap.classes:
        if moved.isdisjoint(o.__mro__) and _same(o.__mro__, mro):
            continue
        k = _class_changed(o, mro, snap)
        if k:
            return f"{_name(o)}.{k}"
    # Only names that shadow nothing were added (or _LAZY ones): the fast
    # comparison takes them as they are now, the names are still looked up
    # in the start-up copies once anything moves again.
    for c in moved:
        snap.dicts[c] = (snap.dicts[c][0], list(c.__dict__.values()))
    return None


# The global switches that change how torch computes (precision, algorithm
# choice): the reference always runs with the judge's own settings, whatever
# the candidate set (a candidate that turned TF32 on must not turn it on for
# the reference it is compared with and timed against).
_SWITCHES = [("backends.cuda.matmul", "allow_tf32"), ("backends.cuda.matmul", "allow_fp16_reduced_precision_reduction"),
             ("backends.cuda.matmul", "allow_bf16_reduced_precision_reduction"), ("backends.cudnn", "allow_tf32"),
             ("backends.cudnn", "benchmark"), ("backends.cudnn", "deterministic"),
             ("backends.cuda.matmul", "fp32_precision"), ("backends.cudnn", "fp32_precision")]


def _switch_owner(path):
    o = torch
    for part in path.split("."):
        o = getattr(o, part, None)
    return o


def _switches():
    """The current values of _SWITCHES and of the float32 matmul precision
    (each read that torch refuses, e.g. a legacy switch after the newer
    fp32_precision API was used, is left out)."""
    state = {}
    for path, name in _SWITCHES:
        try:
            o = _switch_owner(path)
            if o is not None and hasattr(o, name):
                state[(path, name)] = getattr(o, name)
        except Exception:  # noqa: BLE001
            pass
    try:
        state[("", "float32_matmul_precision")] = torch.get_float32_matmul_precision()
    except Exception:  # noqa: BLE001
        pass
    return state


def _set_switches(state):
    for (path, name), v in state.items():
        try:
            if path:
                setattr(_switch_owner(path), name, v)
            else:
                torch.set_float32_matmul_precision(v)
        except Exception:  # noqa: BLE001 (a switch torch will not take back: the others still are)
            pass


def _infra_modes_reader():
    """A read of the infrastructure dispatch modes entered, by key name
    (torch 2.2+: FakeTensorMode, ProxyTorchDispatchMode, FunctionalTensorMode
    sit apart from the dispatch mode stack), or None where torch has none."""
    keys = getattr(torch._C, "_TorchDispatchModeKey", None)
    get = getattr(torch._C, "_get_dispatch_mode", None)
    if keys is None or not callable(get):
        return None
    members = sorted(keys.__members__.items())
    return lambda: tuple(k for k, v in members if get(v) is not None)


def _reader(owner, name, *args):
    """@owner.@name bound now, called with @args when read; None where torch lacks it."""
    f = getattr(owner, name, None)
    if not callable(f):
        return None
    return (lambda: f(*args)) if args else f


# The interpreter state a candidate could leave changed for the code that
# runs after it (the reference, the judge's comparisons): a TorchFunctionMode
# or TorchDispatchMode left entered runs its own code for every torch call;
# the defaults and modes change what the reference computes. Each read is
# bound now, before any candidate runs; one this torch lacks is left out.
# The default device is read before the function mode stack (torch 2.3+'s
# set_default_device pushes a mode) so that the message names it.
_GRAD = "grad mode"
_STATE = [(label, f) for label, f in [
    ("the default device", _reader(torch, "get_default_device")),
    ("the default tensor type's device", _reader(torch._C, "_get_default_device")),
    ("the default dtype", _reader(torch, "get_default_dtype")),
    ("the TorchFunctionMode stack's depth", _reader(torch._C, "_len_torch_function_stack")),
    ("the TorchDispatchMode stack's depth", _reader(torch._C, "_len_torch_dispatch_stack")),
    ("the infrastructure dispatch modes entered", _infra_modes_reader()),
    ("__torch_function__ handling (DisableTorchFunction)", _reader(torch._C, "_is_torch_function_enabled")),
    ("inference mode", _reader(torch, "is_inference_mode_enabled")),
    (_GRAD, _reader(torch, "is_grad_enabled")),
    ("autocast on the GPU", _reader(torch, "is_autocast_enabled", "cuda") if hasattr(torch, "get_autocast_dtype")
     else _reader(torch, "is_autocast_enabled")),
    ("autocast's GPU dtype", _reader(torch, "get_autocast_dtype", "cuda") or
     _reader(torch, "get_autocast_gpu_dtype")),
    ("deterministic algorithms", _reader(torch, "are_deterministic_algorithms_enabled")),
    ("deterministic algorithms' warn_only", _reader(torch, "is_deterministic_algorithms_warn_only_enabled")),
] if f is not None]


def _state():
    """{label: value as text} of each read of _STATE that torch answers."""
    state = {}
    for label, f in _STATE:
        try:
            state[label] = str(f())
        except Exception:  # noqa: BLE001 (a read this torch lacks or refuses)
            pass
    return state


def _state_changed(want):
    """"label (was A, now B)" of the first read of _STATE whose value is not
    @want's (from _state()), or None."""
    now = _state()
    for label, v in want.items():
        if now.get(label) != v:
            return f"{label} (was {v}, now {now.get(label, 'unreadable')})"
    return None


class CandidateError(Exception):
    """An exception raised by the candidate's code (wrapping it)."""


class ReferenceFailure(Exception):
    """An exception raised by the reference's code (wrapping it)."""


def _prebuilt_loader(cpp):
    """load_inline / load for the run role: import the extension the build
    role built (build_dir/<name>/<name>.so) without building it."""
    def load(name, *args, **kwargs):
        root = os.environ["TORCH_EXTENSIONS_DIR"]
        folder = os.path.join(root, name)
        if kwargs.get("is_python_module", True) is False:
            path = os.path.join(folder, f"{name}.so")
            if not os.path.isfile(path):
                raise RuntimeError(f"the extension {name!r} was not built (no {path})")
            torch.ops.load_library(path)
            return path
        if not os.path.isfile(os.path.join(folder, f"{name}.so")):
            raise RuntimeError(f"the extension {name!r} was not built by the build stage")
        return cpp._import_module_from_library(name, folder, True)
    return load


class Judge:
    """The run role's JOB handler."""

    def __init__(self, worker):
        self.w = worker
        p = torch.cuda.get_device_properties(0)
        drv = getattr(torch._C, "_cuda_getDriverVersion", None)
        self.gpu = {"name": p.name, "cc": f"{p.major}.{p.minor}",
                    "index": int(os.environ.get("KEVALD_GPU_INDEX", "0") or 0)}
        if drv:
            v = int(drv())
            self.gpu["driver"] = f"cuda {v // 1000}.{v % 1000 // 10}"
        l2 = int(getattr(p, "L2_cache_size", 0) or 0)
        self.flush = torch.empty(max(2 * l2, 256 << 20), dtype=torch.uint8, device="cuda")
        import torch.utils.cpp_extension as cpp
        self.cpp = cpp
        self.real_load_inline, self.real_load = cpp.load_inline, cpp.load
        self.snapshot = _snapshot(_watched_owners())
        self.switches = _switches()
        self.state = _state()
        self.limits, self.fresh_model, self.pending, self.armed = {}, False, None, False

    # ---- the watchdog's view of where the job is ----
    def left_ms(self):
        return self.job.deadline_ms - (time.monotonic() - self.t0) * 1000.0

    def phase(self, shape, phase, trial=None):
        if (shape, phase) == self.where:
            return
        self.where = (shape, phase)
        self.phase_frame = frames.pack(frames.RESULT, result.timeout_result(
            self.job.id, self.job.seed_text, self.job.deadline_ms, self.gpu, shape, phase, []))
        self.w.confine.arm(self.phase_frame, max(0.0, self.left_ms()))

    def ceiling_ms(self):
        """launch_timeout_ms, at least CALL_FLOOR_MS."""
        return max(self.job.launch_timeout_ms, CALL_FLOOR_MS)

    def launch_limit(self):
        """(limit ms, the reference's ms it came from or None, first) of a forward of the
        candidate now, or None without launch limits. first: a model's first forward (its
        first on a shape set, or a model built again for timing: it may compile, autotune or
        set itself up), held only in what it launched, from when it returns (after_forward());
        else the shape set's limit, held whole."""
        j = self.job
        if j.launch_timeout_ms is None:
            return None
        got = self.limits.get(self.where[0])
        if got is None or self.fresh_model:
            return (self.ceiling_ms(), None, True)
        return got + (False,)

    def derive_limit(self, shape, ref_ms, entry):
        """The launch limit of the later forwards of shape set @shape from the reference's
        first call there (@ref_ms), written into its correctness entry."""
        j = self.job
        if j.launch_timeout_ms is None:
            return
        if j.launch_factor:
            lim = min(self.ceiling_ms(), max(j.launch_floor_ms, CALL_FLOOR_MS, j.launch_factor * ref_ms))
            self.limits[shape] = (int(math.ceil(lim)), ref_ms)
        else:
            self.limits[shape] = (self.ceiling_ms(), None)
        entry["launch_limit_ms"] = self.limits[shape][0]

    def arm_call(self, lim):
        """Hold what runs now to @lim (launch_limit()'s); False where the deadline comes first."""
        ms, ref_ms, first = lim
        if ms >= self.left_ms():
            return False
        shape, phase = self.where
        j = self.job
        if first:
            msg = (f"a kernel of the candidate's forward was still running {ms} ms after the forward returned "
                   f"(launch_timeout_ms, the limit of a model's first forward): it hangs (phase {phase})")
        elif ref_ms is not None:
            msg = (f"the candidate's forward did not finish within the launch time limit of {ms} ms "
                   f"({j.launch_factor:g} x the reference's {ref_ms:.3f} ms on this shape set, at least "
                   f"{max(j.launch_floor_ms, CALL_FLOOR_MS)} ms, at most {self.ceiling_ms()} ms): it hangs "
                   f"(phase {phase})")
        else:
            msg = (f"the candidate's forward did not finish within the launch time limit of {ms} ms "
                   f"(launch_timeout_ms): it hangs (phase {phase})")
        wall = (time.monotonic() - self.t0) * 1000.0 + ms
        frame = frames.pack(frames.RESULT, result.call_timeout_result(
            j.id, j.seed_text, wall, self.gpu, shape, phase, msg, ms, ref_ms))
        self.w.confine.arm(frame, ms)
        return True

    def after_forward(self):
        """Called when a forward has returned and before its work is waited for (candidate(),
        judge_timing.timed()): a model's first forward is held from here."""
        lim, self.pending = self.pending, None
        if lim is not None:
            self.armed = self.arm_call(lim)

    # ---- calls into the two sides ----
    def tamper_check(self, grad):
        """Rejects (CheckFail "tamper") a replaced function or class member of
        the watched owners, or a mode or default of _STATE that is not the
        judge's: as at start-up, grad mode as @grad (what the judge had set
        when it called the candidate). The state first: torch changes
        torch.Storage with the default dtype."""
        want = dict(self.state)
        if _GRAD in want:
            want[_GRAD] = str(grad)
        what = _state_changed(want)
        if what:
            self.tampered = True
            raise judge_check.CheckFail("tamper", f"the candidate left {what}: the reference and the judge's "
                                        "checks would run with it")
        what = _changed(self.snapshot)
        if what:
            self.tampered = True
            raise judge_check.CheckFail("tamper", f"the candidate replaced {what}, which the judge or the "
                                        "reference uses")

    def candidate(self, fn, forward=False):
        """@fn() of the candidate's code, then a device-wide synchronize; a @forward is
        held to its launch limit (launch_limit(); @fn may call after_forward() itself
        between the forward's return and a synchronize of its own)."""
        grad = _grad()
        lim = self.launch_limit() if forward else None
        self.armed, self.pending = False, None
        self.w.confine.blame(True)   # a forbidden system call from here is the candidate's
        try:
            if lim and not lim[2]:
                self.armed = self.arm_call(lim)
            elif lim:
                self.pending = lim
            out = fn()
            self.after_forward()
            _sync()
            if forward:
                self.fresh_model = False
        except judge_check.CheckFail:
            raise
        except BaseException as e:  # noqa: BLE001 (SystemExit, KeyboardInterrupt: the candidate's too)
            raise CandidateError(e) from e
        finally:
            self.w.confine.blame(False)
            self.pending = None
            if self.armed:
                self.armed = False
                self.w.confine.arm(self.phase_frame, max(0.0, self.left_ms()))
        self.tamper_check(grad)
        return out

    def reference(self, fn):
        """@fn() of the reference, then a device-wide synchronize (its time in self.ref_call_ms)."""
        # again here: the candidate's code can run between its calls (a finalizer)
        self.tamper_check(_grad())
        theirs = _switches()
        _set_switches(self.switches)
        try:
            t = time.monotonic()
            out = fn()
            _sync()
            self.ref_call_ms = (time.monotonic() - t) * 1000.0
        except BaseException as e:  # noqa: BLE001
            raise ReferenceFailure(e) from e
        finally:
            _set_switches(theirs)
        return out

    def inputs(self, seed):
        """Fresh inputs of the current shape set from @seed, on the GPU."""
        _manual_seed(seed)
        with _device("cuda"):
            xs = self.ref_mod.get_inputs()
        return [x.cuda() if _is_tensor(x) else x for x in xs]

    def models(self, si):
        """(Model, ModelNew) of shape set @si, weights from the same seed, ModelNew built first."""
        c = self.job.shapes[si]["constants"]
        self.ref_mod.__dict__.update(c)
        self.cand_mod.__dict__.update(c)
        init = self.ref_mod.get_init_inputs()
        s = seeds.derive(self.job.seed, si, "init", 0)
        _manual_seed(s)
        model_new = self.candidate(lambda: self.cand_mod.ModelNew(*init).cuda().eval())
        self.fresh_model = True
        _manual_seed(s)
        model = self.reference(lambda: self.ref_mod.Model(*init).cuda().eval())
        return model, model_new

    # ---- the job ----
    def handle(self, job, blob):
        self.t0 = time.monotonic()
        self.job = parse_run(job, blob)
        self.where = None
        self.limits = {}
        self.fresh_model = False
        self.busy_ms = 0.0
        self.shapes_done = []
        self.tampered = self.judge_failed = False
        self.phase(None, "load")
        try:
            verdict, timing, err, exiting = self.run()
        except Exception as e:  # noqa: BLE001 (a fault of the judge itself: answered, never silent)
            self.phases = getattr(self, "phases", {})
            verdict, timing, exiting = "internal_error", None, True
            err = result.error("internal", f"the judge failed: {type(e).__name__}: {e}"[:1000])
            self.judge_failed = True
        # What a candidate leaves behind must not reach the next job (issue 29):
        # patched classes, modes and global switches cannot all be put back, so
        # the worker answers one JOB and exits (0; 3 after a sticky CUDA error,
        # 1 if the judge itself failed), and the dispatcher starts a fresh one.
        self.exit_status = EXIT_FAILED if self.judge_failed else EXIT_STICKY if exiting else EXIT_OK
        exiting = True
        t = time.monotonic()
        self.ref_mod = self.cand_mod = None
        self.phases["cleanup"] = (time.monotonic() - t) * 1000.0
        res = result.assemble(self.job.id, self.job.seed_text, verdict, self.shapes_done, timing, err, self.gpu,
                              self.phases, (time.monotonic() - self.t0) * 1000.0, self.busy_ms, exiting)
        self.w.send(frames.RESULT, res, disarm=True)
        return self.exit_status

    def load(self):
        cpp = self.cpp
        os.environ["TORCH_EXTENSIONS_DIR"] = self.job.build_dir
        loader = _prebuilt_loader(cpp)
        cpp.load_inline, cpp.load = loader, loader
        try:
            self.ref_mod = build.load_module(self.job.reference, f"kevald_reference_{self.job.id}",
                                             "reference.py")
        except BaseException as e:  # noqa: BLE001
            raise ReferenceFailure(e) from e
        self.tools_for_triton()
        self.cand_mod = self.candidate(lambda: build.load_module(self.job.candidate, f"kevald_candidate_{self.job.id}"))
        if build.check_model_new(self.cand_mod) is not None:
            raise judge_check.CheckFail("no_model_new", "the source defines no class ModelNew(nn.Module)")

    def tools_for_triton(self):
        """A candidate that names Triton gets the compiler helper (tritontools.install()),
        before its module is imported. Without a helper (--no-sandbox: Triton runs its
        own compilers; none started: its compile then fails in the candidate's code,
        which reports it), nothing."""
        tools = getattr(self.w, "tools", None)
        src = self.job.candidate
        if tools is None or b"triton" not in (src if isinstance(src, (bytes, bytearray)) else src.encode()):
            return
        from . import tritontools
        try:
            tritontools.install(tools)
        except Exception as e:  # noqa: BLE001 (no Triton here: the candidate's own import says so)
            logging.getLogger("kevald-torch").warning("run: Triton's compiler helper not installed: %s: %s",
                                                      type(e).__name__, e)

    def run(self):
        """(verdict, timing, error, exiting) of the job; fills self.shapes_done and self.phases."""
        self.phases = {}
        mark = time.monotonic()
        cur = {"shape": None, "phase": "load", "trial": None}
        try:
            self.load()
            self.phases["load"] = (time.monotonic() - mark) * 1000.0
            mark = time.monotonic()
            cur["phase"] = "correctness"
            for si, shape in enumerate(self.job.shapes):
                cur["shape"] = shape["name"]
                self.check_shape(si, shape, cur)
            self.phases["correctness"] = (time.monotonic() - mark) * 1000.0
            mark = time.monotonic()
            cur["phase"], cur["trial"] = "timing", None
            timed = []
            n = 1 if self.job.time_first_only else len(self.job.shapes)
            for si, shape in enumerate(self.job.shapes[:n]):
                cur["shape"] = shape["name"]
                self.phase(shape["name"], "timing")
                left = self.job.deadline_ms - (time.monotonic() - self.t0) * 1000.0
                budget = min(self.job.budget_ms / n, max(0.0, left) / 2.0)
                model, model_new = self.models(si)
                timed.append(judge_timing.time_shape(self, si, shape, model, model_new, budget))
                model = model_new = None
                self.shapes_done[si]["revalidated"] = True
            self.phases["timing"] = (time.monotonic() - mark) * 1000.0
            return "correct", result.timing_json(timed), None, False
        except judge_check.CheckFail as f:
            self.phases.setdefault(cur["phase"], (time.monotonic() - mark) * 1000.0)
            verdict = "rejected" if f.kind in ("tamper", "no_model_new") else "incorrect"
            fields = dict(f.fields)
            if cur["phase"] == "timing" and f.kind == "mismatch":
                fields["phase"] = "revalidation"
            err = result.error(f.kind, str(f), shape=cur["shape"], **{"phase": cur["phase"], **fields})
            return verdict, None, err, False
        except (CandidateError, ReferenceFailure) as w:
            self.phases.setdefault(cur["phase"], (time.monotonic() - mark) * 1000.0)
            return self.failure(w, cur)

    def failure(self, wrapped, cur):
        """The verdict of an exception of either side (CUDA errors named)."""
        e = wrapped.__cause__ or wrapped
        text = str(e)
        named = cudaerr.classify(type(e).__name__, text)
        where = {"shape": cur["shape"], "phase": cur["phase"], "trial": cur["trial"]}
        msg = text.strip().splitlines()[0][:1000] if text.strip() else type(e).__name__
        if named:
            name, sticky = named
            if not sticky:
                try:
                    torch.zeros(1, device="cuda").add_(1).item()
                    _sync()
                except Exception:  # noqa: BLE001 (the context is gone after all)
                    sticky = True
            side = "candidate" if isinstance(wrapped, CandidateError) else "reference"
            err = result.error("cuda", msg, name=name, sticky=sticky, side=side, **where)
            verdict = "runtime_error"
            if side == "reference" and name != "CUDA_ERROR_OUT_OF_MEMORY":
                verdict = "internal_error"
            return verdict, None, err, sticky
        if isinstance(wrapped, ReferenceFailure):
            return "internal_error", None, result.error("internal", f"the reference failed: "
                                                                    f"{type(e).__name__}: {msg}", **where), False
        return "runtime_error", None, result.error("python", f"{type(e).__name__}: {msg}",
                                                   name=type(e).__name__, **where), False

    def check_shape(self, si, shape, cur):
        entry = result.shape_check(shape["name"])
        self.shapes_done.append(entry)
        self.phase(shape["name"], "correctness")
        model, model_new = self.models(si)
        worst = {}
        for t in range(self.job.correctness_trials):
            cur["trial"] = t
            seed = seeds.derive(self.job.seed, si, "check", t)
            xs_c = self.inputs(seed)
            with _no_grad():
                out_c = self.candidate(lambda: model_new(*xs_c), forward=True)
            outs_c = judge_check.flatten(out_c)
            judge_check.check_placement(outs_c, xs_c)
            xs_r = self.inputs(seed)
            try:
                judge_check.check_inputs(xs_c, xs_r)
            except judge_check.CheckFail:
                entry["inputs_intact"] = False
                raise
            entry["inputs_intact"] = True
            with _no_grad():
                out_r = self.reference(lambda: model(*xs_r))
            if t == 0:
                self.derive_limit(shape["name"], self.ref_call_ms, entry)
            outs_r = judge_check.flatten(out_r)
            if len(outs_c) != len(outs_r):
                raise judge_check.CheckFail("mismatch", f"forward returned {len(outs_c)} outputs, the "
                                            f"reference returns {len(outs_r)}")
            failed = None
            for (name, g), (_, w) in zip(outs_c, outs_r):
                b = judge_check.compare(name, g, w, shape["atol"], shape["rtol"])
                old = worst.get(name)
                if old is None or b["mismatches"] > old["mismatches"] or \
                        (b["mismatches"] == old["mismatches"] and (b["max_abs"] or 0) > (old["max_abs"] or 0)):
                    worst[name] = b
                if b["mismatches"] and failed is None:
                    failed = b
            entry["buffers"] = list(worst.values())
            if failed:
                raise judge_check.CheckFail(
                    "mismatch", f"{failed['mismatches']} of {failed['count']} elements of {failed['name']} "
                    f"differ from the reference (atol {shape['atol']:g}, rtol {shape['rtol']:g})",
                    buffer=failed["name"], mismatches=failed["mismatches"],
                    nan_inf_mismatches=failed["nan_inf_mismatches"], count=failed["count"], trial=t)
            if t == 0:
                xs_c2 = self.inputs(seed)
                with _no_grad():
                    outs_c2 = judge_check.flatten(self.candidate(lambda: model_new(*xs_c2), forward=True))
                entry["deterministic"] = judge_check.same_bits(outs_c, outs_c2)
                if not entry["deterministic"]:
                    for (name, g), (_, w) in zip(outs_c2, outs_r):
                        b = judge_check.compare(name, g, w, shape["atol"], shape["rtol"])
                        if b["mismatches"]:
                            raise judge_check.CheckFail(
                                "nondeterministic", f"a second run on the same inputs differs from the "
                                f"reference in {b['mismatches']} elements of {name}", buffer=name,
                                mismatches=b["mismatches"])
                xs_c2 = outs_c2 = None
            entry["trials"] = t + 1
            xs_c = xs_r = out_c = out_r = outs_c = outs_r = None   # free before the next trial's inputs
        entry["guard_ok"] = None
        entry["passed"] = True
        cur["trial"] = None
