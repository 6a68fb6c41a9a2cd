#!/usr/bin/python3
"""check - run every KernelBench task module on the CPU and compare it with its C task.

Usage: /usr/bin/python3 tools/kernelbench/check.py [--shapes tiny[,small]] [--only SUBSTR]
                                                  [--c-ref numpy|driver|none]

For every task of tasks/kernelbench/index.json and shape set (tiny by default):
imports the module, sets the shape set's constants the way the worker does
(module.__dict__.update(constants)), builds Model(*get_init_inputs()), runs
forward(*get_inputs()) on the CPU and checks that the output is a tensor of the
expected dtype with finite values, and that a second forward gives the same
bits. fp16 inputs (problem 97) run in fp32: torch 1.13 has no CPU half matmul.

Where a C task exists (c_task), the module is also fed the C task's own
inputs, drawn as tools/tasks/cpu_check.py draws them (same generator, same
seed), with the C task's weights loaded into the Model's layers (w/cb ->
self.conv, W/b -> self.gemm, other names -> the parameter of that name), and
its output is compared with the C task's reference output under the C task's
tolerance, and its shape with the C task's output buffer:
  --c-ref numpy   the C task's numpy implementation (NP_OPS of cpu_check.py,
                  np2 of l2_cpu_check.py; cpu_check.py checks them against the
                  .cu references), fast: the default and what the test runs;
  --c-ref driver  the .cu reference itself, compiled with g++ against
                  tools/tasks/cpu/cuda_cpu_shim.h and run (cpu_check.run_one;
                  it also prints the .cu-vs-numpy result), minutes;
  --c-ref none    skip the comparison.

Exit status: 0 all good, 1 a failure, 77 no torch in this interpreter (nor in
/usr/bin/python3), the GPU tests' "skip".
"""
import importlib.util
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
KB = os.environ.get("KEVALD_KB_DIR") or os.path.join(ROOT, "tasks", "kernelbench")  # a test points it elsewhere
INDEX = os.path.join(KB, "index.json")
SYSPY = "/usr/bin/python3"

try:
    import numpy as np
    import torch
except ImportError:
    if os.path.realpath(sys.executable) != os.path.realpath(SYSPY) and os.path.exists(SYSPY) \
            and not os.environ.get("KEVALD_KB_REEXEC"):
        os.environ["KEVALD_KB_REEXEC"] = "1"
        os.execv(SYSPY, [SYSPY] + sys.argv)
    print("check: torch does not import here: skipped (scripts/dev deps --torch installs it)")
    sys.exit(77)

sys.path.insert(0, os.path.join(ROOT, "tools", "tasks"))
import cpu_check  # noqa: E402
import l2_cpu_check  # noqa: E402
from check_tasks import ev  # noqa: E402

NP_OPS = {1: cpu_check.np_op, 2: l2_cpu_check.np2}   # numpy implementations by level

# C buffer -> Model parameter (dotted path); other names map to a parameter of the same name.
PARAM = {"w": "conv.weight", "cb": "conv.bias", "W": "gemm.weight", "b": "gemm.bias",
         "wd": "depthwise.weight", "wp": "pointwise.weight"}
TDT = {"f32": torch.float32, "f64": torch.float64, "i32": torch.int32, "i64": torch.int64,
       "u8": torch.uint8, "i8": torch.int8}


