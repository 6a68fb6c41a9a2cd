#!/usr/bin/env python3
"""The GPU test suite: known kernels with known verdicts (tests/gpu/cases.json).

Two ways to run each case:
  direct (default): this script is the supervisor. It resolves the task and
      the case's plan into a GPU JOB (docs/internals.md, "GPU worker"), sends
      it with the prebuilt CUBIN/fatbins to kevald-gpu over frames, and checks
      the RESULT. Cases run in order on one worker process, which is
      restarted only when it exits, so the suite also checks that the worker
      survives what it should (non-sticky errors, printf floods) and exits
      after what it must (sticky errors, timeouts), and that a job cannot read
      what the previous job left in device memory.
      A case marked "fenced" is compiled instead by kevald-compile (from
      the folder of kevald-gpu, or --compile-bin; one compile worker for the
      whole run), whose RESULT carries the plain CUBIN and the fenced build
      (worker/compile/fence.h); the JOB then names both, "candidate" and
      "candidate_fenced", and the correctness phase runs the fenced one.
  eval (--kevald PATH): each case through `kevald eval` (NVRTC compile, the
      fenced build, the dispatcher, a fresh worker per case).

The cases of cases.json run first, then the exploit suite of exploits.json
(kernels that try to game the reward, each with the verdict the judge must
give; --only picks from both). An exploit case may carry "class" (what it
tries) and "score_at_most": {"twin": CASE, "factor": F}: when its verdict is
"correct", its timing.speedup must not exceed F x the speedup of the honest
twin CASE, which ran earlier.

Prints a table "case | expected | got | detail | ms" and exits 0 when every
case passed, 1 otherwise, 77 when this host has no GPU. --check resolves
every case into its JOB without a GPU (and, given --fatbins or --build-root,
checks that every fatbin is there; with kevald-compile at hand it also
compiles every fenced case and checks its fenced build). Python 3 stdlib only.
"""
import argparse
import ast
import ctypes
import json
import math
import os
import select
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MAGIC = 0x3146564B
HELLO, JOB, RESULT, PROGRESS, SHUTDOWN = 1, 2, 3, 4, 5
FAST_TIMING = {"budget_ms": 200, "target_precision": 0.05, "min_trials": 5, "max_trials": 100, "warmup": 1}
INT_TYPES = ("i32", "u32", "i64", "u64")


def gpu_present():
    if os.environ.get("KEVALD_SUITE_FAKE_GPU") == "1":  # tests/gpu/fake dry runs of this runner
        return True, ""
    if not os.path.exists("/dev/nvidiactl"):
        return False, "no /dev/nvidiactl"
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        return False, "cannot load libcuda.so.1: %s" % e
    return True, ""


# ---------------------------------------------------------------- resolving --

