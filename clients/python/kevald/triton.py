"""
kevald.triton: Triton kernels judged like CUDA ones.

kevald runs no Python: this module compiles a `@triton.jit` function with
the Triton installed here, for the server's GPU (its arch comes from
/readyz; no GPU is needed here), and submits the PTX (`language: "ptx"`,
`frontend: "triton X.Y.Z"`) with a launch plan built from Triton's
metadata:

    import kevald, kevald.triton
    with kevald.Client(url) as c:
        sub = kevald.triton.evaluate(c, relu_kernel, task="l1_19_relu",
                                     grid=["ceil_div(B * D, 1024)"],
                                     args={"x_ptr": "x", "y_ptr": "y", "n": ("i64", "B * D")},
                                     constexprs={"BLOCK": 1024}, num_warps=4)

args maps every kernel parameter that is not a tl.constexpr to a value:
  "x"              a task buffer (or a scratch buffer of `scratch=`): a pointer
  "B * D"          any other string: an integer expression over the task's
                   params, passed as i32
  ("i64", "B*D")   an explicit scalar type (i32 u32 i64 u64 fp32 fp64) and value
  7, 0.5           a Python int (i32, or i64 when it does not fit) or float (fp32)
  None             a null pointer
grid: 1 to 3 integer expressions over the params, or a callable that gets
the constexprs (a dict) and returns them (`cdiv("N", 1024)` writes
"ceil_div(N, 1024)").

The plan: kernel = metadata "name", block = 32 * num_warps, shared =
metadata "shared", the arguments in the kernel's order, then the pointer
parameters Triton appends (global_scratch since 3.3, profile_scratch since
3.5): each a null pointer when its per-program size is 0, else a u8
scratch buffer of grid size * size bytes (Triton's launcher allocates the
same). The PTX entry's parameter list is counted against that: a Triton
whose ABI differs is an error here (TritonABIError), never a guess.

Compiled PTX is cached (PtxCache) by the kernel's source (JITFunction's
cache_key, which covers the functions it calls), the signature, the
constexprs, the options, the arch and the Triton version.

Triton is imported only when something is compiled; without it,
TritonMissing (an ImportError) says how to get it.
"""
import hashlib
import json
import os
import re
import tempfile
import threading
from collections import OrderedDict

# kevald's buffer dtypes -> Triton's pointer element types
TRITON_DTYPES = {"f32": "fp32", "f16": "fp16", "bf16": "bf16", "f64": "fp64", "i8": "i8", "u8": "u8",
                 "i32": "i32", "i64": "i64"}
# Triton scalar types -> kevald plan scalar types
SCALAR_TYPES = {"i32": "i32", "u32": "u32", "i64": "i64", "u64": "u64", "fp32": "f32", "fp64": "f64"}
SCALAR_BYTES = {"i32": 4, "u32": 4, "i64": 8, "u64": 8, "f32": 4, "f64": 8}
# The pointer parameters Triton appends after the user's, in launch order:
# (name, metadata key of the bytes per program, metadata key of the alignment).
HIDDEN_PARAMS = (("global_scratch", "global_scratch_size", "global_scratch_align"),
                 ("profile_scratch", "profile_scratch_size", "profile_scratch_align"))
BUFFER_ALIGN = 256           # every kevald device buffer starts on at least this boundary
FRONTEND_BYTES = 64          # LIMIT_FRONTEND_BYTES
BLOCK_THREADS_MAX = 1024
_INT32 = (-2 ** 31, 2 ** 31 - 1)


class TritonError(Exception):
    """A Triton kernel that kevald cannot run as asked (bad args, grid, metadata)."""


class TritonABIError(TritonError):
    """The compiled kernel's parameters are not what this module knows Triton's ABI to be."""


class TritonMissing(TritonError, ImportError):
    """Triton is not installed where the client runs."""


