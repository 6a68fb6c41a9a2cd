#!/usr/bin/env python3
"""
Lay the ModelNew samples out as a KernelBench run directory.

KernelBench's scripts (scripts/generate_samples.py writes them,
scripts/eval_from_generations.py reads them) keep one generation per file,
flat in the run's folder:

    runs/<run>/level_<L>_problem_<P>_sample_<S>_kernel.py

L is the level, P the problem number within the level (19 for 19_ReLU) and S
the sample's index among the generations for that problem. Here L and P come
from the sample's task name (l<L>_<P>_..., the C task's name, which the
KernelBench task family keeps), and S numbers the samples of one problem in
manifest order from 0. The tree is generated from samples/manifest.json, not
kept as a second copy. Standard library only.

    make_runs.py OUT [--run NAME]   writes OUT/<run>/..., prints "file <- sample"
"""
import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLES_DIR = os.path.join(HERE, "samples")
MANIFEST = os.path.join(SAMPLES_DIR, "manifest.json")
DEFAULT_RUN = "kevald_samples"
TASK_RE = re.compile(r"^l([12])_([0-9]+)_[a-z0-9_]+$")


def load_manifest(path=MANIFEST):
    """The manifest's JSON (a dict with "samples")."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def level_problem(task):
    """(level, problem number) from a task name such as l1_19_relu; ValueError if it has no such form."""
    m = TASK_RE.match(task)
    if not m:
        raise ValueError(f"task name {task!r} does not read l<level>_<problem>_<name>")
    return int(m.group(1)), int(m.group(2))


def kernel_file_name(level, problem, sample):
    """KernelBench's name for one generation."""
    return f"level_{level}_problem_{problem}_sample_{sample}_kernel.py"


def runs_layout(manifest):
    """[(file name, manifest entry)] in manifest order: samples numbered per (level, problem) from 0."""
    next_id = {}
    out = []
    for entry in manifest["samples"]:
        lp = level_problem(entry["task"])
        sid = next_id.get(lp, 0)
        next_id[lp] = sid + 1
        out.append((kernel_file_name(lp[0], lp[1], sid), entry))
    return out


def write_runs(out_dir, run=DEFAULT_RUN, manifest=None, samples_dir=SAMPLES_DIR):
    """Write out_dir/run/<KernelBench names>; return [(path, entry)]. Refuses to overwrite a different file."""
    manifest = manifest if manifest is not None else load_manifest()
    run_dir = os.path.join(out_dir, run)
    os.makedirs(run_dir, exist_ok=True)
    written = []
    for name, entry in runs_layout(manifest):
        with open(os.path.join(samples_dir, entry["name"] + ".py"), "rb") as f:
            src = f.read()
        path = os.path.join(run_dir, name)
        if os.path.exists(path):
            with open(path, "rb") as f:
                if f.read() != src:
                    raise FileExistsError(f"{path} exists with other content")
        with open(path, "wb") as f:
            f.write(src)
        written.append((path, entry))
    return written


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("out", help="the runs/ directory to write into")
    ap.add_argument("--run", default=DEFAULT_RUN, help=f"run name (default {DEFAULT_RUN})")
    args = ap.parse_args(argv)
    for path, entry in write_runs(args.out, args.run):
        print(f"{os.path.relpath(path, args.out)} <- {entry['name']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
