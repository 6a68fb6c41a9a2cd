"""yardstick - the per-task yardstick table of docs/tasks.md (issue 25): each
task's reference time at its default shape set beside PyTorch eager,
torch.compile and the roofline minimum, and whether the reference meets the
library's bar (reference <= 1.25 x the faster of eager and compile) or the
task says why not (`provenance.reference_slower_note`).

Pure functions; tools/tasks/gen_table.py reads the files and writes the block,
tools/tasks/test_yardstick.py tests these without a GPU.

* The roofline minimum is the GPU worker's: max(flops / peak, bytes /
  bandwidth), the peak the highest of the task buffers' dtypes' peaks
  (worker/gpu/judge_timing.c roofline_min_ms()). The peaks are read from that C table
  (`judge_roofline_peaks()`), not repeated here.
* The baselines come from tasks/baselines/<slug>.json; an entry counts only
  when its params equal the task's default shape set (as kevald's loader
  requires), otherwise it is stale and shown as missing.
"""
import os
import re

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
JUDGE_C = os.path.join(ROOT, "worker", "gpu", "judge_timing.c")
BAR = 1.25                      # reference / min(eager, compile) at the default shape set
NOTE_KEY = "reference_slower_note"
H100_SLUG = "nvidia-h100-80gb-hbm3"
H100_NAME = "NVIDIA H100 80GB HBM3"

_ROW = re.compile(r'\{\s*"([^"]+)"\s*,\s*(NULL|"[^"]*")\s*,\s*([0-9.eE+-]+)\s*,\s*([0-9.eE+-]+)\s*,'
                  r'\s*([0-9.eE+-]+)\s*,\s*([0-9.eE+-]+)\s*,\s*([0-9.eE+-]+)\s*\}')
_DTYPE_COL = {"f32": "f32", "f16": "f16", "bf16": "f16", "f64": "f64"}   # others: i8


def parse_peaks(c_text):
    """The rows of judge_roofline_peaks()'s table in @c_text, in order:
    [{"match", "also", "bw", "f32", "f16", "f64", "i8"}]. Raises ValueError
    when the function or its table is not found."""
    start = c_text.find("void judge_roofline_peaks(")
    if start < 0:
        raise ValueError("judge_roofline_peaks() not found")
    end = c_text.find("\n}\n", start)
    rows = []
    for m in _ROW.finditer(c_text[start:end]):
        also = None if m.group(2) == "NULL" else m.group(2).strip('"')
        rows.append({"match": m.group(1), "also": also, "bw": float(m.group(3)),
                     "f32": float(m.group(4)), "f16": float(m.group(5)), "f64": float(m.group(6)),
                     "i8": float(m.group(7))})
    if not rows:
        raise ValueError("judge_roofline_peaks(): no table rows")
    return rows


def load_peaks(path=JUDGE_C):
    with open(path) as f:
        return parse_peaks(f.read())


def device_peaks(peaks, device_name):
    """The first table row whose match (and also) the device name contains, as
    the worker picks it; None for a device without peaks."""
    for r in peaks:
        if r["match"] in device_name and (r["also"] is None or r["also"] in device_name):
            return r
    return None


def ev(expr, params):
    """kevald's integer expressions: + - * / % ceil_div min max, truncating division."""
    if isinstance(expr, (int, float)):
        return expr
    if not re.fullmatch(r"[A-Za-z0-9_+\-*/%(), ]+", expr):
        raise ValueError("bad expression %r" % expr)
    env = dict(params, ceil_div=lambda a, b: -(-a // b), min=min, max=max, __builtins__={})
    return eval(expr.replace("/", "//"), env)  # noqa: S307 - charset checked


def default_params(task):
    s = task["shapes"][0]
    return {k: v for k, v in s.items() if k != "name"}


def roofline_min_ms(task, row):
    """The worker's roofline minimum (ms) of @task's default shape set on the
    device of peaks @row; None without peaks or without flops and bytes."""
    if row is None or row["bw"] <= 0:
        return None
    params = default_params(task)
    peak = max(row[_DTYPE_COL.get(b["dtype"], "i8")] for b in task["buffers"])
    t = 0.0
    if "flops" in task and peak > 0:
        t = max(t, ev(task["flops"], params) / peak)
    if "bytes" in task:
        t = max(t, ev(task["bytes"], params) / row["bw"])
    return t * 1e3 if t > 0 else None


def baseline_entry(baselines, task):
    """(eager_ms, compile_ms) of @task's default shape set in the baseline
    document @baselines (None each where missing, failed or stale)."""
    if not baselines:
        return None, None
    e = (baselines.get("tasks", {}).get(task["name"]) or {}).get(task["shapes"][0]["name"])
    if not e or e.get("params") != default_params(task):
        return None, None
    return e.get("eager_ms"), e.get("compile_ms")


def ratio(ref_ms, eager_ms, compile_ms):
    """ref / the faster of the baselines that exist; None without one."""
    base = [v for v in (eager_ms, compile_ms) if isinstance(v, (int, float)) and v > 0]
    if ref_ms is None or not base:
        return None
    return ref_ms / min(base)


def verdict(r, task):
    """'yes' (meets the bar), 'explained' (slower, the task says why), 'no', or
    'no figure'."""
    note = (task.get("provenance") or {}).get(NOTE_KEY)
    if r is None:
        return "no figure"
    if r <= BAR:
        return "yes"
    return "explained" if note else "no"


def fmt(v, spec="%.4g"):
    return "-" if v is None else spec % v


def rows(tasks, ref_ms, baselines, peaks, roof_device=H100_NAME):
    """One row (list of cells) per task: name, category, reference ms, eager,
    compile, roofline minimum on @roof_device, ratio, verdict (with the note)."""
    dev = device_peaks(peaks, roof_device)
    out = []
    for t in tasks:
        ref = ref_ms.get(t["name"])
        eager, comp = baseline_entry(baselines, t)
        r = ratio(ref, eager, comp)
        v = verdict(r, t)
        note = (t.get("provenance") or {}).get(NOTE_KEY)
        cell = v if v != "explained" else "explained: " + note.replace("|", "/")
        if v == "yes" and note:
            cell = "yes (note kept: %s)" % note.replace("|", "/")
        out.append(["`%s`" % t["name"], t["category"], fmt(ref), fmt(eager), fmt(comp),
                    fmt(roofline_min_ms(t, dev)), fmt(r, "%.2f"), cell])
    return out


def count_line(rows_):
    n = len(rows_)
    meet = sum(r[7].startswith("yes") for r in rows_)
    expl = sum(r[7].startswith("explained") for r in rows_)
    nofig = sum(r[7] == "no figure" for r in rows_)
    bad = [r[0].strip("`") for r in rows_ if r[7] == "no"]
    pct = 100.0 * meet / n if n else 0.0
    return ("%d of %d meet %.2fx (%.1f %%); %d slower with a reason (`provenance.%s`); "
            "%d slower without one%s; %d without a figure." % (
                meet, n, BAR, pct, expl, NOTE_KEY, len(bad),
                (" (" + ", ".join(bad) + ")") if bad else "", nofig))


HEADER = ["task", "category", "reference ms (H100, default)", "torch eager ms", "torch.compile ms",
          "roofline min ms (H100)", "reference / min(eager, compile)", "meets %.2fx" % BAR]


def header(baseline_label):
    h = list(HEADER)
    h[3] = "torch eager ms (%s)" % baseline_label
    h[4] = "torch.compile ms (%s)" % baseline_label
    return h