def _import_triton():
    try:
        import triton  # noqa: F401
        from triton.backends.compiler import GPUTarget  # noqa: F401
        from triton.compiler import ASTSource  # noqa: F401
    except ImportError as e:
        raise TritonMissing("kevald.triton compiles with the Triton installed on the client: "
                            f"pip install triton ({MIN_TRITON[0]}.{MIN_TRITON[1]} or later; no GPU needed on the client)") from e
    if triton_version_tuple(triton.__version__) < MIN_TRITON:
        # ASTSource(constexprs=..., attrs={(i,): [[...]]}) is 3.3's; 3.0-3.2 take constants= and an AttrsDescriptor
        raise TritonError(f"kevald.triton needs Triton {MIN_TRITON[0]}.{MIN_TRITON[1]} or later; this is "
                          f"{triton.__version__}")
    return triton


MIN_TRITON = (3, 3)


def triton_version_tuple(v):
    """ "3.6.0+git1a2b" -> (3, 6); an unreadable version -> (0, 0)."""
    m = re.match(r"(\d+)\.(\d+)", str(v))
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def cdiv(a, b):
    """The expression ceil_div(a, b) (a and b expressions or ints)."""
    return f"ceil_div({a}, {b})"


def arch_cc(arch):
    """ "sm_90a" -> 90, "sm_100" -> 100 (Triton's compute capability)."""
    m = re.fullmatch(r"sm_(\d{2,3})[af]?", str(arch))
    if not m:
        raise TritonError(f"arch {arch!r} is not of the form sm_90a")
    return int(m.group(1))


def server_arch(client):
    """The server's GPU architecture from /readyz (gpus[].arch, e.g. "sm_90a")."""
    for g in (client.ready() or {}).get("gpus") or []:
        if g.get("arch"):
            return g["arch"]
    raise TritonError("the server reports no GPU architecture (/readyz has no gpus[].arch: no GPU worker is "
                      "up); pass arch='sm_90a' (the GPU the kernels will run on)")


# ---- the PTX entry ------------------------------------------------------------------

_PTX_SIZES = {"u64": 8, "s64": 8, "b64": 8, "f64": 8, "u32": 4, "s32": 4, "b32": 4, "f32": 4,
              "u16": 2, "s16": 2, "b16": 2, "f16": 2, "u8": 1, "s8": 1, "b8": 1}


def ptx_entry_params(ptx, name):
    """
    The parameters of entry @name in @ptx, in order: dicts {type, bytes,
    pointer}. Raises TritonABIError when there is no such entry.
    """
    m = re.search(r"\.entry\s+" + re.escape(name) + r"\s*\(([^)]*)\)", ptx)
    if not m:
        raise TritonABIError(f"the PTX has no .entry {name}")
    params = []
    for p in m.group(1).split(","):
        p = p.strip()
        if not p:
            continue
        t = re.match(r"\.param\s+\.(\w+)", p)
        if not t:
            raise TritonABIError(f"cannot read PTX parameter {p!r} of {name}")
        arr = re.search(r"\[(\d+)\]", p)
        size = _PTX_SIZES.get(t.group(1), 0) * (int(arr.group(1)) if arr else 1)
        params.append({"type": t.group(1), "bytes": size, "pointer": ".ptr" in p})
    return params


# ---- arguments ------------------------------------------------------------------------

def _is_expr(v):
    return isinstance(v, (int, str)) and not isinstance(v, bool)


