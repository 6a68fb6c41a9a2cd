#!/usr/bin/env python3
"""
plot_history.py - the speedup distribution per task, from kevald's history.

Reads the server's SQLite file read-only (a `mode=ro` URI connection: safe
while the server runs; WAL readers do not block the writer) through the
views of migrations/*.sql (docs/store.md):

  v_speedup_by_task     correct submissions per task: count, geometric mean,
                        and counts in speedup buckets <0.5, 0.5-1, 1-1.5,
                        1.5-2, 2-4, >=4
  v_submissions_hourly  submissions per hour, task and verdict

and saves a PNG (matplotlib, Agg backend: no display needed): one stacked
bar per task over the speedup buckets, annotated with n and the geometric
mean. When no submission has a speedup (a compile-only server, or nothing
correct yet) it says so and plots the verdict counts per task instead.

    python3 plot_history.py --db /var/lib/kevald/kevald.db --out history.png
"""
import argparse
import os
import sqlite3
import sys
from collections import defaultdict
from pathlib import Path
from urllib.parse import quote

BUCKETS = [("lt_0_5", "< 0.5x"), ("b_0_5_1", "0.5-1x"), ("b_1_1_5", "1-1.5x"), ("b_1_5_2", "1.5-2x"),
           ("b_2_4", "2-4x"), ("ge_4", ">= 4x")]
VERDICT_ORDER = ["correct", "compiled", "incorrect", "compile_error", "runtime_error", "timeout", "rejected",
                 "internal_error", "cancelled", "pending"]


def connect_ro(db):
    if not Path(db).is_file():
        raise SystemExit(f"plot_history: no database file at {db}")
    return sqlite3.connect(f"file:{quote(str(Path(db).resolve()))}?mode=ro", uri=True)


def speedups(con, top):
    cols = ", ".join(b for b, _ in BUCKETS)
    try:
        rows = con.execute(f"SELECT task, n, geomean_speedup, {cols} FROM v_speedup_by_task "
                           "ORDER BY n DESC, task LIMIT ?", (top,)).fetchall()
    except sqlite3.OperationalError as e:
        # ln()/exp() need SQLite's math functions (3.35+); without them use the plain columns.
        print(f"plot_history: v_speedup_by_task: {e}; computing the geometric mean here", file=sys.stderr)
        rows = []
        for task, in con.execute("SELECT DISTINCT task FROM submissions WHERE verdict = 'correct' AND speedup > 0"):
            sp = [r[0] for r in con.execute("SELECT speedup FROM submissions WHERE task IS ? AND "
                                             "verdict = 'correct' AND speedup > 0", (task,))]
            import math
            counts = [sum(s < 0.5 for s in sp), sum(0.5 <= s < 1 for s in sp), sum(1 <= s < 1.5 for s in sp),
                      sum(1.5 <= s < 2 for s in sp), sum(2 <= s < 4 for s in sp), sum(s >= 4 for s in sp)]
            rows.append((task, len(sp), math.exp(sum(math.log(s) for s in sp) / len(sp)), *counts))
        rows = sorted(rows, key=lambda r: (-r[1], r[0] or ""))[:top]
    return rows


def verdicts(con, top):
    per = defaultdict(lambda: defaultdict(int))
    for task, verdict, n in con.execute("SELECT task, verdict, sum(submissions) FROM v_submissions_hourly "
                                        "GROUP BY task, verdict"):
        per[task or "(no task)"][verdict] += n
    tasks = sorted(per, key=lambda t: (-sum(per[t].values()), t))[:top]
    return tasks, per


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", default=os.environ.get("KEVALD_DB", "kevald.db"), help="the server's SQLite file")
    ap.add_argument("--out", default="kevald_history.png", help="PNG to write")
    ap.add_argument("--top", type=int, default=30, help="at most this many tasks (most submissions first)")
    a = ap.parse_args(argv)

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        plt = None
        print("plot_history: matplotlib is not installed: printing the tables only, no PNG", file=sys.stderr)

    con = connect_ro(a.db)
    rows = speedups(con, a.top)
    if rows:
        print(f"plot_history: speedup distribution of {sum(r[1] for r in rows)} correct submissions "
              f"over {len(rows)} tasks")
        for r in rows:
            print(f"  {r[0] or '(no task)':<28} n={r[1]:<6} geomean {r[2]:.3f}x  "
                  + " ".join(f"{label}:{r[3 + k] or 0}" for k, (_, label) in enumerate(BUCKETS)))
        if plt is None:
            return 0
        tasks = [r[0] or "(no task)" for r in rows]
        fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(tasks) + 2), 5))
        bottom = [0] * len(rows)
        colors = ["#b2182b", "#ef8a62", "#d1e5f0", "#67a9cf", "#2166ac", "#053061"]
        for k, (col, label) in enumerate(BUCKETS):
            vals = [r[3 + k] or 0 for r in rows]
            ax.bar(tasks, vals, bottom=bottom, label=label, color=colors[k])
            bottom = [b + v for b, v in zip(bottom, vals)]
        for i, r in enumerate(rows):
            ax.annotate(f"n={r[1]}\n{r[2]:.2f}x", (i, bottom[i]), ha="center", va="bottom", fontsize=7)
        ax.set_ylabel("correct submissions")
        ax.set_title("kevald: speedup per task (correct submissions by bucket; n, geomean on top)", fontsize=10)
        ax.set_ylim(top=max(bottom) * 1.15)
        ax.legend(title="speedup", fontsize=8, bbox_to_anchor=(1.01, 1), loc="upper left")
        what = "speedup distribution"
    else:
        tasks, per = verdicts(con, a.top)
        if not tasks:
            print("plot_history: the history is empty; nothing to plot", file=sys.stderr)
            return 1
        print("plot_history: no correct submission has a speedup (compile-only server, or nothing correct "
              "yet): plotting verdict counts per task instead")
        seen = sorted({v for t in tasks for v in per[t]},
                      key=lambda v: VERDICT_ORDER.index(v) if v in VERDICT_ORDER else 99)
        for t in tasks:
            print(f"  {t:<28} " + " ".join(f"{v}:{per[t][v]}" for v in seen if per[t].get(v)))
        if plt is None:
            return 0
        fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(tasks) + 2), 5))
        bottom = [0] * len(tasks)
        for v in seen:
            vals = [per[t].get(v, 0) for t in tasks]
            ax.bar(tasks, vals, bottom=bottom, label=v)
            bottom = [b + x for b, x in zip(bottom, vals)]
        ax.set_ylabel("submissions")
        ax.set_title("kevald: verdicts per task (no speedups in this history)", fontsize=10)
        ax.legend(fontsize=8, bbox_to_anchor=(1.01, 1), loc="upper left")
        what = "verdict counts"
    con.close()
    ax.tick_params(axis="x", labelrotation=60, labelsize=8)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    print(f"plot_history: wrote {a.out} ({what})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
