"""
main - kevald-torch's start-up, in a fixed order (docs/internals.md, "Torch
worker"):

  1. the frame descriptors: stdin and stdout are duplicated to private
     descriptors and pointed at /dev/null, so that nothing the candidate
     prints reaches the protocol;
  2. the environment of the role (CUDA hidden in the build role; one GPU,
     KEVALD_GPU_INDEX, visible in the run role; no TF32; no bytecode files);
  3. libkevald-confine.so: sandbox_enter for the role's profile, while the
     process still has one thread (before torch is imported), with the
     Python installation, this package and the artifact root as extra trees;
     then the C watchdog thread. A build worker still root after it (the
     artifact root not writable by uid 65534) refuses to go on: it never
     runs a submitter's build as root;
  4. import torch and torch.utils.cpp_extension; the run role initialises
     CUDA and warms the device (a GEMM, an event, random numbers) so that the
     driver has opened what it needs, and builds its judge (the L2 flush
     buffer, the snapshot of torch's functions);
  5. sandbox_lock: the role's system-call filter;
  6. HELLO, then the frame loop.
A failure at any step is a HELLO with "ok": false and "error": {"stage",
"message"} (stage "config", "sandbox", "import" or "cuda"), then exit 1:
the worker never runs a job confined less than its profile says.
"""
import argparse
import logging
import os
import platform
import shutil
import sys
import sysconfig
import time

from . import frames, loop
from .confine import Confine

LOG_LEVELS = {"error": logging.ERROR, "warn": logging.WARNING, "warning": logging.WARNING,
              "info": logging.INFO, "debug": logging.DEBUG}
PATHS_MAX = 60   # extra trees handed to the sandbox (SANDBOX_PATHS_MAX is 64)


def python_trees():
    """The folders Python and its packages are read from: the bytecode folder
    (KEVALD_TORCH_PYCACHE, where the server keeps one), prefixes, sys.path, the
    interpreter's own folder, and this package's folder."""
    cand = [os.environ.get("KEVALD_TORCH_PYCACHE"), sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
            os.path.dirname(os.path.realpath(sys.executable)),
            os.path.dirname(os.path.dirname(os.path.realpath(__file__)))]
    cand += [p for p in sys.path if p]
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        cand.append(sysconfig.get_path(key))
    out = []
    for p in cand:
        if not p or not os.path.isabs(p) or not os.path.isdir(p):
            continue
        p = os.path.realpath(p)
        if p not in out:
            out.append(p)
    return out


# Where the build role's sandbox lets it run the system's programs (sandbox/landlock.c, the
# torch build profile): the PATH it gets after its own folders. Not the PATH it inherited,
# whose other folders (a host's /opt/gcc/bin) would name a compiler the sandbox refuses to
# run: "gcc: Permission denied", and every load_inline fails.
SYSTEM_BIN = ("/usr/bin", "/bin", "/usr/local/bin")   # /usr/bin first, as kevald serve's PATH


def package_folders(name):
    """The folders of package @name, found without importing it (its code does
    not run); none for a package that is missing or broken."""
    import importlib.util
    try:
        spec = importlib.util.find_spec(name)
    except Exception:  # noqa: BLE001 (a broken package is no package: the build says so, not the HELLO)
        return []
    return list(spec.submodule_search_locations or []) if spec else []


def tool_path():
    """PATH for the build role: the folder of the ninja binary that pip's
    `ninja` package carries (where a virtual environment's torch finds ninja;
    its bin/ninja is a Python wrapper around it), the interpreter's scripts
    folder and its own folder (those that are not among SYSTEM_BIN), then
    SYSTEM_BIN. torch's load_inline runs
    `ninja` by PATH, ninja runs nvcc by absolute path and nvcc the host
    compiler by PATH. exec_trees() lets the sandbox run what the first three
    hold."""
    cand = [os.path.join(loc, "data", "bin") for loc in package_folders("ninja")]
    cand += [sysconfig.get_path("scripts"), os.path.dirname(sys.executable)]
    out = []
    for p in [c for c in cand if c not in SYSTEM_BIN] + list(SYSTEM_BIN):
        if p and os.path.isabs(p) and os.path.isdir(p) and p not in out:
            out.append(p)
    return os.pathsep.join(out)


