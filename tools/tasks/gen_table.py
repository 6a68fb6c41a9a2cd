#!/usr/bin/env python3
"""gen_table - build the tables of docs/tasks.md from the task library and the
GPU host's check outputs.

Usage: python3 tools/tasks/gen_table.py [--doc docs/tasks.md] [--tasks tasks]
           [--oracle FILE ...] [--degeneracy FILE ...] [--timing-ref FILE ...]
           [--oracle-cpu FILE ...] [--degeneracy-cpu FILE ...] [--timing FILE ...]
           [--baselines FILE] [--replace]

Replaces the text between <!-- BEGIN name --> and <!-- END name --> markers in
the doc (prose stays outside the markers):

* `tasks` (always): one row per task of the library (--tasks, default the
  whole library: level 1 and level 2) with category, shape sets, the
  published KernelBench H100 eager time and the reference note;
* `counts` (always): tasks per level and category;
* `oracle`, `degeneracy`, `oracle-cpu`, `degeneracy-cpu`, `timing-ref`: row
  tables. FILE is what tools/oracle/{oracle,degeneracy,timing}.py wrote with
  --md, or their stdout (rows `a | b | ...`; other lines are ignored). Rows are
  MERGED into the rows already in the doc, keyed by (task, shape[, output]);
  a FILE's row replaces the doc's row of the same key, so a run of the default
  shape sets adds to the tiny/small rows. --replace drops the doc's rows of
  the blocks given on the command line first. Rows of tasks no longer in the
  library are dropped. Rows are sorted by level, problem number, shape set
  (tiny, small, default) and output; each block ends with a totals line
  counted from its rows;
* `timing`: the markdown that bench/tasks/selfeval.py --md writes (kevald's
  own reference times), rows MERGED by task like the blocks above (a run of
  a few tasks updates their rows; --replace starts afresh); the block ends
  with the summary lines of the files given, then a count of its rows;
* `timing-all` (always): one row per task, the reference time at the default
  size next to the published eager time, from the `timing` block (through
  kevald) and the `timing-ref` block (stand-alone);
* `summary` (always): the totals of the blocks above, for the top of the page;
* `yardstick` (always): one row per task, the reference time at the default
  size (from `timing-all`) beside torch eager, torch.compile (--baselines
  FILE; default tasks/baselines/nvidia-h100-80gb-hbm3.json, else the H200
  file, labelled so) and the roofline minimum on the H100, the ratio to the
  faster baseline and whether it meets 1.25x or says why not
  (tools/tasks/yardstick.py), then the count line.
"""
import argparse
import collections
import json
import os
import re
import statistics

import yardstick
from taskfiles import task_paths  # noqa: E402  (which files are tasks: common/tasklib.c's rule)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SHAPE_ORDER = {"tiny": 0, "small": 1, "default": 2}

# block name -> number of key columns, number of columns
ROW_BLOCKS = {"oracle": (3, 8), "oracle-cpu": (3, 8), "degeneracy": (2, 7), "degeneracy-cpu": (2, 7),
              "timing-ref": (2, 6)}
HEADERS = {
    "oracle": ["task", "shape", "output", "max abs err", "max rel err", "mismatches", "atol/rtol",
               "within tolerance"],
    "degeneracy": ["task", "shape", "zeros", "const", "copy", "inputs", "seeds"],
    "timing-ref": ["task", "shape", "published H100 eager ms", "torch eager ms here",
                   "reference ms (stand-alone)", "reference / torch"],
}
HEADERS["oracle-cpu"] = HEADERS["oracle"]
HEADERS["degeneracy-cpu"] = HEADERS["degeneracy"]


def problem_num(name):
    p = name.split("_")
    return int(p[1]) if len(p) > 1 and p[1].isdigit() else 0


def shape_str(s):
    return "%s: %s" % (s["name"], " ".join("%s=%s" % (k, v) for k, v in s.items() if k != "name"))


def tasks_table(tasks):
    rows = ["| task | category | shape sets | H100 eager ms (KernelBench) | reference |",
            "|---|---|---|---|---|"]
    for t in tasks:
        prov = t.get("provenance", {})
        shapes = "<br>".join(shape_str(s) for s in t["shapes"])
        eager = prov.get("h100_torch_eager_ms")
        rows.append("| `%s` | %s | %s | %s | %s |" % (
            t["name"], t["category"], shapes, "-" if eager is None else eager,
            prov.get("reference_note", "").replace("|", "/")))
    return "\n".join(rows) + "\n"


