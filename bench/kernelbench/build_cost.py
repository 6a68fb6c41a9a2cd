#!/usr/bin/env python3
"""
bench/kernelbench/build_cost.py - where a KernelBench sample's load_inline build goes (issue 29's
throughput): each sample's module is executed in a fresh Python process (no GPU needed: the
build is what is timed), one at a time, with TORCH_EXTENSIONS_DIR a fresh folder and
TORCH_CUDA_ARCH_LIST as the build role sets it, in configurations:

    plain   as the sample is written
    pch     load_inline(use_pch=True): PyTorch's precompiled <torch/extension.h> for the C++
            part (main.cpp); the header is precompiled once before, and that one-time cost is
            printed apart

For every build: wall seconds, the CPU seconds of the process and everything it waited for
(RUSAGE_CHILDREN: ninja, c++, nvcc and its phases), ninja's own per-target times from the build
folder's .ninja_log (main.o: the C++ with torch/extension.h and pybind11; cuda.cuda.o: nvcc;
the .so link), and nvcc's phase times (nvcc --time: cudafe++, cicc, ptxas, the host compile).

    build_cost.py [--samples tests/kernelbench/samples] [--names cuda_relu,cuda_softmax]
                  [--configs plain,pch] [--arch 9.0a] [--repeat 1] [--json OUT] [--keep-csv DIR]
"""
import argparse
import csv
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = r'''
import functools, importlib.util, os, sys
import torch.utils.cpp_extension as ce
cfg, path, nvcc_time = sys.argv[1], sys.argv[2], sys.argv[3]
orig = ce.load_inline
def load_inline(*a, **k):
    k = dict(k)
    k["extra_cuda_cflags"] = list(k.get("extra_cuda_cflags") or []) + ["--time", nvcc_time]
    if cfg == "pch":
        k["use_pch"] = True
    return orig(*a, **k)
ce.load_inline = load_inline
spec = importlib.util.spec_from_file_location("kb_sample", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
'''

PCH_WARM = r'''
import torch.utils.cpp_extension as ce
ce.load_inline(name="kb_pch_warm", cpp_sources="int kb_pch_warm_f(int x) { return x; }",
               functions=["kb_pch_warm_f"], use_pch=True)
'''


def ninja_targets(build_root):
    """{target: seconds} from every .ninja_log under @build_root."""
    out = {}
    for d, _, files in os.walk(build_root):
        if ".ninja_log" in files:
            for line in open(os.path.join(d, ".ninja_log")):
                f = line.rstrip("\n").split("\t")
                if len(f) >= 4 and f[0].isdigit():
                    out[f[3]] = out.get(f[3], 0.0) + (int(f[1]) - int(f[0])) / 1000.0
    return out


def nvcc_phases(path):
    """{phase: seconds} summed over nvcc --time's CSV rows: source file, phase name, inputs,
    output, arch, tool, metric, unit (ms)."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for row in csv.reader(f):
            row = [c.strip() for c in row]
            if len(row) < 3 or row[-1] != "ms":
                continue
            try:
                ms = float(row[-2])
            except ValueError:
                continue
            out[row[1]] = out.get(row[1], 0.0) + ms / 1000.0
    return out


def run(py, code, args, env, timeout=600):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run([py, "-c", code] + args, env=env, capture_output=True, text=True, timeout=timeout)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return p, wall, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", default="tests/kernelbench/samples")
    ap.add_argument("--names", default="cuda_relu,cuda_softmax,cuda_gemm_add_relu")
    ap.add_argument("--configs", default="plain,pch")
    ap.add_argument("--arch", default="9.0a")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--json")
    ap.add_argument("--keep-csv", help="a folder for nvcc --time's CSV files")
    a = ap.parse_args()
    configs = a.configs.split(",")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, TORCH_CUDA_ARCH_LIST=a.arch, CUDA_VISIBLE_DEVICES="")
        if "pch" in configs:
            env["TORCH_EXTENSIONS_DIR"] = os.path.join(tmp, "pch_warm")
            p, wall, cpu = run(a.python, PCH_WARM, [], env)
            print(f"pch: precompiling <torch/extension.h> (once): wall {wall:.1f} s, cpu {cpu:.1f} s,"
                  f" rc {p.returncode}")
            if p.returncode:
                print(p.stderr[-2000:])
        for rep in range(a.repeat):
            for name in a.names.split(","):
                for cfg in configs:
                    d = os.path.join(tmp, f"{cfg}_{name}_{rep}")
                    os.makedirs(d)
                    env["TORCH_EXTENSIONS_DIR"] = d
                    tfile = os.path.join(d, "nvcc_time.csv")
                    p, wall, cpu = run(a.python, CHILD, [cfg, os.path.join(a.samples, name + ".py"), tfile], env)
                    tg = ninja_targets(d)
                    ph = nvcc_phases(tfile)
                    row = {"sample": name, "config": cfg, "rep": rep, "rc": p.returncode, "wall_s": round(wall, 2),
                           "cpu_s": round(cpu, 2),
                           "ninja": {k: round(v, 2) for k, v in sorted(tg.items())},
                           "nvcc": {k: round(v, 2) for k, v in sorted(ph.items(), key=lambda kv: -kv[1])[:8]}}
                    rows.append(row)
                    print(json.dumps(row))
                    if p.returncode:
                        print(p.stderr[-3000:])
                    if a.keep_csv and os.path.exists(tfile):
                        shutil.copy(tfile, os.path.join(a.keep_csv, f"{cfg}_{name}_{rep}.csv"))
                    shutil.rmtree(d, ignore_errors=True)
    for cfg in configs:
        w = [r["wall_s"] for r in rows if r["config"] == cfg and r["rc"] == 0]
        c = [r["cpu_s"] for r in rows if r["config"] == cfg and r["rc"] == 0]
        if w:
            print(f"{cfg}: {len(w)} builds, median wall {statistics.median(w):.1f} s, median cpu "
                  f"{statistics.median(c):.1f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