def bind_args(arg_names, args, constexprs, buffers, signature=None):
    """
    Map a kernel's parameters to Triton's signature and to kevald plan arguments.

    @arg_names:  the kernel's parameter names in order (JITFunction.arg_names)
    @args:       {name: value} for every parameter that is not a constexpr (module doc)
    @constexprs: {name: value} for the tl.constexpr parameters
    @buffers:    {name: kevald dtype} of the task's buffers and the candidate's scratch
    @signature:  {name: Triton type} overriding what is derived (e.g. "*fp16")
    Return: (signature {name: Triton type, constexprs as "constexpr"},
             [plan argument of each non-constexpr parameter, in order]).
    """
    args, constexprs, signature = dict(args or {}), dict(constexprs or {}), dict(signature or {})
    names = list(arg_names)
    for k in list(args) + list(constexprs) + list(signature):
        if k not in names:
            raise TritonError(f"the kernel has no parameter {k!r} (its parameters: {', '.join(names)})")
    sig, plan_args = {}, []
    for n in names:
        if n in constexprs:
            if n in args:
                raise TritonError(f"parameter {n!r} is given both in args and in constexprs")
            sig[n] = "constexpr"
            continue
        if n not in args:
            raise TritonError(f"parameter {n!r} has no value: give it in args (a buffer name, an expression, "
                              f"a number or None) or, for a tl.constexpr, in constexprs")
        v = args[n]
        if v is None:
            t, a = "*i8", None
        elif isinstance(v, str) and v in buffers:
            t, a = "*" + TRITON_DTYPES[buffers[v]], v
        elif isinstance(v, (tuple, list)):  # a list too: the pair read back from JSON
            if len(v) != 2 or v[0] not in SCALAR_TYPES:
                raise TritonError(f"parameter {n!r}: a typed scalar is (type, value) with type one of "
                                  f"{', '.join(SCALAR_TYPES)}, not {v!r}")
            v = tuple(v)
            t = v[0]
            if t.startswith("fp"):
                if not isinstance(v[1], (int, float)) or isinstance(v[1], bool):
                    raise TritonError(f"parameter {n!r}: a {t} value is a number, not {v[1]!r}")
                a = {"type": SCALAR_TYPES[t], "value": float(v[1])}
            else:
                if not _is_expr(v[1]):
                    raise TritonError(f"parameter {n!r}: a {t} value is an integer or an expression, not {v[1]!r}")
                a = {"type": SCALAR_TYPES[t], "value": v[1]}
        elif isinstance(v, bool):
            raise TritonError(f"parameter {n!r}: booleans are not kernel arguments here; use a constexpr")
        elif isinstance(v, int):
            t = "i32" if _INT32[0] <= v <= _INT32[1] else "i64"
            a = {"type": t, "value": v}
        elif isinstance(v, float):
            t, a = "fp32", {"type": "f32", "value": v}
        elif isinstance(v, str):
            t, a = "i32", {"type": "i32", "value": v}
        else:
            raise TritonError(f"parameter {n!r}: {v!r} is not a buffer name, an expression, a number or None")
        if n in signature:
            t = signature[n]
            if isinstance(a, dict) and not t.startswith("*"):
                if t not in SCALAR_TYPES:
                    raise TritonError(f"parameter {n!r}: signature type {t!r} is not one of {', '.join(SCALAR_TYPES)}")
                a = dict(a, type=SCALAR_TYPES[t])
            elif isinstance(a, dict) != (not t.startswith("*")):
                raise TritonError(f"parameter {n!r}: signature type {t!r} does not fit the value {v!r}")
        sig[n] = t
        plan_args.append(a)
    return sig, plan_args


def grid_exprs(grid, constexprs=None):
    """1 to 3 grid expressions from a list or a callable of the constexprs."""
    if callable(grid):
        grid = grid(dict(constexprs or {}))
    if isinstance(grid, (int, str)):
        grid = [grid]
    grid = list(grid or [])
    if not 1 <= len(grid) <= 3:
        raise TritonError(f"the grid has {len(grid)} dimensions; it needs 1 to 3")
    for g in grid:
        if not _is_expr(g) or (isinstance(g, int) and g < 1):
            raise TritonError(f"grid dimension {g!r} is not an expression string or an integer >= 1")
    return grid


# ---- the plan from the compiled kernel ------------------------------------------------

def _arg_bytes(a):
    if a is None or isinstance(a, str):
        return 8
    return SCALAR_BYTES[a["type"]]