def counts_table(tasks):
    c = collections.Counter((t.get("level", 1), t["category"]) for t in tasks)
    rows = ["| level | category | tasks | KernelBench problems |", "|---|---|---|---|"]
    for level in sorted({lv for lv, _ in c}):
        for lv, cat in sorted(k for k in c if k[0] == level):
            nums = sorted(problem_num(t["name"]) for t in tasks
                          if t["category"] == cat and t.get("level", 1) == level)
            rows.append("| %d | %s | %d | %s |" % (level, cat, c[(lv, cat)], ", ".join(map(str, nums))))
        rows.append("| %d | **all** | **%d** | |" % (level, sum(v for k, v in c.items() if k[0] == level)))
    rows.append("| | **total** | **%d** | |" % len(tasks))
    return "\n".join(rows) + "\n"


# ------------------------------------------------------------------ row tables
def parse_rows(text, ncols):
    """Rows of @ncols cells from markdown table lines or `a | b | ...` lines;
    header and separator lines, HTML comments and other lines are skipped."""
    rows = []
    for line in text.splitlines():
        line = re.sub(r"<!--.*?-->", "", line).strip()
        if " | " not in line:
            continue
        if line.startswith("|"):
            line = line[1:]
        if line.endswith("|"):
            line = line[:-1]
        cells = [c.strip() for c in line.split("|")]
        if len(cells) != ncols or cells[0] in ("task", "") or set(cells[0]) <= set("-: "):
            continue
        rows.append(cells)
    return rows


def block_text(doc, name):
    m = re.search(r"<!-- BEGIN %s -->\n(.*?)<!-- END %s -->" % (re.escape(name), re.escape(name)), doc, re.S)
    if not m:
        raise SystemExit("marker %s missing in the doc" % name)
    return m.group(1)


def replace(doc, name, text):
    pat = re.compile(r"(<!-- BEGIN %s -->\n).*?(<!-- END %s -->)" % (re.escape(name), re.escape(name)), re.S)
    if not pat.search(doc):
        raise SystemExit("marker %s missing in the doc" % name)
    return pat.sub(lambda m: m.group(1) + text + m.group(2), doc)


def row_sort_key(order):
    def key(r):
        return (order.get(r[0], (9, 0)), SHAPE_ORDER.get(r[1], 9)) + tuple(r[2:3])
    return key


def merge_rows(old, new, nkey, order):
    """@old rows updated by @new rows of the same key; rows of unknown tasks dropped."""
    merged = collections.OrderedDict()
    for r in old + new:
        merged[tuple(r[:nkey])] = r
    dropped = sorted({r[0] for r in merged.values() if r[0] not in order})
    if dropped:
        print("dropped rows of tasks not in the library: %s" % " ".join(dropped))
    return sorted((r for r in merged.values() if r[0] in order), key=row_sort_key(order))


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def oracle_totals(rows):
    per_shape = collections.Counter(r[1] for r in rows)
    bad = [r for r in rows if r[7] != "yes"]
    shapes = ", ".join("%s %d" % (s, per_shape[s]) for s in sorted(per_shape, key=lambda s: SHAPE_ORDER.get(s, 9)))
    return ("%d rows over %d tasks (%s), %d outside tolerance%s." % (
        len(rows), len({r[0] for r in rows}), shapes, len(bad),
        "" if not bad else ": " + ", ".join("%s %s" % (r[0], r[1]) for r in bad)))


def degeneracy_totals(rows):
    passed = [r for r in rows if any(c != "fails" for c in r[2:])]
    return "%d rows over %d tasks; rows where a degenerate candidate passed: %s." % (
        len(rows), len({r[0] for r in rows}),
        ", ".join("%s %s" % (r[0], r[1]) for r in passed) if passed else "none")


def to_float(s):
    try:
        return float(s.split()[0])
    except (ValueError, IndexError, AttributeError):
        return None


def timing_ref_totals(rows):
    ratios = [to_float(r[5]) for r in rows if to_float(r[5]) is not None]
    if not ratios:
        return "%d tasks." % len(rows)
    return "%d tasks; reference / torch eager here: median %.2f, range %.2f-%.2f." % (
        len(rows), statistics.median(ratios), min(ratios), max(ratios))


TOTALS = {"oracle": oracle_totals, "oracle-cpu": oracle_totals, "degeneracy": degeneracy_totals,
          "degeneracy-cpu": degeneracy_totals, "timing-ref": timing_ref_totals}


# ------------------------------------------------------------------ timing summary
def selfeval_rows(doc):
    """task -> kevald reference ms (default size) from the `timing` block (selfeval)."""
    out = {}
    for r in parse_rows(block_text(doc, "timing"), 7):
        ms = to_float(r[3])
        if r[1] == "correct" and ms is not None:
            out[r[0]] = ms
    return out


