#!/usr/bin/env python3
"""selfeval - every library task's reference evaluated as a candidate, through
the real HTTP API, in one batch (GPU host).

What it shows, per task:
  * the verdict: the reference must be judged `correct` against itself on
    every shape set (deterministic, no out-of-bounds writes, no input
    mutation) - a task whose reference fails this is broken;
  * kevald's reference median at the KernelBench default size next to the
    published H100 PyTorch eager time (how hard the baseline is to beat);
  * the self speedup (reference median / candidate median for the same
    kernels): it should be 1.00 within kevald's timing precision - a direct
    check of timing stability across alternating trials.
Tasks whose reference is a cuBLAS `library` step cannot be candidates (a
candidate is CUDA source); they use the task's `example` when it has one and
are otherwise listed as skipped.

  python3 bench/tasks/selfeval.py --kevald build/server/kevald [--tasks tasks] [--out FILE.json] [--md FILE.md]
  python3 bench/tasks/selfeval.py --server http://127.0.0.1:8080 ...
  python3 bench/tasks/selfeval.py --kevald ... --names l1_23_softmax,l1_89_cumsum   (exact names;
      --names @FILE reads them from FILE, one a line or comma-separated)

Each JSON row also carries the default shape set's roofline minimum and the
result's yardsticks (speedup_vs, roofline_fraction): with the reference as the
candidate, speedup_vs.torch_eager is torch eager / reference, null where the
task library has no baseline file for the GPU.

Python 3 standard library only.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "tasks"))
from taskfiles import task_paths  # noqa: E402  (which files are tasks: common/tasklib.c's rule)


def http(method, url, body=None, timeout=700):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"content-type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def candidate_for(path, doc):
    """The submission that evaluates @doc's reference (or example) as a candidate."""
    here = os.path.dirname(path)
    ref = doc["reference"]
    if any("library" in step for step in ref["plan"]):
        ex = doc.get("example")
        if not ex:
            return None, "reference is a cuBLAS step and the task has no example"
        src = ex.get("source") or open(os.path.join(here, ex["source_file"])).read()
        sub = {"task": doc["name"], "source": src, "plan": ex["plan"]}
        for k in ("scratch", "options", "name_expressions"):
            if ex.get(k):
                sub[k] = ex[k]
        return sub, "example"
    src = ref.get("source") or open(os.path.join(here, ref["source_file"])).read()
    sub = {"task": doc["name"], "source": src, "plan": ref["plan"]}
    if ref.get("scratch"):
        sub["scratch"] = ref["scratch"]
    if ref.get("options"):
        sub["options"] = ref["options"]
    if ref.get("name_expressions"):
        sub["name_expressions"] = ref["name_expressions"]
    return sub, "reference"


def parse_names(spec):
    """The set of exact task names in @spec ("a,b" or "@FILE"), or None for all."""
    if not spec:
        return None
    if spec.startswith("@"):
        with open(spec[1:]) as f:
            spec = f.read()
    return {n.strip() for n in spec.replace("\n", ",").split(",") if n.strip()}


