#!/usr/bin/env python3
"""
Run the KernelBench ModelNew samples (tests/kernelbench/samples) on a GPU
host and compare each verdict with the one its manifest expects.

kevald mode (--url): submits every sample through the Python client
(clients/python/kevald) as a `language: "kernelbench"` submission to a
running kevald server that has torch workers, waits for all of them and
prints

    sample | task | expected | got | match | detail

`got` is the stored verdict, or "suspicious" for a correct verdict whose
result is flagged suspicious (reward_fields / timing / roofline). A sample
matches when `got` is its `expected` or one of its `accept`, and, for a
runtime_error with an `error_name`, when the result's error names that CUDA
error (CUDA_ERROR_ILLEGAL_ADDRESS and cudaErrorIllegalAddress are the same
name; PyTorch's message for it counts too). A sample with `timing_check:
side_stream` that is judged correct must also show a shape set timed to a
device-wide synchronize (timing.shapes[].clock "device"), so that work left
on a side stream was counted. Exit 1 on any mismatch.

KernelBench mode (--kernelbench): evaluates the same samples the way
KernelBench's own src/eval.py eval_kernel_against_ref() does, in-process
(one child process per sample, as KernelBench's batch evaluation does, so a
fault or a hang ends only that sample): the task's Model and the ModelNew
built from the same seed, 5 correctness trials on inputs seeded from
torch.manual_seed(42), torch.allclose with atol = rtol = 1e-4 (fp32;
--kb-tol 1e-2 for the tolerance of the published KernelBench v0.1
results), then 3 warm-ups and 100 runs on one fixed input, each timed with
CUDA events on the default stream; the Model is timed the same way for the
speedup. The Model comes from tasks/kernelbench (index.json and the
modules), at KernelBench's own constants unless --kb-shape names another
shape set. Its verdicts: correct, incorrect, compile_error, runtime_error,
timeout (the child ran past --kb-timeout), crash (an exception that
KernelBench's evaluation does not catch, or a child that died). With --url
as well, both columns are printed side by side; the KernelBench column never
changes the exit status (it is the independent comparison issue 29 asks
for; the manifest's `kernelbench` field is the predicted value).

    run.py --url http://127.0.0.1:8080 [--token T]
    run.py --kernelbench [--kb-shape small]
    run.py --url URL --kernelbench --out results.json --markdown
    run.py ... --only cuda_relu --only triton_softmax

Exit status: 0 all matched, 1 a mismatch (kevald mode), 2 bad usage or no
server, 77 with --kernelbench where there is no torch or no GPU.
"""
import argparse
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
SAMPLES_DIR = os.path.join(ROOT, "tests", "kernelbench", "samples")
MANIFEST = os.path.join(SAMPLES_DIR, "manifest.json")
TASKS_DIR = os.path.join(ROOT, "tasks", "kernelbench")
CHILD_TAG = "KBRESULT "

# PyTorch's wording for the CUDA errors the manifest names (cudaGetErrorString).
CUDA_ERROR_TEXT = {
    "CUDA_ERROR_ILLEGAL_ADDRESS": "an illegal memory access was encountered",
    "CUDA_ERROR_MISALIGNED_ADDRESS": "misaligned address",
    "CUDA_ERROR_ASSERT": "device-side assert triggered",
    "CUDA_ERROR_LAUNCH_FAILED": "unspecified launch failure",
    "CUDA_ERROR_ILLEGAL_INSTRUCTION": "an illegal instruction was encountered",
}


def load_manifest(only):
    with open(MANIFEST, encoding="utf-8") as f:
        samples = json.load(f)["samples"]
    if only:
        known = {s["name"] for s in samples}
        unknown = [n for n in only if n not in known]
        if unknown:
            raise SystemExit(f"run.py: unknown sample(s): {', '.join(unknown)}")
        samples = [s for s in samples if s["name"] in only]
    return samples


def sample_path(entry):
    return os.path.join(SAMPLES_DIR, entry["name"] + ".py")


def read_source(entry):
    with open(sample_path(entry), encoding="utf-8") as f:
        return f.read()


def norm(s):
    return re.sub(r"[^a-z0-9]", "", s.lower())


# ---------------------------------------------------------------- kevald mode

def classify(sub):
    """The manifest-style verdict of a finished kevald.Submission."""
    v = sub.verdict or sub.state or "none"
    if v == "correct" and sub.suspicious:
        return "suspicious"
    return v


def error_of(sub):
    raw = (sub.raw or {}).get("result") or {}
    err = raw.get("error")
    return err if err is not None else None