def timing_all(tasks, doc):
    kev = selfeval_rows(doc)
    sa = {r[0]: r for r in parse_rows(block_text(doc, "timing-ref"), 6) if r[1] == "default"}
    rows = []
    for t in tasks:
        n = t["name"]
        pub = t.get("provenance", {}).get("h100_torch_eager_ms")
        k = kev.get(n)
        s = sa.get(n)
        s_ms = to_float(s[4]) if s else None
        torch_here = to_float(s[3]) if s else None
        ref = k if k is not None else s_ms
        ratio = "%.2f" % (ref / pub) if ref is not None and pub else "-"
        rows.append(["`%s`" % n, t["category"], "-" if pub is None else str(pub),
                     "%.4g" % k if k is not None else "-", "%.4g" % s_ms if s_ms is not None else "-",
                     "%.4g" % torch_here if torch_here is not None else "-",
                     ratio, "kevald" if k is not None else ("stand-alone" if s_ms is not None else "none")])
    header = ["task", "category", "published H100 eager ms", "reference ms through kevald",
              "reference ms stand-alone", "torch eager ms here", "reference / published eager", "ratio from"]
    missing = [r[0] for r in rows if r[7] == "none"]
    foot = "%d tasks: %d timed through kevald, %d stand-alone only, %d without a reference time%s." % (
        len(rows), sum(r[7] == "kevald" for r in rows), sum(r[7] == "stand-alone" for r in rows),
        len(missing), (" (" + ", ".join(missing) + ")") if missing else "")
    return md_table(header, rows) + "\n" + foot + "\n", rows


def summary(tasks, doc, all_rows):
    lv = collections.Counter(t.get("level", 1) for t in tasks)
    cats = collections.defaultdict(set)
    for t in tasks:
        cats[t.get("level", 1)].add(t["category"])
    out = ["| check | rows | result |", "|---|---|---|"]
    out.append("| tasks | %s | %s |" % (
        ", ".join("level %d: %d" % (k, lv[k]) for k in sorted(lv)) + ", total %d" % len(tasks),
        "; ".join("level %d categories: %d" % (k, len(cats[k])) for k in sorted(cats))))
    for name, title, link in (("oracle", "oracle, reference vs PyTorch (GPU)", "#oracle-reference-vs-pytorch-gpu"),
                              ("degeneracy", "degeneracy filter (GPU)", "#degeneracy-filter-gpu")):
        nkey, ncols = ROW_BLOCKS[name]
        rows = parse_rows(block_text(doc, name), ncols)
        out.append("| [%s](%s) | %d | %s |" % (title, link, len(rows), TOTALS[name](rows)))
    ref_rows = parse_rows(block_text(doc, "timing-ref"), 6)
    out.append("| [reference time at the default size](#timing-at-the-default-size-gpu) | %d | %d through kevald "
               "(self-evaluation); %d stand-alone rows (timing.py --ref) |" % (
                   sum(r[7] != "none" for r in all_rows), sum(r[7] == "kevald" for r in all_rows), len(ref_rows)))
    by_cat = collections.defaultdict(list)
    for r in all_rows:
        if r[6] != "-":
            by_cat[r[1]].append(float(r[6]))
    out2 = ["| category | tasks with a time | reference / published eager: median | min | max |",
            "|---|---|---|---|---|"]
    for cat in sorted(by_cat):
        v = by_cat[cat]
        out2.append("| %s | %d | %.2f | %.2f | %.2f |" % (cat, len(v), statistics.median(v), min(v), max(v)))
    return "\n".join(out) + "\n\n" + "\n".join(out2) + "\n"


TIMING_HEADER = ["task", "verdict", "candidate", "kevald reference ms (default)", "self speedup",
                 "PyTorch eager ms (published H100)", "reference / eager"]


def summary_lines(text):
    """The lines of a selfeval --md file that are neither table rows nor blank."""
    return [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("|")]


def timing_lines(text):
    """(task, row cells, the line as written) for every selfeval row of @text
    (the line keeps a skipped row's trailing comment)."""
    out = []
    for ln in text.splitlines():
        got = parse_rows(ln, 7)
        if got:
            out.append((got[0][0], got[0], ln.strip()))
    return out


def merge_timing(old_text, files, order, replace_old=False):
    """The `timing` block: the rows of @old_text (none with @replace_old)
    updated by the rows of the selfeval --md @files (by task), the files'
    summary lines (else the old block's) and a count of the rows."""
    merged = collections.OrderedDict()
    if not replace_old:
        for task, cells, ln in timing_lines(old_text):
            merged[task] = (cells, ln)
    notes = []
    for path in files:
        with open(path) as f:
            text = f.read()
        got = timing_lines(text)
        if not got:
            raise SystemExit("%s: no selfeval rows" % path)
        for task, cells, ln in got:
            merged[task] = (cells, ln)
        notes += summary_lines(text)
    rows = sorted((v for k, v in merged.items() if k in order),
                  key=lambda v: (v[0][1] == "skipped", order[v[0][0]]))
    if not notes:
        notes = summary_lines(old_text)
    notes = [ln for ln in notes if not ln.startswith("Rows: ")]
    foot = "Rows: %d (%d correct, %d skipped)." % (
        len(rows), sum(c[1] == "correct" for c, _ in rows), sum(c[1] == "skipped" for c, _ in rows))
    table = md_table(TIMING_HEADER, [])
    return table + "\n".join(ln for _, ln in rows) + "\n\n" + "\n".join(notes + [foot]) + "\n"