def load_module(path, tag):
    spec = importlib.util.spec_from_file_location("kb_%s" % tag, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_model(mod, constants, feed=None):
    """Model at these constants: (output, model). feed(model) -> inputs replaces get_inputs()."""
    mod.__dict__.update(constants)
    torch.manual_seed(0)
    model = mod.Model(*mod.get_init_inputs())
    inputs = feed(model) if feed else mod.get_inputs()
    inputs = [t.float() if isinstance(t, torch.Tensor) and t.dtype == torch.float16 else t for t in inputs]
    with torch.no_grad():
        out = model(*inputs)
        again = model(*inputs)
    return out, again, model


def c_reference(ctask, cpath, shape, mode, tmp):
    """(inputs by buffer name, reference outputs by name, note) for one C shape set."""
    params = {k: v for k, v in shape.items() if k != "name"}
    note = ""
    if mode == "driver":
        cpu_check.np_op = NP_OPS[ctask["level"]]   # what run_one compares the .cu with (as l2_cpu_check does)
        note = cpu_check.run_one(cpath, ctask, shape, tmp)
        inputs, outs = {}, {}
        for b in ctask["buffers"]:
            shp = [ev(e, params) for e in b["shape"]]
            a = np.fromfile(os.path.join(tmp, "%s.bin" % b["name"]), dtype=cpu_check.NPDT[b["dtype"]])
            (outs if b["role"] == "out" else inputs)[b["name"]] = a.reshape(shp)
        return inputs, outs, note
    rng = np.random.default_rng(1234)
    inputs = {}
    for b in ctask["buffers"]:
        if b["role"] != "out":
            inputs[b["name"]] = cpu_check.draw(rng, b, params, [ev(e, params) for e in b["shape"]])
    return inputs, NP_OPS[ctask["level"]](ctask["name"], inputs, params), note


def feeder(ctask, inputs):
    def feed(model):
        params = dict(model.named_parameters())
        fwd = []
        for b in ctask["buffers"]:
            if b["role"] == "out":
                continue
            a = inputs[b["name"]]
            t = torch.from_numpy(np.ascontiguousarray(a))
            target = PARAM.get(b["name"])
            if b["name"] == "bias" and "bias" not in params:
                target = "conv.bias"
            if target is None and b["name"] in params:
                target = b["name"]
            if target is not None:
                p = params[target]
                with torch.no_grad():
                    p.copy_(t.to(p.dtype).reshape(p.shape))
                continue
            if b["dtype"] == "u8":
                t = t.bool()
            elif a.ndim == 0 and b["dtype"] == "f32":
                t = float(a)
            fwd.append(t)
        return fwd
    return feed


def find_c_task(name):
    import glob
    hits = glob.glob(os.path.join(ROOT, "tasks", "level[12]", "**", name + ".json"), recursive=True)
    return hits[0]


def main():
    args = sys.argv[1:]
    shapes = args[args.index("--shapes") + 1].split(",") if "--shapes" in args else ["tiny"]
    only = args[args.index("--only") + 1] if "--only" in args else None
    mode = args[args.index("--c-ref") + 1] if "--c-ref" in args else "numpy"
    torch.set_num_threads(1)
    with open(INDEX) as f:
        index = json.load(f)
    ran = bad = with_c = agree = 0
    for t in index["tasks"]:
        if only and only not in t["name"]:
            continue
        path = os.path.join(KB, t["module"])
        ctask = cpath = None
        if t["c_task"]:
            cpath = find_c_task(t["c_task"])
            with open(cpath) as f:
                ctask = json.load(f)
        for s in t["shapes"]:
            if s["name"] not in shapes:
                continue
            msgs = []
            ok = True
            try:
                mod = load_module(path, t["name"])
                out, again, _ = run_model(mod, s["constants"])
                if not isinstance(out, torch.Tensor):
                    raise TypeError("forward returned %s, not a tensor" % type(out).__name__)
                want_dt = torch.float32
                if ctask:
                    ob = [b for b in ctask["buffers"] if b["role"] == "out"][0]
                    want_dt = TDT[ob["dtype"]]
                if out.dtype != want_dt:
                    ok = False
                    msgs.append("dtype %s != %s" % (out.dtype, want_dt))
                if out.is_floating_point() and not torch.isfinite(out).all():
                    ok = False
                    msgs.append("non-finite output")
                same = torch.equal(torch.nan_to_num(out), torch.nan_to_num(again)) \
                    if out.is_floating_point() else torch.equal(out, again)
                if not same:
                    ok = False
                    msgs.append("two forwards differ")
                msgs.append("out %s %s" % (list(out.shape), str(out.dtype).replace("torch.", "")))
                ran += ok
                if ctask and mode != "none":
                    cshape = [x for x in ctask["shapes"] if x["name"] == s["name"]][0]
                    cp = {k: v for k, v in cshape.items() if k != "name"}
                    with tempfile.TemporaryDirectory() as tmp:
                        cin, cout, note = c_reference(ctask, cpath, cshape, mode, tmp)
                    if note:
                        msgs.append("[.cu vs numpy: %s]" % note)
                        if "MISMATCH" in note or "failed" in note:
                            ok = False
                    ob = [b for b in ctask["buffers"] if b["role"] == "out"][0]
                    want_shape = [ev(e, cp) for e in ob["shape"]]
                    mod = load_module(path, t["name"])
                    got, _, _ = run_model(mod, s["constants"], feeder(ctask, cin))
                    if list(got.shape) != want_shape:
                        ok = False
                        msgs.append("C shape MISMATCH %s != %s" % (list(got.shape), want_shape))
                    else:
                        g = got.double().numpy().reshape(-1)
                        w = np.asarray(cout[ob["name"]], dtype=np.float64).reshape(-1)
                        tol = ctask["tolerance"]
                        err = np.abs(g - w)
                        nbad = int((~(err <= tol["atol"] + tol["rtol"] * np.abs(w))).sum())
                        msgs.append("vs C: max_abs %.3g, %d/%d outside atol %g rtol %g" % (
                            err.max() if err.size else 0.0, nbad, w.size, tol["atol"], tol["rtol"]))
                        if nbad:
                            ok = False
                            msgs[-1] = "C MISMATCH " + msgs[-1]
                        else:
                            agree += 1
                    with_c += 1
            except Exception as e:  # noqa: BLE001
                ok = False
                msgs.append("ERROR %s: %s" % (type(e).__name__, e))
            bad += not ok
            print("%s %-62s %-5s %s" % ("ok  " if ok else "FAIL", t["name"], s["name"], "; ".join(msgs)),
                  flush=True)
    n = sum(1 for t in index["tasks"] if not only or only in t["name"]) * len(shapes)
    print("%d of %d module runs ok (import, Model(*get_init_inputs()), forward, dtype, finite, "
          "deterministic); %d of %d agree with the C reference (%s)%s" % (
              ran, n, agree, with_c, mode, "" if mode != "none" else ": skipped"))
    print("failures:", bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