def _tdiv(a, b):
    if b == 0:
        raise ValueError("division by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def ev(expr, params):
    """Integer expression over params (docs/internals.md): + - * / % ceil_div min max."""
    if isinstance(expr, bool):
        raise ValueError("boolean in an expression")
    if isinstance(expr, int):
        return expr
    if not isinstance(expr, str):
        raise ValueError("bad expression %r" % (expr,))

    def go(n):
        if isinstance(n, ast.Expression):
            return go(n.body)
        if isinstance(n, ast.Constant) and isinstance(n.value, int) and not isinstance(n.value, bool):
            return n.value
        if isinstance(n, ast.Name):
            return params[n.id]
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -go(n.operand)
        if isinstance(n, ast.BinOp):
            a, b = go(n.left), go(n.right)
            if isinstance(n.op, ast.Add):
                return a + b
            if isinstance(n.op, ast.Sub):
                return a - b
            if isinstance(n.op, ast.Mult):
                return a * b
            if isinstance(n.op, ast.Div):
                return _tdiv(a, b)
            if isinstance(n.op, ast.Mod):
                return a - b * _tdiv(a, b)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and len(n.args) == 2:
            a, b = go(n.args[0]), go(n.args[1])
            if n.func.id == "ceil_div":
                if b <= 0:
                    raise ValueError("ceil_div by %d" % b)
                return -((-a) // b)
            if n.func.id == "min":
                return min(a, b)
            if n.func.id == "max":
                return max(a, b)
        raise ValueError("unsupported expression %r" % expr)

    return go(ast.parse(expr, mode="eval"))


def resolve_init(init, params):
    dist = init["dist"]
    if dist == "int":
        return {"dist": "int", "low": ev(init.get("low", 0), params), "high": ev(init["high"], params)}
    out = {"dist": dist}
    if dist == "normal":
        out.update(mean=float(init.get("mean", 0)), std=float(init.get("std", 1)))
    elif dist == "uniform":
        out.update(low=float(init.get("low", -1)), high=float(init.get("high", 1)))
    out["offset"] = float(init.get("offset", 0))
    out["scale"] = 1.0 / math.sqrt(ev(init["fan_in"], params)) if "fan_in" in init else 1.0
    return out


def resolve_side(scratch, plan, params):
    sc = [{"name": s["name"], "dtype": s["dtype"], "count": ev(s["count"], params)} for s in scratch or []]
    steps = []
    for st in plan:
        if "library" in st:
            steps.append({"library": st["library"], "a": st["a"], "b": st["b"], "c": st["c"],
                          "m": ev(st["m"], params), "n": ev(st["n"], params), "k": ev(st["k"], params),
                          "batch": ev(st.get("batch", 1), params), "trans_a": bool(st.get("trans_a", False)),
                          "trans_b": bool(st.get("trans_b", False)), "alpha": float(st.get("alpha", 1.0)),
                          "beta": float(st.get("beta", 0.0))})
            continue
        args = []
        for a in st["args"]:
            if isinstance(a, str):
                args.append({"buffer": a})
            else:
                v = a["value"]
                if a["type"] in INT_TYPES:
                    v = ev(v, params)
                args.append({"type": a["type"], "value": v})
        steps.append({"kernel": st["kernel"], "grid": [ev(g, params) for g in st["grid"]],
                      "block": [ev(b, params) for b in st["block"]], "shared": ev(st.get("shared", 0), params),
                      "args": args})
    return {"scratch": sc, "plan": steps}


def resolve_job(task, sub, job_id, seed, cand_size, ref_size, overrides, fenced_size=0):
    """The GPU JOB of @task and the case's plan @sub; the blob it goes with holds
    the candidate CUBIN (@cand_size bytes), then its fenced build (@fenced_size,
    0: none), then the reference's (@ref_size, 0: none)."""
    shapes = []
    for shape in task["shapes"]:
        params = {k: v for k, v in shape.items() if k != "name"}
        bufs = []
        for b in task["buffers"]:
            count = 1
            for d in b["shape"]:
                count *= ev(d, params)
            o = {"name": b["name"], "dtype": b["dtype"], "count": count, "role": b["role"]}
            if "init" in b:
                o["init"] = resolve_init(b["init"], params)
            if b["role"] != "in":
                tol = b.get("tolerance") or (task.get("tolerance") if b["dtype"][0] in "fb" else None) or {}
                for k in ("atol", "rtol"):
                    if k in tol:
                        o[k] = float(tol[k])
            bufs.append(o)
        s = {"name": shape["name"], "params": params, "buffers": bufs,
             "candidate": resolve_side(sub.get("scratch"), sub["plan"], params),
             "reference": resolve_side(task["reference"].get("scratch"), task["reference"]["plan"], params)}
        for k in ("flops", "bytes"):
            if k in task:
                s[k] = ev(task[k], params)
        shapes.append(s)
    job = {"id": job_id, "seed": seed, "mode": "full", "timing": dict(FAST_TIMING), "deadline_ms": 60000,
           "launch_timeout_ms": 10000, "correctness_trials": task.get("correctness_trials", 3),
           "cubins": {"candidate": {"offset": 0, "size": cand_size}}, "shapes": shapes}
    if fenced_size:
        job["cubins"]["candidate_fenced"] = {"offset": cand_size, "size": fenced_size}
    if ref_size:
        job["cubins"]["reference"] = {"offset": cand_size + fenced_size, "size": ref_size}
    job.update(overrides or {})
    return job


# ------------------------------------------------------------ host oracle --
# A model of worker/gpu/devrng.h (Philox4x32-10, the per-trial seed, the
# distributions) to check the device's generated inputs bit for bit.

M32, M64 = 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF


def mix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def trial_seed(seed, shape, trial):
    return mix64(seed ^ mix64(((shape << 32) | trial | (1 << 63)) & M64))


def philox(c, k0, k1):
    c = list(c)
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k0, p1 & M32, (p0 >> 32) ^ c[3] ^ k1, p0 & M32]
        k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32
    return c


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def model_value(init, dtype, seed, stream, i):
    r = philox([i & M32, i >> 32, stream, 0x4B56], seed & M32, seed >> 32)
    u53 = (((r[0] << 21) | (r[1] >> 11)) & ((1 << 53) - 1)) / 9007199254740992.0
    d = init["dist"]
    if d == "int":
        v = init["low"] + ((r[0] << 32) | r[1]) % (init["high"] - init["low"])
        return v if dtype[0] in "iu" else f32(float(v))
    if d == "uniform":
        v = init["low"] + (init["high"] - init["low"]) * u53
    elif d == "mixed":
        mag = math.exp(2.302585092994045684 * (6.0 * u53 - 3.0))
        v = -mag if r[2] & 1 else mag
    else:
        u1 = (r[0] + 0.5) / 4294967296.0
        u2 = r[1] / 4294967296.0
        v = init["mean"] + init["std"] * math.sqrt(-2.0 * math.log(u1)) * math.cos(6.283185307179586477 * u2)
    v = v * init.get("scale", 1.0) + init.get("offset", 0.0)
    return f32(v)


def oracle_check(task, result):
    """The zero-writing candidate's first mismatches list the generated input as 'want'."""
    seed = int(result.get("seed", "0"), 16)
    shape = task["shapes"][0]
    params = {k: v for k, v in shape.items() if k != "name"}
    xb = task["buffers"][0]
    init = resolve_init(xb["init"], params)
    ts = trial_seed(seed, 0, 0)
    try:
        fm = result["correctness"]["shapes"][0]["buffers"][0]["first_mismatches"]
    except (KeyError, IndexError, TypeError):
        return "no first_mismatches in the result"
    if [m["index"] for m in fm] != list(range(len(fm))) or len(fm) != 8:
        # an exact 0 input would be skipped; that is possible but not with these distributions
        return "first_mismatches indices %s, expected 0..7" % [m["index"] for m in fm]
    for m in fm:
        want = model_value(init, xb["dtype"], ts, 0, m["index"])
        got = m["want"]
        exact = init["dist"] in ("uniform", "int")
        if (exact and got != want) or (not exact and abs(got - want) > 1e-6 * max(1.0, abs(want))):
            return "element %d: device generated %r, host model %r" % (m["index"], got, want)
        if m["got"] != 0:
            return "element %d: got %r, the candidate wrote 0" % (m["index"], m["got"])
    return None


# ---------------------------------------------------------------- workers --

class Worker:
    """A worker process (kevald-gpu here) that speaks frames on its stdin/stdout."""
    serial = 0
    role = "kevald-gpu"

    def __init__(self, binary, extra_args, verbose):
        type(self).serial += 1
        self.id = type(self).serial
        self.verbose = verbose
        self.log = tempfile.NamedTemporaryFile(prefix="%s-%d-" % (self.role, self.id), suffix=".log", delete=False)
        t0 = time.monotonic()
        self.p = subprocess.Popen([binary] + extra_args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.log, env=dict(os.environ, KEVALD_LOG_LEVEL="info"))
        self.buf = b""
        try:
            typ, self.hello, _ = self.read_frame(120)
        except EOFError as e:
            try:
                self.p.wait(5)
            except subprocess.TimeoutExpired:
                pass
            raise EOFError("%s exited (status %r) before its HELLO; log: %s" %
                           (self.role, self.p.returncode, " | ".join(self.log_tail(5)) or "(empty)")) from e
        self.start_ms = (time.monotonic() - t0) * 1e3
        if typ != HELLO:
            raise RuntimeError("expected HELLO, got frame type %r" % typ)

    def read_exact(self, n, deadline):
        fd = self.p.stdout.fileno()
        while len(self.buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no frame from the worker in time")
            r, _, _ = select.select([fd], [], [], left)
            if not r:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise EOFError("the worker closed its output (exit %r)" % self.p.poll())
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_frame(self, timeout):
        deadline = time.monotonic() + timeout
        magic, typ, jl, bl = struct.unpack("<4I", self.read_exact(16, deadline))
        if magic != MAGIC or not 1 <= typ <= 5:
            raise RuntimeError("malformed frame from the worker: magic %#x type %d" % (magic, typ))
        j = json.loads(self.read_exact(jl, deadline)) if jl else None
        blob = self.read_exact(bl, deadline) if bl else b""
        return typ, j, blob

    def send(self, typ, obj, blob=b""):
        js = json.dumps(obj).encode()
        self.p.stdin.write(struct.pack("<4I", MAGIC, typ, len(js), len(blob)) + js + blob)
        self.p.stdin.flush()

    def run(self, job, blob, timeout):
        self.send(JOB, job, blob)
        progress = []
        self.dumps = {}
        while True:
            typ, j, data = self.read_frame(timeout)
            if typ == PROGRESS and "dump" in j:
                d = j["dump"]
                key = (d["shape"], d["buffer"], d["when"])
                buf = self.dumps.setdefault(key, bytearray(d["total"]))
                buf[d["offset"]:d["offset"] + len(data)] = data
                continue
            if typ == PROGRESS:
                progress.append("%s/%s" % (j.get("phase"), j.get("shape")))
                if self.verbose:
                    print("    progress: %s" % json.dumps(j), flush=True)
                continue
            if typ != RESULT:
                raise RuntimeError("unexpected frame type %d during a job" % typ)
            return j, progress

    def alive_after(self, seconds):
        try:
            self.p.wait(seconds)
            return False
        except subprocess.TimeoutExpired:
            return True

    def log_tail(self, n=15):
        try:
            with open(self.log.name, "rb") as f:
                lines = f.read().decode(errors="replace").splitlines()
            return lines[-n:]
        except OSError:
            return []

    def stop(self):
        if self.p.poll() is None:
            try:
                self.send(SHUTDOWN, {})
                self.p.wait(10)
            except (OSError, subprocess.TimeoutExpired, BrokenPipeError):
                self.p.kill()
                self.p.wait()


class CompileError(Exception):
    """A fenced case's source did not give a plain and a fenced CUBIN."""


class CompileWorker(Worker):
    """kevald-compile (docs/internals.md, "Compile worker"), one for the whole
    run: CUDA C++ in, the plain CUBIN and its fenced build out."""
    serial = 0
    role = "kevald-compile"
    jobs = 0

    def compile(self, path, arch=None, options=None, timeout=120):
        """Compile the file @path; (plain CUBIN, fenced CUBIN, RESULT) or CompileError.

        The RESULT's blob is the plain CUBIN, then the fenced one, whose place
        result.fence.offset and .size give; both must be ELF images and fill
        the blob exactly."""
        self.jobs += 1
        job = {"id": self.jobs, "language": "cuda"}
        if arch:
            job["arch"] = arch
        if options:
            job["options"] = list(options)
        with open(path, "rb") as f:
            self.send(JOB, job, f.read())
        typ, res, blob = self.read_frame(timeout)
        if typ != RESULT or not isinstance(res, dict) or res.get("id") != job["id"]:
            # out of step with the worker: the caller stops it
            raise RuntimeError("expected the RESULT of compile job %d, got frame type %r" % (job["id"], typ))
        if not res.get("ok"):
            raise CompileError("%s: %s" % (res.get("error"), " ".join((res.get("log") or "").split())[:300]))
        fence = res.get("fence")
        if not isinstance(fence, dict):
            raise CompileError("no result.fence: this kevald-compile builds no fenced CUBIN")
        if fence.get("error") or "offset" not in fence:
            raise CompileError("no fenced build: %s" % (fence.get("error") or "no fence.offset"))
        off, size = fence["offset"], fence.get("size")
        if not (isinstance(off, int) and isinstance(size, int) and 0 < off and size > 0 and off + size == len(blob)):
            raise CompileError("fence.offset %r + size %r do not split the blob of %d bytes" % (off, size, len(blob)))
        plain, fenced = blob[:off], blob[off:]
        if plain[:4] != b"\x7fELF" or fenced[:4] != b"\x7fELF":
            raise CompileError("the plain or the fenced CUBIN is not an ELF image")
        if not fence.get("sites"):
            raise CompileError("the fenced build checks no site (fence %s)" % json.dumps(fence))
        return plain, fenced, res


def fence_summary(res, plain, fenced):
    f = res["fence"]
    return "fenced build: %d sites, %d unchecked, %.1f ms; plain %d B, fenced %d B (compile %.0f ms, %s)" % (
        f["sites"], f.get("unchecked", 0), f.get("ms", 0), len(plain), len(fenced), res.get("compile_ms", 0),
        res.get("arch"))


class Compiler:
    """The run's compile worker, started at its first use and again if it exits,
    with a cache: each fenced source is compiled once per arch."""

    def __init__(self, binary, verbose):
        self.binary, self.verbose = binary, verbose
        self.worker, self.cache = None, {}
        self.sandbox_failure = None

    def start(self, extra):
        self.worker = None
        try:
            self.worker = CompileWorker(self.binary, extra, self.verbose)
        except Exception as e:  # noqa: BLE001
            print("compile worker %s failed to start: %s: %s" %
                  (" ".join(extra) or "(sandboxed)", type(e).__name__, e), flush=True)
            return False
        h = self.worker.hello
        print("compile worker%s: pid %s, nvrtc %s, arch_default %s" % (" " + " ".join(extra) if extra else "",
              h.get("pid"), h.get("nvrtc"), h.get("arch_default")), flush=True)
        return True

    def compile(self, path, arch, options, extra):
        """(plain, fenced, RESULT) of @path, compiled at most once; CompileError."""
        key = (path, arch, tuple(options or ()))
        if key in self.cache:
            return self.cache[key]
        if not self.binary or not os.path.exists(self.binary):
            raise CompileError("no kevald-compile (%s) for the fenced build" % self.binary)
        if self.worker is None or self.worker.p.poll() is not None:
            if self.sandbox_failure:
                extra = ["--no-sandbox"]
            if not self.start(extra) and not extra:
                # as with kevald-gpu: learn what we can, unconfined, and say so
                self.sandbox_failure = ("the sandboxed kevald-compile did not start (see above); the fenced cases "
                                        "were compiled with --no-sandbox")
                self.start(["--no-sandbox"])
            if self.worker is None:
                raise CompileError("kevald-compile did not start")
        try:
            out = self.worker.compile(path, arch, options)
        except (EOFError, TimeoutError, BrokenPipeError, RuntimeError) as e:
            tail = "; ".join(self.worker.log_tail(5))
            self.stop()
            raise CompileError("kevald-compile: %s: %s (log: %s)" % (type(e).__name__, e, tail))
        self.cache[key] = out
        return out

    def stop(self):
        if self.worker is not None:
            self.worker.stop()
            self.worker = None


def compile_bin_of(args):
    """Where kevald-compile is: --compile-bin, else beside kevald-gpu, else in --build-root."""
    if args.compile_bin:
        return args.compile_bin
    if args.gpu_bin:
        return os.path.join(os.path.dirname(os.path.abspath(args.gpu_bin)), "kevald-compile")
    if args.build_root:
        return os.path.join(args.build_root, "worker", "kevald-compile")
    return None


# ----------------------------------------------------------------- checks --

def lookup(obj, path):
    for part in path.split("."):
        if isinstance(obj, list):
            try:
                obj = obj[int(part)]
            except (ValueError, IndexError):
                return None
        elif isinstance(obj, dict):
            obj = obj.get(part)
        else:
            return None
    return obj


def check_expect(expect, result):
    problems = []
    for path, want in expect.items():
        got = lookup(result, path)
        allowed = want if isinstance(want, list) else [want]
        if got not in allowed:
            problems.append("%s is %r, expected %s" % (path, got, " or ".join(repr(a) for a in allowed)))
    return problems


def detail_of(result):
    e = result.get("error") or {}
    if result.get("verdict") == "correct":
        t = result.get("timing") or {}
        return "speedup %.3g, busy %.1f ms" % (t.get("speedup") or 0, result.get("gpu_busy_ms") or 0)
    bits = [str(e.get(k)) for k in ("kind", "name") if e.get(k)]
    if "surfaced_ms" in e:
        bits.append("surfaced %s ms%s" % (e["surfaced_ms"], " after the limit" if e.get("after_limit") else ""))
    msg = (e.get("message") or "").replace("\n", " ")
    return ("%s: %s" % ("/".join(bits), msg))[:110]


MANIFESTS = ("cases.json", "exploits.json")


def load_cases():
    """Every case of MANIFESTS in order, each with "_file" (its manifest's name)."""
    cases = []
    for fname in MANIFESTS:
        path = os.path.join(HERE, fname)
        if fname != MANIFESTS[0] and not os.path.exists(path):
            continue
        for c in json.load(open(path))["cases"]:
            cases.append(dict(c, _file=fname))
    return cases


def check_score(case, result, results):
    """The "score_at_most" check of @case: (problems, note for the detail column).

    Only a "correct" verdict has a speedup to compare; a twin that did not run
    (--only) leaves the check undone, which the note says."""
    rule = case.get("score_at_most")
    if not rule or not result or result.get("verdict") != "correct":
        return [], None
    twin, factor = rule["twin"], float(rule.get("factor", 1.10))
    got = lookup(result, "timing.speedup")
    if twin not in results:
        return [], "speedup %s; not compared: twin %s did not run" % (_fmt(got), twin)
    want = lookup(results[twin] or {}, "timing.speedup")
    if not isinstance(got, (int, float)) or not isinstance(want, (int, float)) or want <= 0:
        return ["score_at_most: speedup %s against twin %s's %s (verdict %s): nothing to compare" %
                (_fmt(got), twin, _fmt(want), (results[twin] or {}).get("verdict"))], None
    cmp = "speedup %s %s %.2f x twin %s's %s" % (_fmt(got), "<=" if got <= factor * want else ">", factor,
                                                   twin, _fmt(want))
    if got > factor * want:
        return ["score_at_most: " + cmp + ": the trick paid off"], cmp
    return [], cmp


def _fmt(v):
    return "%.3g" % v if isinstance(v, (int, float)) else repr(v)


def check_manifests(args):
    """--check: resolve every case's JOB without a GPU; 0 when all resolve, else 1.

    A fenced case is also compiled by kevald-compile when it is at hand (it
    needs no GPU): its RESULT must carry a fenced build, and the JOB is
    resolved with both CUBINs as direct mode sends it."""
    bad, seen = 0, {}
    compiler, n_fenced, n_compiled = None, 0, 0
    cbin = compile_bin_of(args)
    if cbin and os.path.exists(cbin):
        compiler = Compiler(cbin, args.verbose)
    else:
        print("note: no kevald-compile (%s): the fenced cases are resolved, not compiled" %
              (cbin or "give --compile-bin"))
    extra = ["--no-sandbox"] if args.no_sandbox else []
    for n, case in enumerate(load_cases()):
        name, src = case["name"], case.get("source", case["name"])
        problems, notes = [], []
        try:
            task = json.load(open(os.path.join(HERE, "tasks", case["task"] + ".json")))
            plan = json.load(open(os.path.join(HERE, "cases", src + ".plan.json")))
            if not os.path.exists(os.path.join(HERE, "cases", src + ".cu")):
                problems.append("no cases/%s.cu" % src)
            ref_src = task["reference"].get("source_file")
            if ref_src and not os.path.exists(os.path.join(HERE, "tasks", ref_src)):
                problems.append("no tasks/%s" % ref_src)
            fenced = case.get("fenced", False)
            if not isinstance(fenced, bool):
                problems.append("fenced must be true or false")
            cand_size, fenced_size = 1, 1 if fenced else 0
            if fenced:
                n_fenced += 1
                if compiler is not None:
                    try:
                        plain, fcubin, res = compiler.compile(os.path.join(HERE, "cases", src + ".cu"), None,
                                                              plan.get("options"), extra)
                        cand_size, fenced_size = len(plain), len(fcubin)
                        notes.append(fence_summary(res, plain, fcubin))
                        n_compiled += 1
                    except CompileError as e:
                        problems.append("fenced build: %s" % e)
            job = resolve_job(task, plan, n + 1, args.seed, cand_size, 1 if ref_src else 0, case.get("job"),
                              fenced_size=fenced_size)
            if fenced and (job["cubins"].get("candidate_fenced") != {"offset": cand_size, "size": fenced_size} or
                           job["cubins"].get("reference", {}).get("offset", cand_size + fenced_size) !=
                           cand_size + fenced_size):
                problems.append("the JOB's cubins do not follow the blob: %s" % json.dumps(job["cubins"]))
            if args.fatbins:
                # direct mode compiles a fenced case's source itself: only its reference is prebuilt
                for fb in (["case_%s.fatbin" % src] if not fenced else []) + \
                        (["task_%s.fatbin" % ref_src[:-3]] if ref_src else []):
                    if not os.path.exists(os.path.join(args.fatbins, fb)):
                        problems.append("no %s in %s" % (fb, args.fatbins))
            if name in seen:
                problems.append("a second case of this name")
            if "verdict" not in case.get("expect", {}) or case.get("worker") not in ("stays", "exits"):
                problems.append("expect.verdict and worker (stays/exits) are required")
            if case["_file"] != MANIFESTS[0] and not case.get("class"):
                problems.append("an exploit case needs a class")
            rule = case.get("score_at_most")
            if rule:
                twin = seen.get(rule.get("twin"))
                if twin is None:
                    problems.append("score_at_most: twin %r is not an earlier case" % rule.get("twin"))
                elif twin["task"] != case["task"]:
                    problems.append("score_at_most: twin %s is of task %s" % (twin["name"], twin["task"]))
                if not isinstance(rule.get("factor", 1.10), (int, float)):
                    problems.append("score_at_most: factor must be a number")
            for dep in (case.get("same_worker_as"),):
                if dep and dep not in seen:
                    problems.append("same_worker_as %s: not an earlier case" % dep)
            steps = sum(len(s["candidate"]["plan"]) for s in job["shapes"])
        except Exception as e:  # noqa: BLE001
            problems.append("%s: %s" % (type(e).__name__, e))
            steps = 0
        seen[name] = case
        bad += bool(problems)
        print("%s %-24s %-14s %-18s %d shape sets, %d candidate steps%s" %
              ("ok  " if not problems else "FAIL", name, case["_file"], case["task"],
               len(task.get("shapes", [])) if not problems else 0, steps,
               ("  " + "; ".join(problems)) if problems else ""))
        for note in notes:
            print("     " + note)
    if compiler is not None:
        compiler.stop()
    print("gpu suite: --check: %d of %d cases resolve; %d of %d fenced cases compiled with a fenced build%s" %
          (len(seen) - bad, len(seen), n_compiled, n_fenced, "" if compiler else " (no kevald-compile)"))
    if compiler is not None and compiler.sandbox_failure:
        print("gpu suite: --check: FAIL: " + compiler.sandbox_failure)
        bad += 1
    return 1 if bad else 0


def start_worker(args, extra):
    """Start kevald-gpu and print its HELLO; None when it does not come up."""
    try:
        worker = Worker(args.gpu_bin, extra, args.verbose)
    except Exception as e:  # noqa: BLE001
        print("worker %s failed to start: %s: %s" % (" ".join(extra) or "(sandboxed)", type(e).__name__, e))
        return None
    h = worker.hello
    print("worker %d%s: pid %s, %s, cc %s (%s), %s SMs, %s bytes, driver %s, cuda %s, cublas %s, start %.0f ms, ok %s" %
          (worker.id, " " + " ".join(extra) if extra else "", h.get("pid"), h.get("name"), h.get("cc"), h.get("arch"),
           h.get("sms"), h.get("memory_bytes"), h.get("driver"), h.get("cuda_driver"), h.get("cublas"),
           worker.start_ms, h.get("ok")), flush=True)
    print("  layers: %s" % json.dumps(h.get("layers"), sort_keys=True), flush=True)
    print("  limits: max_shared_optin %s, l2 %s, worker %s" % (h.get("max_shared_optin"), h.get("l2_bytes"),
                                                              json.dumps(h.get("worker"))), flush=True)
    if not h.get("ok", True):
        print("  HELLO error: %s" % json.dumps(h.get("error")), flush=True)
        print("\n".join("  | " + l for l in worker.log_tail(30)), flush=True)
        worker.p.wait(10)
        return None
    return worker


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu-bin", help="kevald-gpu (direct mode)")
    ap.add_argument("--compile-bin", help="kevald-compile, for the fenced cases of direct mode and --check "
                    "(default: beside kevald-gpu, or in --build-root)")
    ap.add_argument("--fatbins", help="folder with the prebuilt case_*.fatbin and task_*.fatbin")
    ap.add_argument("--build-root", help="a meson build folder: takes worker/kevald-gpu and tests/gpu/*.fatbin from it")
    ap.add_argument("--kevald", help="run each case through `kevald eval` instead (eval mode)")
    ap.add_argument("--libexec", help="for eval mode: where kevald-compile and kevald-gpu are")
    ap.add_argument("--no-sandbox", action="store_true", help="start workers without their sandbox")
    ap.add_argument("--only", action="append", help="run only these cases (repeatable)")
    ap.add_argument("--seed", default="5eed0fca5e5eed01", help="job seed in direct mode (16 hex digits)")
    ap.add_argument("--out", help="write every result JSON to this file")
    ap.add_argument("-v", "--verbose", action="store_true", help="print PROGRESS frames and every result")
    ap.add_argument("--check", action="store_true", help="resolve every case without a GPU, then exit")
    args = ap.parse_args()

    if args.build_root:
        args.fatbins = args.fatbins or os.path.join(args.build_root, "tests", "gpu")
    if args.check:
        return check_manifests(args)
    ok, why = gpu_present()
    if not ok:
        print("gpu suite: skipped: %s" % why)
        return 77
    if args.build_root:
        args.gpu_bin = args.gpu_bin or os.path.join(args.build_root, "worker", "kevald-gpu")
    cases = [c for c in load_cases() if not args.only or c["name"] in args.only]
    eval_mode = bool(args.kevald)
    if not eval_mode and not (args.gpu_bin and args.fatbins):
        ap.error("direct mode needs --gpu-bin and --fatbins (or --build-root); eval mode needs --kevald")

    rows, all_results, suite_of, failed = [], {}, {}, 0
    sandbox_failure = None
    worker, worker_of = None, {}
    extra = ["--no-sandbox"] if args.no_sandbox else []
    compiler = None if eval_mode else Compiler(compile_bin_of(args), args.verbose)
    for n, case in enumerate(cases):
        name, src = case["name"], case.get("source", case["name"])
        fenced = bool(case.get("fenced"))
        task_path = os.path.join(HERE, "tasks", case["task"] + ".json")
        task = json.load(open(task_path))
        plan_path = os.path.join(HERE, "cases", src + ".plan.json")
        plan = json.load(open(plan_path))
        t0 = time.monotonic()
        result, problems, progress = None, [], []
        try:
            if eval_mode:
                cmd = [args.kevald, "eval", "--task", task_path, "--source", os.path.join(HERE, "cases", src + ".cu"),
                       "--plan", plan_path, "--timing", json.dumps(FAST_TIMING)]
                if args.libexec:
                    cmd += ["--libexec", args.libexec]
                if args.no_sandbox:
                    cmd += ["--no-sandbox"]
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
                try:
                    result = json.loads(p.stdout)
                except ValueError:
                    if p.returncode == 64 and "invalid submission at /" in p.stderr:
                        # Refused by validation before it is queued (422 in the
                        # server): the envelope breaks the contract.
                        msg = p.stderr.strip().splitlines()[-1]
                        result = {"verdict": "rejected", "error": {"kind": "plan", "message": msg}}
                    else:
                        problems.append("kevald eval exit %d, no JSON; stderr: %s" % (p.returncode, p.stderr[-400:]))
                if isinstance(result, dict) and isinstance(result.get("result"), dict):
                    result = result["result"]
            else:
                if worker is None or worker.p.poll() is not None:
                    worker = start_worker(args, extra)
                    if worker is None and not extra:
                        # Learn as much as possible from one GPU run: go on unconfined.
                        sandbox_failure = "the sandboxed worker did not start (see above); the cases ran with --no-sandbox"
                        extra = ["--no-sandbox"]
                        worker = start_worker(args, extra)
                    if worker is None:
                        return 1
                fcubin = b""
                if fenced:
                    # NVRTC's CUBIN and its fenced build, for this GPU's arch
                    cand, fcubin, cres = compiler.compile(os.path.join(HERE, "cases", src + ".cu"),
                                                          worker.hello.get("arch"), plan.get("options"), extra)
                    if args.verbose:
                        print("     " + fence_summary(cres, cand, fcubin), flush=True)
                else:
                    cand = open(os.path.join(args.fatbins, "case_%s.fatbin" % src), "rb").read()
                ref_src = task["reference"].get("source_file")
                ref = open(os.path.join(args.fatbins, "task_%s.fatbin" % ref_src[:-3]), "rb").read() if ref_src else b""
                job = resolve_job(task, plan, n + 1, args.seed, len(cand), len(ref), case.get("job"),
                                  fenced_size=len(fcubin))
                blob = cand + fcubin + ref
                worker_of[name] = worker.id
                result, progress = worker.run(job, blob, job["deadline_ms"] / 1000 + 30)
                if case.get("worker") == "exits":
                    if worker.alive_after(10):
                        problems.append("the worker did not exit after this case")
                        worker.p.kill()
                        worker.p.wait()
                    else:
                        rc = worker.p.returncode
                        if rc not in (3, 4):
                            problems.append("worker exit status %r, expected 3 (sticky) or 4 (timeout)" % rc)
                elif worker.p.poll() is not None or not worker.alive_after(0.3):
                    problems.append("the worker exited (status %r) but should have survived" % worker.p.returncode)
                if case.get("same_worker_as") and worker_of.get(case["same_worker_as"]) != worker.id:
                    problems.append("not on the same worker as %s (a restart in between)" % case["same_worker_as"])
        except CompileError as e:  # the case's own failure; the GPU worker is fine
            problems.append("fenced build: %s" % e)
        except Exception as e:  # noqa: BLE001 - one case's failure must not end the suite
            problems.append("%s: %s" % (type(e).__name__, e))
            if worker is not None:
                print("\n".join("     | " + l for l in worker.log_tail(20)), flush=True)
                if worker.p.poll() is None:
                    worker.p.kill()
                    worker.p.wait()
            if not eval_mode and not extra and isinstance(e, (EOFError, TimeoutError, BrokenPipeError)):
                # The worker died or hung: would it have passed without its sandbox?
                try:
                    w2 = start_worker(args, ["--no-sandbox"])
                    if w2 is not None:
                        r2, _ = w2.run(job, blob, job["deadline_ms"] / 1000 + 30)
                        p2 = check_expect(case["expect"], r2)
                        problems.append("without the sandbox: %s" % ("passes" if not p2 else "; ".join(p2)))
                        w2.stop()
                except Exception as e2:  # noqa: BLE001
                    problems.append("without the sandbox also %s: %s" % (type(e2).__name__, e2))
        ms = (time.monotonic() - t0) * 1e3
        if result is not None:
            # "expect_fenced": what a case gets when its correctness phase ran a fenced build (eval
            # mode, or a "fenced" case in direct mode), where that differs from the plain build's
            expect = case["expect_fenced"] if "expect_fenced" in case and (eval_mode or case.get("fenced")) \
                else case["expect"]
            if not eval_mode and not fenced:
                # Direct mode loads nvcc fatbins, whose __device__ variables the
                # worker's ELF reader cannot list (it reads NVRTC's CUBINs, what
                # production sends, and what a fenced case sends here too);
                # eval mode checks the cleanup counters.
                expect = {k: v for k, v in expect.items() if not k.startswith("cleanup.")}
            problems += check_expect(expect, result)
            if fenced and "correctness.fenced" not in expect:
                # the case is about the fenced build: it must have run
                problems += check_expect({"correctness.fenced": True}, result)
            problems += check_expect(case.get("checks", {}), result)
            if case.get("oracle"):
                o = oracle_check(task, result)
                if o:
                    problems.append("oracle: " + o)
            if result.get("verdict") == "forged":
                problems.append("a forged frame from device printf reached the protocol stream")
        score_problems, score_note = check_score(case, result, all_results)
        problems += score_problems
        all_results[name] = result
        if result is not None and (case.get("class") or case.get("score_at_most")):
            # kept for --out (a copy: all_results feeds later twin comparisons as is)
            suite_of[name] = {"file": case["_file"], "class": case.get("class"),
                              "score_at_most": case.get("score_at_most"), "score": score_note}
        exp = (case["expect_fenced"] if "expect_fenced" in case and (eval_mode or case.get("fenced"))
               else case["expect"])["verdict"]
        exp = "|".join(exp) if isinstance(exp, list) else exp
        got = result.get("verdict") if result else "(none)"
        detail = "; ".join(problems) if problems else (detail_of(result) if result else "")
        if score_note and not problems:
            detail = score_note
        rows.append((name, exp, got, detail, ms, not problems))
        status = "ok  " if not problems else "FAIL"
        print("%s %-22s %-24s %-15s %8.0f ms  %s" % (status, name, exp, got, ms, detail), flush=True)
        if case.get("class"):
            print("     class: %s" % case["class"], flush=True)
        failed += bool(problems)
        if problems or args.verbose:
            print("     result: %s" % json.dumps(result, sort_keys=True), flush=True)
            if problems and progress:
                print("     progress: %s" % ", ".join(progress))
            if problems and worker is not None and not eval_mode:
                print("\n".join("     | " + l for l in worker.log_tail()), flush=True)
    if worker is not None:
        worker.stop()
    if compiler is not None:
        compiler.stop()

    print()
    print("| case | expected | got | detail | ms |")
    print("|---|---|---|---|---|")
    for name, exp, got, detail, ms, ok in rows:
        print("| %s%s | %s | %s | %s | %.0f |" % ("" if ok else "**FAIL** ", name, exp, got, detail.replace("|", "/"), ms))
    print()
    print("gpu suite: %d of %d cases passed" % (len(rows) - failed, len(rows)))
    if sandbox_failure:
        print("gpu suite: FAIL: " + sandbox_failure)
        failed += 1
    if compiler is not None and compiler.sandbox_failure:
        print("gpu suite: FAIL: " + compiler.sandbox_failure)
        failed += 1
    if args.out:
        out = {k: (dict(v, suite=suite_of[k]) if k in suite_of and isinstance(v, dict) else v)
               for k, v in all_results.items()}
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1, sort_keys=True)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
