"""
tritontools - Triton's compilers for a candidate in the run role.

Triton compiles a @triton.jit kernel when it is first launched, in the
launching process: LLVM in-process, then `ptxas` (PTX to CUBIN), and a C
compiler for its launcher and its CUDA utilities, both Python extensions it
then imports; on the way it asks `ptxas --version` and `/sbin/ldconfig -p`,
and it writes its cache. The run role starts no process and writes no file
(its system-call filter), so a KernelBench sample that uses Triton cannot
compile there.

So the run worker starts a helper before it confines itself (spawn()): a
fresh interpreter (`kevald-torch --role tools`) that confines itself with
the build role's profile (a toolchain may run; it writes only beneath its
own folder, <view>.tools, beside the run worker's view; no GPU, no network,
uid 65534), and answers requests on a socket pair (serve()):

  version  {path}                          `ptxas --version` (Triton's ptxas or
                                           the toolkit's, nothing else)
  cubin    {arch, fp_fusion, ptx_options}  ptxas on the PTX (the payload), the
                                           CUBIN back: Triton's own make_cubin
  module   {src, name}                     Triton's compile_module_from_src
                                           without the import, with Triton's
                                           own flags: the .so's path
  put      {key, filename}                 a cache file (the payload) written
                                           where Triton's cache keeps it

Before its first request it builds Triton's CUDA utilities (prewarm(): the
`module` every Triton candidate's first launch asks for, the same for all,
its source as Triton's own CudaUtils makes it) into its cache, while the run
worker is still starting.

Its folder holds 1 GiB at most; after each request (and past 120 s) every
process the request started is killed, also one in a session of its own
(the helper is its descendants' subreaper), and its TMPDIR emptied.

install() points the run role's Triton at it: a cache manager that reads
the helper's folder and writes through the helper, and the four places
above replaced by requests. The candidate reaches the helper too (it is in
the same process as the socket): what it can make the helper do is what
a build job may do, inside the same confinement.

Requests and answers are a JSON header then a payload (bytes), each one
message of multiprocessing.connection; sizes are bounded.
"""
import json
import os
import re
import threading

HEADER_MAX = 4 << 20
PAYLOAD_MAX = 256 << 20
TOOLS_BYTES_MAX = 1 << 30   # what the helper's folder may hold, at most (KEVALD_TOOLS_BYTES_MAX lowers it)
REQUEST_TIMEOUT_S = 120     # a request's programs are killed past it
READY_TIMEOUT_S = 30        # the helper's "ready", at most this long after it is started
TOOL_NAMES = ("ptxas", "ptxas-blackwell")   # what `version` runs
_NAME = re.compile(r"^[A-Za-z0-9_.+-]{1,200}$")


class ToolError(RuntimeError):
    """The helper could not do what was asked (its message says why)."""


def send(conn, head, payload=b""):
    """One message: @head (a dict) as JSON, then @payload."""
    conn.send_bytes(json.dumps(head).encode())
    conn.send_bytes(payload)


def recv(conn):
    """The next message as (the header's bytes, the payload), within HEADER_MAX and PAYLOAD_MAX."""
    head = conn.recv_bytes(HEADER_MAX)
    return head, conn.recv_bytes(PAYLOAD_MAX)


class Channel:
    """The run worker's end: one request at a time (a lock: the candidate may compile from threads)."""

    def __init__(self, fd):
        from multiprocessing.connection import Connection
        self.conn = Connection(fd)
        self.lock = threading.Lock()

    def call(self, op, payload=b"", **args):
        with self.lock:
            try:
                send(self.conn, {"op": op, **args}, payload)
                raw, data = recv(self.conn)
                head = json.loads(raw)
            except (EOFError, OSError, ValueError) as e:
                raise ToolError(f"the compiler helper is gone ({type(e).__name__}: {e})") from e
        if not head.get("ok"):
            raise ToolError(head.get("error") or "the helper failed")
        return head, data

    def wait_ready(self, timeout):
        """Whether the helper said "ready" (serve()'s first message) within @timeout seconds."""
        try:
            return self.conn.poll(timeout) and bool(json.loads(recv(self.conn)[0]).get("ready"))
        except (EOFError, OSError, ValueError):
            return False


# ---- the helper's side ----

def _folder():
    return os.environ["KEVALD_TORCH_EXT_ROOT"]


def _bytes_max():
    try:
        return min(TOOLS_BYTES_MAX, int(os.environ.get("KEVALD_TOOLS_BYTES_MAX", TOOLS_BYTES_MAX)))
    except ValueError:
        return TOOLS_BYTES_MAX