def start_server(kevald, gpus):
    tmp = tempfile.mkdtemp(prefix="kevald-selfeval-")
    portfile = os.path.join(tmp, "port")
    log = open(os.path.join(tmp, "server.log"), "w")
    proc = subprocess.Popen([kevald, "serve", "--listen", "127.0.0.1:0", "--db", os.path.join(tmp, "k.db"),
                             "--port-file", portfile, "--gpus", gpus], stdout=log, stderr=log)
    for _ in range(300):
        if os.path.exists(portfile) and open(portfile).read().strip():
            return proc, "http://127.0.0.1:%s" % open(portfile).read().strip(), tmp
        time.sleep(0.1)
    proc.kill()
    sys.exit("selfeval: the server did not start; see %s/server.log" % tmp)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kevald", help="start this kevald binary (serve) for the run")
    ap.add_argument("--server", help="or use a running server")
    ap.add_argument("--gpus", default="auto")
    ap.add_argument("--tasks", default="tasks")
    ap.add_argument("--only", default="", help="substring filter on task names")
    ap.add_argument("--names", default=None,
                    help="exact task names, comma-separated, or @FILE (one a line or comma-separated)")
    ap.add_argument("--timing", default=None, help='timing preset or object (default: the server default)')
    ap.add_argument("--shapes", default=None, help="evaluate only these shape sets (comma list; 'first' = each task's first, its KernelBench default)")
    ap.add_argument("--out", help="write the rows as JSON here")
    ap.add_argument("--md", help="write the markdown table here")
    args = ap.parse_args()
    if not args.kevald and not args.server:
        ap.error("give --kevald or --server")

    names = parse_names(args.names)
    subs, meta, skipped = [], [], []
    for path in task_paths(args.tasks):
        doc = json.load(open(path))
        if "buffers" not in doc or args.only not in doc["name"]:
            continue
        if names is not None and doc["name"] not in names:
            continue
        sub, how = candidate_for(path, doc)
        if sub is None:
            skipped.append((doc["name"], how))
            continue
        if args.timing:
            sub["timing"] = json.loads(args.timing) if args.timing.startswith("{") else args.timing
        if args.shapes:
            sets = [doc["shapes"][0]["name"]] if args.shapes == "first" else \
                [n for n in args.shapes.split(",") if n in {x["name"] for x in doc["shapes"]}]
            if sets:
                sub["shapes"] = sets
        sub["tags"] = {"run_id": "selfeval", "labels": {"candidate": how}}
        subs.append(sub)
        meta.append((doc, how))

    proc = tmp = None
    base = args.server
    if args.kevald:
        proc, base, tmp = start_server(args.kevald, args.gpus)
    t0 = time.time()
    ids = []
    for i in range(0, len(subs), 64):
        code, body = http("POST", base + "/v1/submissions", {"submissions": subs[i:i + 64]})
        if code != 202:
            sys.exit("selfeval: batch refused: %s %s" % (code, json.dumps(body)[:2000]))
        ids += body["ids"]
    results = {}
    for sid in ids:
        while True:
            code, body = http("GET", "%s/v1/submissions/%d?wait=600" % (base, sid))
            if code == 200 and body.get("state") == "done":
                results[sid] = body
                break
    wall = time.time() - t0

    rows = []
    for sid, (doc, how) in zip(ids, meta):
        res = results[sid].get("result") or {}
        shapes = {s["shape"]: s for s in (res.get("timing") or {}).get("shapes", [])}
        first = doc["shapes"][0]["name"]
        t = shapes.get(first, {})
        ref_ms = (t.get("reference") or {}).get("median_ms")
        cand_ms = (t.get("candidate") or {}).get("median_ms")
        eager = (doc.get("provenance") or {}).get("h100_torch_eager_ms")
        rows.append({
            "task": doc["name"], "category": doc.get("category"), "candidate": how,
            "verdict": results[sid].get("verdict"), "feedback": res.get("feedback", "")[:200],
            "ref_ms": ref_ms, "cand_ms": cand_ms,
            "self_speedup": (ref_ms / cand_ms) if ref_ms and cand_ms else None,
            "precision": (t.get("reference") or {}).get("precision"),
            "eager_ms": eager, "ref_over_eager": (ref_ms / eager) if ref_ms and eager else None,
            "gpu_busy_ms": res.get("gpu_busy_ms"), "wall_ms": res.get("wall_ms"),
            "roofline_min_ms": (t.get("roofline") or {}).get("min_ms"),
            "speedup_vs": t.get("speedup_vs"), "roofline_fraction": t.get("roofline_fraction"),
            "gpu": (res.get("gpu") or {}).get("name"),
        })
    if proc:
        proc.terminate()
        proc.wait(timeout=60)

    def f(v, fmt):
        return fmt % v if isinstance(v, (int, float)) else "-"

    lines = ["| task | verdict | candidate | kevald reference ms (default) | self speedup | PyTorch eager ms (published H100) | reference / eager |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            r["task"], r["verdict"], r["candidate"], f(r["ref_ms"], "%.4g"), f(r["self_speedup"], "%.3f"),
            f(r["eager_ms"], "%.4g"), f(r["ref_over_eager"], "%.2f")))
    for name, why in skipped:
        lines.append("| %s | skipped | - | - | - | - | - |  <!-- %s -->" % (name, why))
    correct = sum(r["verdict"] == "correct" for r in rows)
    sp = sorted(r["self_speedup"] for r in rows if r["self_speedup"])
    summary = ("%d tasks evaluated in %.1f s (%d correct, %d skipped); self speedup median %.3f, "
               "5th-95th percentile %.3f-%.3f" % (
                   len(rows), wall, correct, len(skipped), sp[len(sp) // 2] if sp else 0,
                   sp[len(sp) // 20] if sp else 0, sp[(len(sp) * 19) // 20] if sp else 0))
    print("\n".join(lines))
    print(summary)
    for r in rows:
        if r["verdict"] != "correct":
            print("NOT CORRECT %s: %s" % (r["task"], r["feedback"]))
    if args.out:
        json.dump({"rows": rows, "skipped": skipped, "wall_s": wall, "summary": summary}, open(args.out, "w"), indent=1)
    if args.md:
        open(args.md, "w").write("\n".join(lines) + "\n\n" + summary + "\n")
    return 0 if correct == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