def plan_for(ptx, metadata, plan_args, grid, scratch=(), num_warps=None):
    """
    The launch plan and the scratch list for a compiled Triton kernel.

    @ptx, @metadata: the compiled kernel (metadata as a dict)
    @plan_args:      bind_args()'s plan arguments (the user's parameters)
    @grid:           grid_exprs()
    @scratch:        the candidate's own scratch buffers, kept first
    Return: (plan, scratch), plan a list of one launch.
    Raises TritonABIError when the kernel needs what kevald does not do
    (clusters, cooperative launch, TMA descriptors) or when the PTX entry's
    parameters are not the user's arguments followed by the scratch pointers
    the metadata names.
    """
    md = dict(metadata)
    name = md.get("name")
    if not name:
        raise TritonABIError("the kernel metadata has no 'name'")
    warps = md.get("num_warps", num_warps)
    if not isinstance(warps, int) or not 1 <= 32 * warps <= BLOCK_THREADS_MAX:
        raise TritonABIError(f"num_warps {warps!r} does not give a block of 32 to {BLOCK_THREADS_MAX} threads")
    ctas = 1
    for c in md.get("cluster_dims") or (1, 1, 1):
        ctas *= int(c)
    if int(md.get("num_ctas", 1)) != 1 or ctas != 1:
        raise TritonABIError("the kernel uses thread block clusters (num_ctas > 1); kevald launches none")
    if md.get("launch_cooperative_grid"):
        raise TritonABIError("the kernel needs a cooperative launch; kevald launches none")
    if md.get("tensordesc_meta"):
        raise TritonABIError("the kernel takes TMA tensor descriptors, which are built on the host; kevald "
                             "passes buffers and scalars only")
    hidden = [h for h in HIDDEN_PARAMS if h[1] in md]
    entry = ptx_entry_params(ptx, name)
    want = len(plan_args) + len(hidden)
    if len(entry) != want:
        raise TritonABIError(
            f"the PTX entry {name} has {len(entry)} parameters, but the kernel has {len(plan_args)} "
            f"non-constexpr arguments and the metadata names {len(hidden)} appended pointer(s) "
            f"({', '.join(h[0] for h in hidden) or 'none'}): this Triton's launch ABI is not one kevald.triton "
            f"knows (Triton {md.get('triton_version', '?')})")
    args = list(plan_args)
    scratch = [dict(s) for s in scratch]
    names = {s["name"] for s in scratch}
    gexpr = " * ".join(f"({g})" for g in grid)
    for pname, size_key, align_key in hidden:
        size = int(md.get(size_key) or 0)
        align = int(md.get(align_key) or 1)
        if size <= 0:
            args.append(None)
            continue
        if align > BUFFER_ALIGN:
            raise TritonABIError(f"{pname} wants {align}-byte alignment; kevald's buffers have {BUFFER_ALIGN}")
        sname = "triton_" + pname
        if sname in names:
            raise TritonError(f"scratch name {sname!r} is taken")
        scratch.append({"name": sname, "dtype": "u8", "count": f"{gexpr} * {size}"})
        args.append(sname)
    for i, (a, p) in enumerate(zip(args, entry)):
        if _arg_bytes(a) != p["bytes"]:
            what = "a pointer" if a is None or isinstance(a, str) else a["type"]
            raise TritonABIError(f"argument {i} is {what} ({_arg_bytes(a)} bytes) but PTX parameter {i} of "
                                 f"{name} is .{p['type']} ({p['bytes']} bytes)")
    launch = {"kernel": name, "grid": list(grid), "block": [32 * warps], "shared": int(md.get("shared") or 0),
              "args": args}
    return [launch], scratch


# ---- compiling, with a cache ------------------------------------------------------------

def _jsonable(v):
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return repr(v)


def metadata_dict(md):
    """Triton's metadata (a namedtuple, a dict or an object) as a JSON-able dict."""
    if hasattr(md, "_asdict"):
        md = md._asdict()
    elif not isinstance(md, dict):
        md = {k: v for k, v in vars(md).items() if not k.startswith("_")}
    return {str(k): _jsonable(v) for k, v in md.items()}


class CompiledKernel:
    """PTX, its metadata (a dict), the Triton version; cache_hit says where it came from."""

    def __init__(self, ptx, metadata, triton_version, cache_hit=False):
        self.ptx = ptx
        self.metadata = dict(metadata)
        self.triton_version = triton_version
        self.cache_hit = cache_hit

    @property
    def frontend(self):
        return f"triton {self.triton_version}"[:FRONTEND_BYTES]