def folder_bytes(folder):
    """What @folder holds, in bytes (links not followed)."""
    total = 0
    for root, dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def _room(more=0):
    """Refuse a request that would write where the folder's budget is spent."""
    used, limit = folder_bytes(_folder()), _bytes_max()
    if used + more > limit:
        raise ToolError(f"the compiler helper's folder holds {used} bytes, its budget is {limit}")


def op_version(args, payload):
    """`ptxas --version` for Triton's probes: only a tool named as Triton's
    ptxas, beneath Triton's tools folder (KEVALD_TOOLS_EXEC) or the CUDA
    toolkit's."""
    import subprocess
    path = os.path.realpath(str(args["path"]))
    trees = [os.path.realpath(p) for p in (os.environ.get("KEVALD_TOOLS_EXEC"), "/usr/local/cuda") if p]
    if os.path.basename(path) not in TOOL_NAMES or not any(path.startswith(t + "/") for t in trees):
        raise ToolError(f"not a tool the helper runs: {args['path']!r}")
    r = subprocess.run([path, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=REQUEST_TIMEOUT_S, check=False)
    return {"rc": r.returncode}, r.stdout[:1 << 20]


def op_cubin(args, payload):
    """Triton's own CUDABackend.make_cubin (ptxas, as Triton runs it) on the PTX @payload."""
    import types
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.compiler import CUDABackend
    from triton.runtime.errors import PTXASError
    _room(len(payload) * 4)
    arch = int(args["arch"])
    opt = types.SimpleNamespace(enable_fp_fusion=bool(args.get("fp_fusion", True)),
                                ptx_options=str(args["ptx_options"]) if args.get("ptx_options") else None)
    backend = CUDABackend(GPUTarget("cuda", arch, 32))
    try:
        return {}, backend.make_cubin(payload.decode("utf-8"), {}, opt, arch)
    except PTXASError as e:
        return {"ptxas_error": e.error_message or str(e)}, b""


def op_module(args, payload):
    """Triton's compile_module_from_src without the import: C source @src
    built as Triton builds its CUDA utilities and launchers, with Triton's
    own folders, libraries and flags (never the request's: a flag such as
    `-wrapper` would run a program), into the cache. Answers the .so's path."""
    import hashlib
    import sysconfig
    import tempfile
    from triton.backends.nvidia import driver as nv_driver
    from triton.runtime import build
    from triton.runtime.cache import get_cache_manager
    src, name = str(args["src"]), str(args["name"])
    if not _NAME.match(name):
        raise ToolError(f"module name {name!r}")
    _room(len(src) * 4)
    key = hashlib.sha256((src + build.platform_key()).encode("utf-8")).hexdigest()
    cache = get_cache_manager(key)
    filename = f"{name}{sysconfig.get_config_var('EXT_SUFFIX')}"
    path = cache.get_file(filename)
    if path is None:
        with tempfile.TemporaryDirectory() as tmp:
            src_path = os.path.join(tmp, name + ".c")
            with open(src_path, "w") as f:
                f.write(src)
            so = build._build(name, src_path, tmp, list(nv_driver.library_dirs()), list(nv_driver.include_dirs),
                              list(nv_driver.libraries), [])
            with open(so, "rb") as f:
                data = f.read()
            _room(len(data))
            path = cache.put(data, filename, binary=True)
    return {"path": path}, b""


def op_put(args, payload):
    """Triton's FileCacheManager.put, its layout (TRITON_CACHE_DIR/<key>/<filename>),
    written whole or not at all, within the folder's budget."""
    key, filename = str(args["key"]), str(args["filename"])
    if not _NAME.match(key) or not _NAME.match(filename) or key in (".", "..") or filename in (".", ".."):
        raise ToolError(f"cache name {key!r}/{filename!r}")
    _room(len(payload))
    folder = os.path.join(os.environ["TRITON_CACHE_DIR"], key)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, filename)
    tmp = os.path.join(folder, f".tmp.{os.getpid()}.{filename}")
    with open(tmp, "wb") as f:
        f.write(payload)
    os.replace(tmp, path)
    return {"path": path}, b""


OPS = {"version": op_version, "cubin": op_cubin, "module": op_module, "put": op_put}


def clear_tmp(tmp):
    """Empty @tmp (what a failed ptxas or build left there), a folder beneath the
    helper's own (KEVALD_TORCH_EXT_ROOT) and nothing else; the folder stays."""
    import shutil
    root = os.path.realpath(os.environ.get("KEVALD_TORCH_EXT_ROOT") or "/nonexistent")
    if not tmp or not os.path.isdir(tmp) or not os.path.realpath(tmp).startswith(root + "/"):
        return
    for name in os.listdir(tmp):
        p = os.path.join(tmp, name)
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p, ignore_errors=True)
        else:
            try:
                os.unlink(p)
            except OSError:
                pass