def names_error(err, name):
    """Whether the result's error names the CUDA error @name (either spelling, or PyTorch's message)."""
    if err is None:
        return False
    text = json.dumps(err).lower()
    return norm(name) in norm(text) or CUDA_ERROR_TEXT.get(name, "\0") in text


def detail_of(sub, got):
    err = error_of(sub)
    if isinstance(err, dict):
        parts = [str(err.get(k)) for k in ("kind", "name", "phase", "shape") if err.get(k)]
        msg = err.get("message")
        if msg:
            parts.append(" ".join(str(msg).split())[:80])
        return " ".join(parts)
    if err:
        return " ".join(str(err).split())[:100]
    if got in ("correct", "suspicious"):
        sp = sub.speedup if isinstance(sub.speedup, (int, float)) else (sub.result.speedup if sub.result else None)
        text = f"speedup {sp:.3g}" if isinstance(sp, (int, float)) else ""
        return text + (" (device clock)" if device_clock(sub.raw) else "")
    return ""


def device_clock(raw):
    """Whether a result timed some shape set to a device-wide synchronize (timing.shapes[].clock)."""
    timing = ((raw or {}).get("result") or {}).get("timing") or {}
    shapes = timing.get("shapes") if isinstance(timing, dict) else None
    return any(isinstance(s, dict) and s.get("clock") == "device" for s in shapes or [])


def judge(entry, got, err, raw=None):
    """'yes', or 'no' with the reason."""
    ok = got == entry["expected"] or got in entry.get("accept", [])
    if not ok:
        return "no"
    if got == "runtime_error" and entry.get("error_name") and not names_error(err, entry["error_name"]):
        return "no (error name)"
    if got == "correct" and entry.get("timing_check") == "side_stream" and not device_clock(raw):
        return "no (side-stream work not timed)"
    return "yes"


def run_kevald(args, samples):
    sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
    import kevald

    run_id = args.run_id or time.strftime("kb-samples-%Y%m%dT%H%M%S")
    out = {}
    with kevald.Client(args.url, token=args.token, timeout=60.0) as client:
        ids = {}
        for i, e in enumerate(samples):
            body = {"task": e["task"], "language": "kernelbench", "source": read_source(e), "mode": "full",
                    "tags": {"run_id": run_id, "sample": i}}
            try:
                ids[e["name"]] = client.submit(body)
            except kevald.KevaldConnectionError as exc:
                print(f"run.py: no kevald server at {args.url}: {exc}", file=sys.stderr)
                raise SystemExit(2)
            except kevald.KevaldError as exc:
                out[e["name"]] = {"got": f"http_{exc.status}", "detail": f"{exc.pointer or ''} {exc.detail or ''}",
                                  "raw": getattr(exc, "body", None)}
        order = [e["name"] for e in samples if e["name"] in ids]
        subs = client.wait_all([ids[n] for n in order], timeout=args.timeout, progress=args.progress)
        for name, sub in zip(order, subs):
            got = classify(sub) if sub.done else f"not done ({sub.state})"
            out[name] = {"id": sub.id, "got": got, "detail": detail_of(sub, got), "error": error_of(sub),
                         "raw": sub.raw}
    for e in samples:
        r = out[e["name"]]
        r["match"] = judge(e, r["got"], r.get("error"), r.get("raw"))
    return out


# ----------------------------------------------------------- KernelBench mode

def kb_task_entry(task, tasks_dir):
    with open(os.path.join(tasks_dir, "index.json"), encoding="utf-8") as f:
        for t in json.load(f)["tasks"]:
            if t["name"] == task:
                return t
    raise KeyError(task)