def exec_trees():
    """The folders the build role may execute beneath besides the system's:
    the interpreter's, the scripts folder, ninja's."""
    cand = [os.path.dirname(os.path.realpath(sys.executable)), sysconfig.get_path("scripts")]
    ninja = shutil.which("ninja")
    if ninja:
        cand.append(os.path.dirname(os.path.realpath(ninja)))
    out = []
    for p in cand:
        if p and os.path.isdir(p) and os.path.realpath(p) not in out:
            out.append(os.path.realpath(p))
    return out


def run_devices(visible, index):
    """CUDA_VISIBLE_DEVICES for the run role: the device @index (KEVALD_GPU_INDEX) names among those
    @visible (the CUDA_VISIBLE_DEVICES it was started with) leaves visible, so that it is device 0 here.
    kevald serve pins each run worker as it pins kevald-gpu: CUDA_VISIBLE_DEVICES=<its GPU>,
    KEVALD_GPU_INDEX=0. Without CUDA_VISIBLE_DEVICES, @index itself. None when @index names no
    visible device."""
    try:
        i = int(index or 0)
    except ValueError:
        return None
    if visible is None:
        return str(i) if i >= 0 else None
    items = [x.strip() for x in visible.split(",") if x.strip()]
    return items[i] if 0 <= i < len(items) else None


def pycache_refusal(prefix, as_root=False):
    """Why the bytecode folder @prefix may not be read (None: it may): it must be an
    absolute path to a folder (not a link) owned by root that neither its group nor others
    may write, below folders of root's that others may not write (or only with the sticky
    bit, as /tmp), and this process must not be root (a root worker could write it) unless
    @as_root (the pycache role, which fills it)."""
    import stat
    if not prefix:
        return "off: no KEVALD_TORCH_PYCACHE (the server fills one only when it runs as root)"
    if not os.path.isabs(prefix):
        return f"off: {prefix!r} is not an absolute path"
    try:
        st = os.lstat(prefix)
    except OSError as e:
        return f"off: {prefix}: {e.strerror}"
    if not stat.S_ISDIR(st.st_mode):
        return f"off: {prefix} is not a folder"
    if st.st_uid != 0 or st.st_mode & 0o022:
        return (f"off: {prefix} is owned by uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):04o}: only a folder "
                "of root's that nobody else may write is read")
    up = os.path.dirname(prefix)
    while True:   # nor may anyone else replace it: every folder above is root's, and shared only if sticky
        try:
            a = os.lstat(up)
        except OSError as e:
            return f"off: {up}: {e.strerror}"
        if not stat.S_ISDIR(a.st_mode) or a.st_uid != 0 or (a.st_mode & 0o022 and not a.st_mode & stat.S_ISVTX):
            return (f"off: {up}, above {prefix}, is owned by uid {a.st_uid}, mode {stat.S_IMODE(a.st_mode):04o}: "
                    "another user could put a folder of their own in its place")
        if up == "/":
            break
        up = os.path.dirname(up)
    if os.geteuid() == 0 and not as_root:
        return "off: this worker is still root (it could write the folder)"
    return None