class PtxCache:
    """
    Compiled kernels by key: an in-memory LRU of @max_entries, and, with
    @path, one JSON file per key in that folder (kept across processes).
    Thread-safe.
    """

    def __init__(self, max_entries=256, path=None):
        self.max_entries = max_entries
        self.path = os.path.expanduser(path) if path else None
        self._mem = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def _file(self, key):
        return os.path.join(self.path, key + ".json")

    def get(self, key):
        with self._lock:
            e = self._mem.get(key)
            if e is not None:
                self._mem.move_to_end(key)
                self.hits += 1
                return e
        if self.path:
            try:
                with open(self._file(key)) as f:
                    d = json.load(f)
                e = (d["ptx"], d["metadata"], d["triton"])
            except (OSError, ValueError, KeyError):
                e = None
            if e is not None:
                self._put_mem(key, e)
                with self._lock:
                    self.hits += 1
                return e
        with self._lock:
            self.misses += 1
        return None

    def _put_mem(self, key, e):
        with self._lock:
            self._mem[key] = e
            self._mem.move_to_end(key)
            while len(self._mem) > self.max_entries:
                self._mem.popitem(last=False)

    def put(self, key, ptx, metadata, triton_version):
        e = (ptx, metadata, triton_version)
        self._put_mem(key, e)
        if self.path:
            # one temporary file per call (threads of one process save the same key at once);
            # a disk that refuses the write leaves the kernel cached in memory only
            tmp = None
            try:
                os.makedirs(self.path, exist_ok=True)
                fd, tmp = tempfile.mkstemp(prefix=key + ".", suffix=".tmp", dir=self.path)
                with os.fdopen(fd, "w") as f:
                    json.dump({"ptx": ptx, "metadata": metadata, "triton": triton_version}, f)
                os.replace(tmp, self._file(key))
            except OSError:
                if tmp:
                    try:
                        os.unlink(tmp)
                    except OSError:
                        pass


DEFAULT_CACHE = PtxCache()


def kernel_source_key(fn):
    """What identifies a kernel's code: JITFunction.cache_key (its source and the jit functions it
    calls), else its source text."""
    key = getattr(fn, "cache_key", None)
    if key:
        return str(key)
    src = getattr(fn, "src", None)
    if src is None:
        import inspect
        src = inspect.getsource(getattr(fn, "fn", fn))
    return hashlib.sha256(src.encode()).hexdigest()


def cache_key(fn, signature, constexprs, attrs, options, arch, triton_version):
    doc = {"src": kernel_source_key(fn), "name": getattr(fn, "__name__", ""), "signature": signature,
           "constexprs": _jsonable(constexprs or {}), "attrs": sorted(repr(a) for a in (attrs or {}).items()),
           "options": _jsonable(options or {}), "arch": arch, "triton": triton_version}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def triton_compile(fn, signature, constexprs, attrs, cc, options):
    """Compile with the installed Triton, no GPU: (ptx, metadata dict, version)."""
    triton = _import_triton()
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    src = ASTSource(fn=fn, signature=signature, constexprs=dict(constexprs or {}), attrs=dict(attrs or {}))
    k = triton.compile(src, target=GPUTarget("cuda", cc, 32), options=dict(options))
    return k.asm["ptx"], metadata_dict(k.metadata), triton.__version__


def triton_version():
    return _import_triton().__version__


def pointer_attrs(arg_names, signature, args):
    """Triton's divisibility hint for every pointer to a buffer: kevald's buffers are 256-byte aligned."""
    return {(i,): [["tt.divisibility", 16]] for i, n in enumerate(arg_names)
            if signature.get(n, "").startswith("*") and (args or {}).get(n) is not None}