def kb_prebuild(args, samples, tmp):
    """KernelBench's build_compile_cache() step of its batch evaluation: import
    every load_inline sample once, --kb-build-jobs at a time, each with its own
    TORCH_EXTENSIONS_DIR, so that the evaluation finds the extension built
    (torch reuses a build whose sources and flags are unchanged)."""
    from concurrent.futures import ThreadPoolExecutor

    code = ("import importlib.util, sys\n"
            "spec = importlib.util.spec_from_file_location('temp_module', sys.argv[1])\n"
            "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n")

    def one(e):
        build = os.path.join(tmp, e["name"])
        os.makedirs(build, exist_ok=True)
        env = dict(os.environ, TORCH_EXTENSIONS_DIR=build)
        try:
            subprocess.run([sys.executable, "-c", code, sample_path(e)], env=env, timeout=args.kb_build_timeout,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        except subprocess.TimeoutExpired:
            pass  # the evaluation tries again and reports it

    todo = [e for e in samples if e["kind"] == "cuda"]
    if todo and args.kb_build_jobs > 0:
        t0 = time.monotonic()
        with ThreadPoolExecutor(max_workers=args.kb_build_jobs) as ex:
            list(ex.map(one, todo))
        print(f"[kernelbench] built {len(todo)} load_inline samples in {time.monotonic() - t0:.1f} s, "
              f"{args.kb_build_jobs} at a time", file=sys.stderr, flush=True)


def run_kernelbench(args, samples):
    """{sample name: KernelBench-style result}, one child process per sample."""
    results = {}
    with tempfile.TemporaryDirectory(prefix="kb-eval-") as tmp:
        kb_prebuild(args, samples, tmp)
        for e in samples:
            cmd = [sys.executable, os.path.abspath(__file__), "--kb-child", e["name"], "--kb-tol", str(args.kb_tol),
                   "--kb-trials", str(args.kb_trials), "--kb-perf", str(args.kb_perf), "--tasks-dir", args.tasks_dir,
                   "--device", str(args.device), "--kb-build", os.path.join(tmp, e["name"])]
            if args.kb_shape:
                cmd += ["--kb-shape", args.kb_shape]
            if args.kb_cpu:
                cmd += ["--kb-cpu"]
            t0 = time.monotonic()
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    start_new_session=True)
            try:
                stdout, stderr = proc.communicate(timeout=args.kb_timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                results[e["name"]] = {"verdict": "timeout", "detail": f"past {args.kb_timeout} s"}
                continue
            res = None
            for line in stdout.splitlines():
                if line.startswith(CHILD_TAG):
                    res = json.loads(line[len(CHILD_TAG):])
            if res is None:
                tail = " ".join((stderr or "").split())[-160:]
                res = {"verdict": "crash", "detail": f"child exit {proc.returncode}: {tail}"}
            res["wall_s"] = round(time.monotonic() - t0, 1)
            results[e["name"]] = res
            # one line per sample as it ends, flushed: a run cut short still says what it saw
            print(f"[kernelbench] {e['name']}: {res if args.verbose else res.get('verdict')} ({res['wall_s']} s)",
                  file=sys.stderr, flush=True)
    return results


def kb_child(args):
    """One sample, KernelBench's eval_kernel_against_ref() steps; prints one CHILD_TAG line."""
    def emit(**res):
        print(CHILD_TAG + json.dumps(res), flush=True)
        return 0

    def ename(exc):
        return f"{exc.__class__.__module__}.{exc.__class__.__name__}"

    def short(exc):
        return " ".join(str(exc).split())[:200]

    entry = next(e for e in load_manifest([args.kb_child]))
    try:
        import torch
    except ImportError:
        return emit(verdict="skipped", detail="no torch")
    if args.kb_cpu:
        # Test hook (tests/gpu/kernelbench/test_kb_cpu.py): the same steps on the CPU, for samples
        # that need no GPU; host clocks instead of CUDA events.
        device = torch.device("cpu")

        def sync():
            pass
    else:
        if not torch.cuda.is_available():
            return emit(verdict="skipped", detail="no CUDA device")
        device = torch.device("cuda", args.device)
        torch.cuda.set_device(device)

        def sync():
            torch.cuda.synchronize(device=device)
    task = kb_task_entry(entry["task"], args.tasks_dir)
    os.makedirs(args.kb_build, exist_ok=True)
    os.environ["TORCH_EXTENSIONS_DIR"] = args.kb_build
    os.environ["TORCH_USE_CUDA_DSA"] = "1"

    def set_seed(seed):
        torch.manual_seed(seed)
        torch.cuda.manual_seed(seed)

    def to_dev(x):
        return x.to(dtype=torch.float32).to(device=device) if isinstance(x, torch.Tensor) else x

    ref_path = os.path.join(args.tasks_dir, task["module"])
    ctx = {"__name__": "kb_reference"}
    with open(ref_path, encoding="utf-8") as f:
        exec(compile(f.read(), ref_path, "exec"), ctx)
    if args.kb_shape:
        shape = next(s for s in task["shapes"] if s["name"] == args.kb_shape)
        ctx.update(shape["constants"])
    Model, get_init_inputs, get_inputs = ctx["Model"], ctx["get_init_inputs"], ctx["get_inputs"]
    set_seed(42)
    init_inputs = [to_dev(x) for x in get_init_inputs()]
    with torch.no_grad():
        set_seed(42)
        original = Model(*init_inputs)

    # KernelBench imports Triton (and other DSL) candidates from a temporary file; that path works for all.
    try:
        spec = importlib.util.spec_from_file_location("temp_module", sample_path(entry))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        ModelNew = getattr(module, "ModelNew")
        sync()
    except Exception as exc:  # KernelBench: compiled=False
        return emit(verdict="compile_error", detail=f"{ename(exc)}: {short(exc)}")

    try:
        with torch.no_grad():
            set_seed(42)
            custom = ModelNew(*init_inputs)
            assert hasattr(custom, "forward")
            original = original.to(device=device, dtype=torch.float32)
            custom = custom.to(device=device, dtype=torch.float32)
            sync()
    except RuntimeError as exc:
        return emit(verdict="runtime_error", detail=f"{ename(exc)}: {short(exc)}")
    except Exception as exc:  # not caught by KernelBench's evaluation
        return emit(verdict="crash", detail=f"{ename(exc)}: {short(exc)}")

    torch.manual_seed(42)
    seeds = [torch.randint(0, 2**32 - 1, (1,)).item() for _ in range(args.kb_trials)]
    passed = 0
    max_diff = []
    try:
        with torch.no_grad():
            for seed in seeds:
                set_seed(seed)
                inputs = [to_dev(x) for x in get_inputs()]
                set_seed(seed)
                model = original.to(device=device, dtype=torch.float32)
                set_seed(seed)
                model_new = custom.to(device=device, dtype=torch.float32)
                output = model(*inputs)
                sync()
                try:
                    output_new = model_new(*inputs)
                    sync()
                    if output.shape != output_new.shape:
                        return emit(verdict="incorrect",
                                    detail=f"shape {tuple(output_new.shape)} != {tuple(output.shape)}")
                    if torch.allclose(output, output_new, atol=args.kb_tol, rtol=args.kb_tol):
                        passed += 1
                    else:
                        max_diff.append(float(torch.max(torch.abs(output - output_new)).item()))
                except Exception as exc:
                    return emit(verdict="runtime_error", detail=f"{ename(exc)}: {short(exc)}")
                del inputs, output, output_new
    except Exception as exc:
        return emit(verdict="runtime_error", detail=f"{ename(exc)}: {short(exc)}")
    if passed != len(seeds):
        return emit(verdict="incorrect", detail=f"{passed}/{len(seeds)} trials, max diff {max(max_diff):.3g}")

    def time_events(fn, inputs):
        for _ in range(3):
            fn(*inputs)
            sync()
        times = []
        for _ in range(args.kb_perf):
            if args.kb_cpu:
                t0 = time.perf_counter()
                fn(*inputs)
                times.append((time.perf_counter() - t0) * 1000.0)
                continue
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn(*inputs)
            end.record()
            torch.cuda.synchronize(device=device)
            times.append(start.elapsed_time(end))
        return sum(times) / len(times)

    try:
        sync()
        set_seed(42)
        inputs = [to_dev(x) for x in get_inputs()]
        new_ms = time_events(custom, inputs)
        ref_ms = time_events(original, inputs)
    except Exception as exc:  # KernelBench keeps the correctness and notes the error
        return emit(verdict="correct", detail=f"timing failed: {ename(exc)}: {short(exc)}")
    speedup = ref_ms / new_ms if new_ms > 0 else float("inf")
    return emit(verdict="correct", ms=round(new_ms, 4), ref_ms=round(ref_ms, 4),
                detail=f"{new_ms:.3g} ms, ref {ref_ms:.3g} ms, speedup {speedup:.3g}")


# ------------------------------------------------------------------- output

def print_table(samples, kevald_res, kb_res, markdown=False):
    head = ["sample", "task", "expected"]
    if kevald_res is not None:
        head += ["got", "match"]
    if kb_res is not None:
        head += ["kernelbench", "kb predicted"]
    head += ["detail"]
    rows = []
    for e in samples:
        row = [e["name"], e["task"], e["expected"] + ("|" + "|".join(e["accept"]) if e.get("accept") else "")]
        detail = []
        if kevald_res is not None:
            r = kevald_res[e["name"]]
            row += [r["got"], r["match"]]
            if r.get("detail"):
                detail.append(r["detail"])
        if kb_res is not None:
            k = kb_res[e["name"]]
            row += [k["verdict"], e["kernelbench"]]
            if k.get("detail"):
                detail.append("kb: " + k["detail"])
        row.append("; ".join(detail))
        rows.append(row)
    if markdown:
        for r in [head, ["---"] * len(head)] + rows:
            print("| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |")
        return
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head) - 1)]
    for r in [head] + rows:
        print(" | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " | " + str(r[-1]))


def main(argv=None):
    ap = argparse.ArgumentParser(description="Run the KernelBench ModelNew samples and compare verdicts.")
    ap.add_argument("--url", help="a running kevald server with torch workers")
    ap.add_argument("--token", default=os.environ.get("KEVALD_TOKEN"))
    ap.add_argument("--run-id", help="tags.run_id of the submissions (default kb-samples-<time>)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait for all kevald results")
    ap.add_argument("--progress", action="store_true")
    ap.add_argument("--kernelbench", action="store_true", help="also evaluate the way KernelBench does")
    ap.add_argument("--kb-tol", type=float, default=1e-4, help="atol = rtol (KernelBench fp32: 1e-4; v0.1: 1e-2)")
    ap.add_argument("--kb-trials", type=int, default=5, help="correctness trials (eval_from_generations: 5)")
    ap.add_argument("--kb-perf", type=int, default=100, help="timed runs")
    ap.add_argument("--kb-timeout", type=float, default=300.0, help="seconds per sample before it counts as timeout")
    ap.add_argument("--kb-build-timeout", type=float, default=300.0,
                    help="seconds per load_inline build before the evaluation (nvcc took 57 s a build on the H200 "
                         "host with 16 at once; the evaluation builds again whatever ran past it)")
    ap.add_argument("--kb-shape", help="a shape set of tasks/kernelbench/index.json (default: the module's constants)")
    ap.add_argument("--kb-build-jobs", type=int, default=os.cpu_count() or 1,
                    help="parallel load_inline builds before the evaluation, as KernelBench's batch evaluation "
                         "does (0: build in each evaluation)")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown (for BENCHMARKS.md)")
    ap.add_argument("--tasks-dir", default=TASKS_DIR)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--only", action="append", default=[], help="run only this sample (repeatable)")
    ap.add_argument("--out", help="write every result here as JSON")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--kb-cpu", action="store_true",
                    help="test hook: the KernelBench-style steps on the CPU (for samples that need no GPU)")
    ap.add_argument("--kb-child", help=argparse.SUPPRESS)
    ap.add_argument("--kb-build", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.kb_child:
        return kb_child(args)
    if not args.url and not args.kernelbench:
        ap.error("give --url (kevald), --kernelbench, or both")
    samples = load_manifest(args.only)

    kb_res = None
    if args.kernelbench:
        if not os.path.exists(os.path.join(args.tasks_dir, "index.json")):
            print(f"run.py: no {args.tasks_dir}/index.json (the KernelBench task family)", file=sys.stderr)
            return 2
        t0 = time.monotonic()
        kb_res = run_kernelbench(args, samples)
        kb_wall = time.monotonic() - t0
        if all(r["verdict"] == "skipped" for r in kb_res.values()):
            print("run.py: KernelBench mode needs torch and a CUDA device: " +
                  next(iter(kb_res.values()))["detail"], file=sys.stderr)
            if not args.url:
                return 77
    t0 = time.monotonic()
    kevald_res = run_kevald(args, samples) if args.url else None
    kevald_wall = time.monotonic() - t0

    print_table(samples, kevald_res, kb_res, args.markdown)
    mismatches = [n for n, r in (kevald_res or {}).items() if r["match"] != "yes"]
    print()
    if kevald_res is not None:
        print(f"{len(samples) - len(mismatches)}/{len(samples)} samples got their expected verdict"
              + (f"; mismatches: {', '.join(mismatches)}" if mismatches else ""))
        print(f"kevald: {len(samples)} samples in {kevald_wall:.1f} s, submit to last result "
              f"({60.0 * len(samples) / max(kevald_wall, 1e-9):.1f} per minute)")
    if kb_res is not None:
        agree = [e["name"] for e in samples if kb_res[e["name"]]["verdict"] == e["kernelbench"]]
        print(f"KernelBench-style evaluation: {len(agree)}/{len(samples)} as predicted in the manifest; "
              f"{len(samples)} samples in {kb_wall:.1f} s ({60.0 * len(samples) / max(kb_wall, 1e-9):.1f} per minute, "
              f"builds {args.kb_build_jobs} at a time, then one sample at a time on the GPU)")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"kevald": kevald_res, "kernelbench": kb_res, "samples": samples,
                       "kevald_wall_s": kevald_wall if kevald_res is not None else None,
                       "kernelbench_wall_s": kb_wall if kb_res is not None else None}, f, indent=1, default=str)
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