def reap():
    """Collect every child that has ended (the helper is its orphans' subreaper)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _answer(fn, args, payload, kill, tmp):
    """(answer, payload) of @fn(@args, @payload) as a request: its programs
    killed past REQUEST_TIMEOUT_S and after it (@kill), @tmp emptied; a
    failure is an answer."""
    timer = threading.Timer(REQUEST_TIMEOUT_S, kill) if kill else None
    if timer:
        timer.daemon = True
        timer.start()
    try:
        out, data = fn(args, payload)
        return {"ok": True, **out}, data
    except Exception as e:  # noqa: BLE001 (every failure is an answer; the helper goes on)
        return {"ok": False, "error": f"{type(e).__name__}: {e}"[:8000]}, b""
    finally:
        if timer:
            timer.cancel()
            timer.join()   # one that had already begun to fire ends here, not in the next request
        if kill:
            kill()
            reap()
        clear_tmp(tmp)


class _Captured(Exception):
    """prewarm()'s stop: Triton asked for its CUDA utilities' build."""


def prewarm(kill=None, tmp=None):
    """Build Triton's CUDA utilities (`cuda_utils`: what every Triton
    candidate's first launch asks for, the same for all) into this helper's
    cache before any request, while the run worker is still starting: the
    candidate's `module` request then finds it. The source is the one
    Triton's own CudaUtils asks for (its compile_module_from_src caught
    here, whatever Triton makes of its driver.c), built by op_module().
    Nothing where Triton or its CudaUtils is missing. Returns the answer, or
    None."""
    try:
        from triton.backends.nvidia import driver as nv_driver
        cls = nv_driver.CudaUtils
    except Exception:  # noqa: BLE001 (no Triton, another layout: the first launch builds it)
        return None
    asked = []

    def catch(src, name, *args, **kwargs):   # noqa: ARG001
        asked.append((str(src), str(name)))
        raise _Captured()

    real = nv_driver.compile_module_from_src
    nv_driver.compile_module_from_src = catch
    try:
        cls.__init__(object.__new__(cls))
    except _Captured:
        pass
    except Exception:  # noqa: BLE001 (a CudaUtils that needs more than a compile: nothing done)
        return None
    finally:
        nv_driver.compile_module_from_src = real
    if not asked:
        return None
    src, name = asked[0]
    out, _ = _answer(op_module, {"src": src, "name": name}, b"", kill, tmp)
    return out


def serve(fd, ops=None, kill=None, tmp=None):
    """Say ready, build Triton's CUDA utilities (prewarm()), then answer
    requests on @fd until the run worker closes its end. @kill (the helper's
    confine.kill_descendants) ends, after each request and past
    REQUEST_TIMEOUT_S, every process the request started, also one that left
    in a session of its own; @tmp (the helper's TMPDIR) is emptied after
    each. Returns 0."""
    from multiprocessing.connection import Connection
    ops = ops or OPS
    conn = Connection(fd)
    try:
        send(conn, {"ok": True, "ready": True})
    except OSError:
        return 0
    if ops is OPS:
        prewarm(kill, tmp)
    while True:
        try:
            head, payload = recv(conn)
        except (EOFError, OSError):
            return 0
        try:
            args = json.loads(head)
        except ValueError:
            args = None
        fn = ops.get(args.get("op")) if isinstance(args, dict) else None
        if fn is None:
            out, data = {"ok": False, "error": f"ToolError: unknown request {head[:80]!r}"}, b""
        else:
            out, data = _answer(fn, args, payload, kill, tmp)
        try:
            send(conn, out, data)
        except OSError:
            return 0


# ---- the run worker's side ----

def libcuda_dir():
    """The folder of libcuda.so.1 (TRITON_LIBCUDA_PATH: Triton otherwise runs
    `/sbin/ldconfig -p` to find it, which the run role cannot): LD_LIBRARY_PATH's
    folders, the usual ones, then the linker cache (`ldconfig -p`, while this
    process may still run a program). None where there is none."""
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    dirs += ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
             "/usr/local/nvidia/lib64", "/usr/lib/wsl/lib"]
    for d in dirs:
        if os.path.isabs(d) and os.path.exists(os.path.join(d, "libcuda.so.1")):
            return os.path.realpath(d)
    import subprocess
    for ldconfig in ("/sbin/ldconfig", "/usr/sbin/ldconfig"):
        try:
            out = subprocess.run([ldconfig, "-p"], capture_output=True, timeout=20, check=False).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        for line in out.decode(errors="replace").splitlines():
            if "libcuda.so.1" in line and "=>" in line:
                path = line.split("=>")[-1].strip()
                if os.path.isabs(path) and os.path.exists(path):
                    return os.path.dirname(os.path.realpath(path))
    return None


def triton_bin():
    """Triton's bundled tools folder (ptxas), found without importing Triton, or None."""
    from .main import package_folders
    for loc in package_folders("triton"):
        p = os.path.join(loc, "backends", "nvidia", "bin")
        if os.path.isdir(p):
            return os.path.realpath(p)
    return None


def spawn(argv, folder, env):
    """Start the helper (@argv, with "--tools-fd N" added) over a new socket
    pair; its folder @folder must exist. Returns (Channel, Popen)."""
    import socket
    import subprocess
    env = dict(env, KEVALD_PARENT_PID=str(os.getpid()))   # its sandbox checks that its parent is this process
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        proc = subprocess.Popen([*argv, "--tools-fd", str(theirs.fileno())], pass_fds=(theirs.fileno(),),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env, cwd=folder,
                                close_fds=True)
    finally:
        theirs.close()
    chan = Channel(ours.detach())
    # Its "ready" comes once it has confined itself: a helper that could not (its sandbox, its
    # Python) is found here, before the run worker says it has one.
    if not chan.wait_ready(READY_TIMEOUT_S):
        proc.kill()
        proc.wait()
        chan.conn.close()
        raise OSError(f"the compiler helper did not start (exit {proc.returncode}; its log is on stderr)")
    return chan, proc


def install(channel):
    """Point this process's Triton at the helper behind @channel (idempotent)."""
    import functools
    import importlib
    import triton
    from triton import knobs
    from triton.runtime import build, cache
    from triton.runtime.errors import PTXASError
    nv_compiler = importlib.import_module("triton.backends.nvidia.compiler")
    nv_driver = importlib.import_module("triton.backends.nvidia.driver")
    if getattr(triton, "_kevald_tools", None) is channel:
        return

    class HelperCache(cache.FileCacheManager):
        """Triton's file cache, read here, written by the helper."""

        def __init__(self, key, override=False, dump=False):   # noqa: ARG002 (dump and override: not here)
            self.key = key
            self.cache_dir = os.path.join(knobs.cache.dir, key)
            self.lock_path = os.path.join(self.cache_dir, "lock")

        def put(self, data, filename, binary=True):
            binary = isinstance(data, bytes)
            payload = data if binary else str(data).encode("utf-8")
            head, _ = channel.call("put", payload, key=self.key, filename=filename)
            return head["path"]

    @functools.lru_cache
    def tool_from_path(path):
        try:
            head, out = channel.call("version", path=path)
        except ToolError:
            return None   # as Triton's: no such tool here (its caller tries the next path)
        m = re.search(r".*release (\d+\.\d+).*", out.decode("utf-8", "replace"), flags=re.MULTILINE)
        return knobs.NvidiaTool(path, m.group(1)) if head.get("rc") == 0 and m else None

    @functools.lru_cache
    def ptxas_version(arch=80):
        mock = knobs.nvidia.mock_ptx_version
        if mock is not None:
            return mock
        head, out = channel.call("version", path=nv_compiler.get_ptxas(arch).path)
        if head.get("rc") != 0:
            raise ToolError(f"ptxas --version exited {head.get('rc')}")
        return out.decode("utf-8")

    def make_cubin(self, src, metadata, opt, capability):   # noqa: ARG001 (Triton's signature)
        head, cubin = channel.call("cubin", src.encode("utf-8"), arch=int(capability),
                                   fp_fusion=bool(opt.enable_fp_fusion), ptx_options=opt.ptx_options)
        if "ptxas_error" in head:
            raise PTXASError(head["ptxas_error"])
        return cubin

    def compile_module_from_src(src, name, library_dirs=None, include_dirs=None, libraries=None,  # noqa: ARG001
                                ccflags=None):  # noqa: ARG001
        # library_dirs, include_dirs, libraries, ccflags: the helper uses Triton's own
        head, _ = channel.call("module", src=src, name=name)
        return build._load_module_from_path(name, head["path"])

    knobs.cache.manager_class = HelperCache
    knobs.NvidiaTool.from_path = staticmethod(tool_from_path)
    nv_compiler.get_ptxas_version = ptxas_version
    nv_compiler.CUDABackend.make_cubin = make_cubin
    build.compile_module_from_src = compile_module_from_src
    nv_driver.compile_module_from_src = compile_module_from_src
    triton._kevald_tools = channel