def pycache_fill(prefix):
    """`--role pycache`: compile into @prefix the bytecode of what a worker imports (torch,
    its extension builder, this package's modules, Triton where installed), as the server's
    root, unconfined: torch and Triton are the host's installed code, and nothing of a
    submitter's runs here. Files and folders are made 0644/0755 whatever the umask, and
    written atomically (Python writes a temporary file and renames it), so a worker
    reading meanwhile finds either no bytecode or whole bytecode. Returns the exit status."""
    log = logging.getLogger("kevald-torch")
    why = "not run as root" if os.geteuid() != 0 else pycache_refusal(prefix, as_root=True)
    if why:
        log.error("pycache: %s: %s", prefix, why)
        return loop.EXIT_FAILED
    os.umask(0o022)
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    sys.dont_write_bytecode = False
    sys.pycache_prefix = prefix
    t = time.monotonic()
    import importlib
    names = ["torch", "torch.utils.cpp_extension", "torch.nn.functional", "kevald_torch.build",
             "kevald_torch.judge", "kevald_torch.tritontools", "triton", "triton.language"]
    done = []
    for name in names:
        try:
            importlib.import_module(name)
            done.append(name)
        except Exception as e:  # noqa: BLE001 (Triton absent, or a judge that needs more: what imported counts)
            log.info("pycache: %s not imported: %s: %s", name, type(e).__name__, e)
    import compileall
    compileall.compile_dir(os.path.dirname(os.path.realpath(__file__)), quiet=1)   # this package, whole
    log.info("pycache: bytecode of %s in %s (%.1f s)", ", ".join(done), prefix, time.monotonic() - t)
    return loop.EXIT_OK if "torch" in done else loop.EXIT_FAILED