def compile_kernel(fn, signature, constexprs=None, attrs=None, arch="sm_90a", num_warps=4, num_stages=3,
                   options=None, cache=DEFAULT_CACHE, compiler=None, version=None):
    """
    Compile @fn for @arch (cached). @compiler(fn, signature, constexprs,
    attrs, cc, options) -> (ptx, metadata, version) replaces
    triton_compile (tests); @version is then its Triton version (for the
    cache key).
    Return: a CompiledKernel.
    """
    opts = dict(options or {})
    opts.update(num_warps=num_warps, num_stages=num_stages)
    if version is None:
        version = triton_version() if compiler is None else "unknown"
    key = cache_key(fn, signature, constexprs, attrs, opts, arch, version)
    if cache is not None:
        e = cache.get(key)
        if e is not None:
            return CompiledKernel(e[0], e[1], e[2], cache_hit=True)
    ptx, md, ver = (compiler or triton_compile)(fn, signature, constexprs, attrs, arch_cc(arch), opts)
    md = metadata_dict(md)
    if cache is not None:
        cache.put(key, ptx, md, ver)
    return CompiledKernel(ptx, md, ver)


# ---- submissions ------------------------------------------------------------------------

def _task_buffers(task, scratch):
    bufs = {b["name"]: b["dtype"] for b in task.get("buffers", [])}
    for s in scratch or ():
        bufs[s["name"]] = s["dtype"]
    return bufs


def build(fn, task, grid, args, constexprs=None, num_warps=4, num_stages=3, arch="sm_90a", scratch=None,
          signature=None, options=None, cache=DEFAULT_CACHE, compiler=None, version=None, **fields):
    """
    The submission (a dict) for kernel @fn on @task (the task document, as
    GET /v1/tasks/{name} answers). Other keyword arguments are submission
    fields (mode, timing, tags, shapes, priority, ...). The compiled kernel
    is returned too: (submission, CompiledKernel).
    """
    if not isinstance(task, dict) or "name" not in task:
        raise TritonError("task must be the task document (Client.task(name)); submission() fetches it")
    arg_names = list(getattr(fn, "arg_names", None) or [])
    if not arg_names:
        raise TritonError("fn has no arg_names: pass the @triton.jit function itself")
    sig, plan_args = bind_args(arg_names, args, constexprs, _task_buffers(task, scratch), signature)
    g = grid_exprs(grid, constexprs)
    attrs = pointer_attrs(arg_names, sig, args)
    k = compile_kernel(fn, sig, constexprs, attrs, arch, num_warps, num_stages, options, cache, compiler, version)
    plan, scr = plan_for(k.ptx, dict(k.metadata, triton_version=k.triton_version), plan_args, g, scratch or (),
                         num_warps)
    sub = {"task": task["name"], "language": "ptx", "frontend": k.frontend, "source": k.ptx, "plan": plan}
    if scr:
        sub["scratch"] = scr
    for f, v in fields.items():
        if v is not None:
            sub[f] = v
    return sub, k


def _prepare(client, task, arch):
    if isinstance(task, str):
        task = client.task(task)
    return task, arch or server_arch(client)


def submission(client, fn, task, grid, args, arch=None, **kw):
    """build() with the task fetched by name and the arch read from the server's /readyz."""
    task, arch = _prepare(client, task, arch)
    return build(fn, task, grid, args, arch=arch, **kw)[0]


def submit(client, fn, task, grid, args, arch=None, **kw):
    """Compile, submit; return the submission id."""
    return client.submit(submission(client, fn, task, grid, args, arch=arch, **kw))


def evaluate(client, fn, task, grid, args, arch=None, timeout=600.0, **kw):
    """Compile, submit and wait; return the Submission (kevald.models)."""
    return client.evaluate(submission(client, fn, task, grid, args, arch=arch, **kw), timeout=timeout)


async def evaluate_async(client, fn, task, grid, args, arch=None, timeout=600.0, **kw):
    """evaluate() for an AsyncClient (the compile itself runs in this thread)."""
    if isinstance(task, str):
        task = await client.task(task)
    if arch is None:
        for g in (await client.ready() or {}).get("gpus") or []:
            arch = arch or g.get("arch")
        if arch is None:
            raise TritonError("the server reports no GPU architecture; pass arch='sm_90a'")
    sub = build(fn, task, grid, args, arch=arch, **kw)[0]
    return await client.evaluate(sub, timeout=timeout)