def yardstick_block(tasks, all_rows, tasks_dir, baselines_path=None):
    """The `yardstick` block from the `timing-all` rows and a baseline file."""
    ref_ms = {}
    for r in all_rows:
        v = to_float(r[3]) if r[3] != "-" else to_float(r[4])
        if v is not None:
            ref_ms[r[0].strip("`")] = v
    bdir = os.path.join(tasks_dir, "baselines")
    h100 = os.path.join(bdir, yardstick.H100_SLUG + ".json")
    path = baselines_path or (h100 if os.path.exists(h100) else os.path.join(bdir, "nvidia-h200.json"))
    base = None
    if os.path.exists(path):
        with open(path) as f:
            base = json.load(f)
    if base and base.get("slug") == yardstick.H100_SLUG:
        label = "H100"
        intro = ("Baselines: `%s` (%s, %s, torch %s)." % (
            os.path.relpath(path, ROOT), base.get("gpu"), base.get("date"), base.get("torch")))
    elif base:
        label = "%s, no H100 file yet" % base.get("gpu")
        intro = ("**No H100 file yet** (`tasks/baselines/%s.json`): the eager and compile columns "
                 "are `%s` (%s, %s, torch %s), so the ratio sets an H100 reference time against "
                 "%s PyTorch times; on memory-bound tasks the %s's higher bandwidth makes it read "
                 "high." % (yardstick.H100_SLUG, os.path.relpath(path, ROOT), base.get("gpu"),
                            base.get("date"), base.get("torch"), base.get("gpu"), base.get("gpu")))
    else:
        label = "none"
        intro = "No baseline file: the eager and compile columns are empty."
    rows = yardstick.rows(tasks, ref_ms, base, yardstick.load_peaks())
    return (intro + "\n\n" + md_table(yardstick.header(label), rows) + "\n" +
            yardstick.count_line(rows) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs", "tasks.md"))
    ap.add_argument("--tasks", default=os.path.join(ROOT, "tasks"))
    for name in ROW_BLOCKS:
        ap.add_argument("--" + name, dest=name.replace("-", "_"), nargs="+", default=[])
    ap.add_argument("--timing", nargs="+", default=[])
    ap.add_argument("--baselines", help="baseline file for the yardstick table (default: the H100 "
                    "file in tasks/baselines, else the H200 one)")
    ap.add_argument("--replace", action="store_true",
                    help="drop the doc's rows of the blocks given before merging")
    a = ap.parse_args()
    tasks = []
    for p in task_paths(a.tasks):
        with open(p) as f:
            tasks.append(json.load(f))
    tasks.sort(key=lambda t: (t.get("level", 1), problem_num(t["name"])))
    order = {t["name"]: (t.get("level", 1), problem_num(t["name"])) for t in tasks}
    with open(a.doc) as f:
        doc = f.read()
    doc = replace(doc, "tasks", tasks_table(tasks))
    doc = replace(doc, "counts", counts_table(tasks))
    if a.timing:
        doc = replace(doc, "timing", merge_timing(block_text(doc, "timing"), a.timing, order,
                                                  a.replace))
    for name, (nkey, ncols) in ROW_BLOCKS.items():
        files = getattr(a, name.replace("-", "_"))
        old = [] if (a.replace and files) else parse_rows(block_text(doc, name), ncols)
        new = []
        for path in files:
            with open(path) as f:
                got = parse_rows(f.read(), ncols)
            if not got:
                raise SystemExit("%s: no rows of %d cells for block %s" % (path, ncols, name))
            new += got
        rows = merge_rows(old, new, nkey, order)
        doc = replace(doc, name, md_table(HEADERS[name], rows) + "\n" + TOTALS[name](rows) + "\n")
    text, all_rows = timing_all(tasks, doc)
    doc = replace(doc, "timing-all", text)
    doc = replace(doc, "summary", summary(tasks, doc, all_rows))
    doc = replace(doc, "yardstick", yardstick_block(tasks, all_rows, a.tasks, a.baselines))
    with open(a.doc, "w") as f:
        f.write(doc)
    print("%s: %d tasks" % (a.doc, len(tasks)))


if __name__ == "__main__":
    main()