def process_age_s():
    """Seconds since this process was started (its exec: the interpreter's own start-up
    included), from /proc/self/stat's start time in clock ticks since boot; 0 where unreadable."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - started)
    except (OSError, ValueError, IndexError):
        return 0.0


def arch_of(major, minor):
    """kevald's arch name of a compute capability: sm_90a for 9.0 (the
    architecture-specific target, as kevald-gpu names it), else sm_NN."""
    return f"sm_{major}{minor}" + ("a" if major >= 9 else "")


class Worker:
    """One worker process: its role, frames, sandbox and HELLO."""

    def __init__(self, role, sandbox):
        self.role = role
        self.name = "torch-build" if role == "build" else "torch-run"
        self.sandbox = sandbox
        self.in_fd = os.dup(0)
        self.out_fd = os.dup(1)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.close(null)
        self.confine, self.confine_error = Confine.load(os.environ.get("KEVALD_CONFINE_LIB"), self.out_fd)
        self.hello = {"role": self.name, "pid": os.getpid(), "ok": False,
                      "python": platform.python_version(), "torch": None, "cuda": None, "layers": {}}
        self.ext_root = None
        self.torch = None
        self.tools = None          # the run role's Channel to its compiler helper (tritontools), or None
        self.tools_note = None     # why there is none, for the HELLO

    def send(self, ftype, body, disarm=False):
        self.confine.send(frames.pack(ftype, body), disarm=disarm)

    def fail(self, stage, message):
        logging.getLogger("kevald-torch").error("%s: start-up failed (%s): %s", self.name, stage, message)
        self.hello["ok"] = False
        self.hello["layers"] = self.confine.layers
        self.hello["error"] = {"stage": stage, "message": message}
        try:
            self.send(frames.HELLO, self.hello)
        except OSError:
            pass
        return loop.EXIT_FAILED

    def setup_env(self):
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
        root = os.environ.get("KEVALD_TORCH_EXT_ROOT", "")
        if not os.path.isabs(root):
            return f"KEVALD_TORCH_EXT_ROOT must be an absolute path (it is {root!r})"
        if self.role == "build":
            try:
                os.makedirs(root, exist_ok=True)
            except OSError as e:
                return f"creating the artifact root {root!r}: {e}"
            os.environ["CUDA_VISIBLE_DEVICES"] = ""
            os.environ["PATH"] = tool_path()
            os.environ["XDG_CACHE_HOME"] = os.path.join(root, ".cache")
            try:
                os.setpgid(0, 0)   # a group of its own: what it signals there never reaches the supervisor
            except OSError:
                pass
        else:
            dev = run_devices(os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ.get("KEVALD_GPU_INDEX", "0"))
            if dev is None:
                return (f"KEVALD_GPU_INDEX={os.environ.get('KEVALD_GPU_INDEX')!r} names no device of "
                        f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r}")
            os.environ["CUDA_VISIBLE_DEVICES"] = dev
            os.environ["NVIDIA_TF32_OVERRIDE"] = "0"
            os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", "1")
        os.environ["TORCH_EXTENSIONS_DIR"] = root
        self.ext_root = os.path.realpath(root) if os.path.isdir(root) else root
        # tempfile.gettempdir() probes folders by writing a file in each, which the
        # sandbox refuses (run role) or confines (build role): name one instead.
        import tempfile
        tmp = os.path.join(self.ext_root, "tmp") if self.role == "build" else "/tmp"
        if self.role == "build":
            os.makedirs(tmp, exist_ok=True)
        os.environ["TMPDIR"] = tmp
        tempfile.tempdir = tmp
        if self.role == "run" and self.sandbox:
            self.start_tools()
        return None

    def start_tools(self):
        """The run role's compiler helper (kevald_torch/tritontools.py), started
        before the sandbox is entered, where Triton is installed: its folder
        <view>.tools, made here and given to uid 65534 (the helper's user once
        it drops root), and a `kevald-torch --role tools` over a socket pair.
        Without it a Triton candidate cannot compile; the worker still runs."""
        from . import tritontools
        tbin = tritontools.triton_bin()
        if tbin is None:
            self.tools_note = "no Triton installed"
            return
        folder = self.ext_root.rstrip("/") + ".tools"
        tmp, cache = os.path.join(folder, "tmp"), os.path.join(folder, "cache")
        env = dict(os.environ)
        env.update({"CUDA_VISIBLE_DEVICES": "", "PATH": tool_path(), "KEVALD_TORCH_EXT_ROOT": folder,
                    "KEVALD_TOOLS_EXEC": tbin, "TMPDIR": tmp})
        trit = {"TRITON_CACHE_DIR": cache, "TRITON_HOME": folder}
        cuda_dir = tritontools.libcuda_dir()
        if cuda_dir:
            trit["TRITON_LIBCUDA_PATH"] = cuda_dir
        env.update(trit)
        try:
            for p in (folder, tmp, cache):
                os.makedirs(p, exist_ok=True)
                if os.geteuid() == 0:
                    os.chown(p, 65534, 65534)
            script = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "kevald-torch")
            self.tools, self.tools_proc = tritontools.spawn([sys.executable, script, "--role", "tools"],
                                                            folder, env)
        except OSError as e:
            self.tools_note = f"starting the compiler helper: {e}"
            logging.getLogger("kevald-torch").warning("%s: %s", self.name, self.tools_note)
            return
        os.environ.update(trit)
        self.tools_folder = os.path.realpath(folder)

    def pycache_use(self):
        """Read Python's bytecode from KEVALD_TORCH_PYCACHE (sys.pycache_prefix), where a
        trusted process filled it (`--role pycache`, started by the server as root): only a
        folder no process of ours can write, owned by root and writable by nobody else, and
        only once this process is no longer root. Without it, every worker compiles torch's
        Python again (876 of the 1,114 modules `import torch` loads had no bytecode in the GPU
        host's installation). Sets the HELLO's "pycache"."""
        prefix = os.environ.get("KEVALD_TORCH_PYCACHE") or ""
        why = pycache_refusal(prefix)
        if why:
            self.hello["pycache"] = {"active": False, "detail": why}
            return
        sys.pycache_prefix = prefix
        self.hello["pycache"] = {"active": True, "detail": prefix}

    def pycache_report(self):
        """How many of the modules loaded from .py files found their bytecode in the prefix."""
        info = self.hello.get("pycache") or {}
        if not info.get("active"):
            return
        n = found = 0
        for m in list(sys.modules.values()):
            f, c = getattr(m, "__file__", None), getattr(m, "__cached__", None)
            if not isinstance(f, str) or not f.endswith(".py") or not isinstance(c, str):
                continue
            n += 1
            found += os.path.isfile(c)
        info["detail"] = f"{info['detail']}: bytecode of {found} of {n} modules loaded from source files"

    def enter(self):
        profile = f"torch-{self.role}" if self.sandbox else "none"
        if self.sandbox and self.confine.lib is None:
            return f"the confinement library: {self.confine_error}"
        if self.confine.lib is None:
            self.confine.layers = {"sandbox": {"active": False, "detail": "disabled (--no-sandbox)"}}
            return None
        read = python_trees()
        keep = [self.in_fd, self.out_fd]
        if self.role == "run":   # first: the list is cut at PATHS_MAX
            read[:0] = [self.ext_root] + ([self.tools_folder] if self.tools is not None else [])
            if self.tools is not None:
                keep.append(self.tools.conn.fileno())
        err = self.confine.enter(profile, read=read[:PATHS_MAX],
                                 execs=exec_trees() if self.role == "build" else (),
                                 write=self.ext_root if self.role == "build" else None,
                                 keep_fds=keep)
        uid = (self.confine.layers.get("uid") or {}).get("detail", "")
        if err and self.role == "build" and uid.startswith("refused to build as root"):
            return f"{err}: {uid}"
        if not err and self.sandbox and self.role == "build" and (os.getuid() == 0 or os.geteuid() == 0):
            return (f"the build role is still root after entering the sandbox ({uid or 'no uid layer'}): "
                    f"give the artifact root {self.ext_root!r} to uid 65534 (nobody) so that it drops root")
        return err or self.confine.watchdog_start()

    def warm_cuda(self):
        torch = self.torch
        if not torch.cuda.is_available():
            return f"no CUDA device is visible (KEVALD_GPU_INDEX={os.environ.get('KEVALD_GPU_INDEX', '0')})"
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.cuda.init()
        torch.cuda.set_device(0)
        a = torch.randn(256, 256, device="cuda")
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        b = (a @ a).sum()
        end.record()
        torch.cuda.synchronize()
        start.elapsed_time(end)
        float(b.item())
        p = torch.cuda.get_device_properties(0)
        self.hello.update({
            "device": int(os.environ.get("KEVALD_GPU_INDEX", "0") or 0), "name": p.name,
            "cc": f"{p.major}.{p.minor}", "arch": arch_of(p.major, p.minor),
            "sms": p.multi_processor_count, "memory_bytes": p.total_memory,
            "l2_bytes": getattr(p, "L2_cache_size", 0)})
        return None

    def mark(self, step):
        """The HELLO's startup_ms[@step]: the ms since the previous mark (the first: since
        the interpreter began running this module's code)."""
        now = time.monotonic()
        self.hello["startup_ms"][step] = round((now - self.marked) * 1000.0, 1)
        self.marked = now

    def start(self):
        """Steps 2-6; returns the exit status."""
        self.hello["startup_ms"] = {}
        self.marked = time.monotonic() - process_age_s()
        self.mark("python")
        err = self.setup_env()
        if err:
            return self.fail("config", err)
        self.mark("env")
        err = self.enter()
        if err:
            return self.fail("sandbox", err)
        self.mark("sandbox")
        self.pycache_use()
        try:
            import torch
            import torch.utils.cpp_extension  # noqa: F401 (its import may look for tools: before the lock)
        except Exception as e:  # noqa: BLE001 (any failure to import is reported)
            return self.fail("import", f"import torch: {type(e).__name__}: {e}")
        self.torch = torch
        self.hello["torch"] = torch.__version__
        self.hello["cuda"] = torch.version.cuda
        self.mark("import")
        self.pycache_report()
        if self.role == "run":
            try:
                err = self.warm_cuda()
            except Exception as e:  # noqa: BLE001
                err = f"{type(e).__name__}: {e}"
            if err:
                return self.fail("cuda", err)
            self.mark("cuda")
        try:
            if self.role == "build":
                from . import build
                handler = build.Builder(self).handle
            else:
                from . import judge
                handler = judge.Judge(self).handle
        except Exception as e:  # noqa: BLE001
            return self.fail("import" if self.role == "build" else "cuda", f"{type(e).__name__}: {e}")
        self.mark("handler")
        if self.sandbox:
            err = self.confine.lock()
            if err:
                return self.fail("sandbox", err)
        self.mark("lock")
        self.hello["ok"] = True
        self.hello["layers"] = self.confine.layers
        if self.role == "run":
            self.hello["tools"] = {"active": self.tools is not None,
                                   "detail": f"compiler helper pid {self.tools_proc.pid}" if self.tools
                                   else (self.tools_note or "not started (--no-sandbox: Triton runs its own)")}
        try:
            self.send(frames.HELLO, self.hello)
        except OSError as e:
            logging.getLogger("kevald-torch").error("%s: writing HELLO: %s", self.name, e)
            return loop.EXIT_FAILED
        return loop.run(self.in_fd, self.name, handler)


def tools_main(fd):
    """`--role tools`: the run role's compiler helper (kevald_torch/tritontools.py).
    It enters the build role's profile, writable only beneath its folder
    (KEVALD_TORCH_EXT_ROOT, <view>.tools) and executing, besides the build
    role's trees, Triton's bundled tools (KEVALD_TOOLS_EXEC); locks; serves
    @fd (Triton imported by the first request that needs it). It never runs as root, and it has no GPU. Returns
    the exit status (1 when it could not confine itself)."""
    log = logging.getLogger("kevald-torch")
    folder = os.environ.get("KEVALD_TORCH_EXT_ROOT", "")
    confine, err = Confine.load(os.environ.get("KEVALD_CONFINE_LIB"), 2)
    if err:
        log.error("tools: %s", err)
        return loop.EXIT_FAILED
    import tempfile
    tempfile.tempdir = os.environ.get("TMPDIR")
    execs = exec_trees() + [p for p in (os.environ.get("KEVALD_TOOLS_EXEC"),) if p and os.path.isdir(p)]
    err = confine.enter("torch-build", read=python_trees()[:PATHS_MAX], execs=execs, write=folder, keep_fds=(fd,))
    if not err and (os.getuid() == 0 or os.geteuid() == 0):
        err = "still root after entering the sandbox"
    if err:
        log.error("tools: the sandbox: %s", err)
        return loop.EXIT_FAILED
    prefix = os.environ.get("KEVALD_TORCH_PYCACHE")
    if pycache_refusal(prefix) is None:   # Triton's bytecode, where the server's pycache role left it
        sys.pycache_prefix = prefix
    # Triton is imported by the first request that needs it, not here: a helper starts with every
    # run worker, and most candidates never call it. The build profile's filter lets an import
    # look for tools after the lock.
    err = confine.lock()
    if err:
        log.error("tools: the sandbox: %s", err)
        return loop.EXIT_FAILED
    from . import tritontools
    return tritontools.serve(fd, kill=confine.kill_descendants, tmp=os.environ.get("TMPDIR"))


def main(argv):
    ap = argparse.ArgumentParser(prog="kevald-torch")
    ap.add_argument("--role", choices=("build", "run", "tools", "pycache"), required=True)
    ap.add_argument("--no-sandbox", action="store_true",
                    help="run unconfined (tests and benchmarks only)")
    ap.add_argument("--tools-fd", type=int, help="(--role tools) the socket to serve")
    try:
        args = ap.parse_args(argv)
    except SystemExit:
        return loop.EXIT_FAILED
    level = LOG_LEVELS.get(os.environ.get("KEVALD_LOG_LEVEL", "info").lower(), logging.INFO)
    logging.basicConfig(stream=sys.stderr, level=level, format="kevald-torch: %(message)s")
    if args.role == "tools":
        return tools_main(args.tools_fd) if args.tools_fd is not None else loop.EXIT_FAILED
    if args.role == "pycache":
        return pycache_fill(os.environ.get("KEVALD_TORCH_PYCACHE", ""))
    return Worker(args.role, not args.no_sandbox).start()
