#!/usr/bin/env python3
"""Throughput benchmark: submit a corpus (bench/throughput/make_corpus.py)
through kevald's HTTP API in batches like an RL trainer, wait for every
result with long-polls, and report evaluations per minute, the verdict
counts, GPU busy fractions and end-to-end latencies; then the latency of a
single small submission (?wait=) on the idle server, with distinct sources
(compile cache misses) and with one repeated source (cache hits).

Either --server URL (a running server) or --kevald PATH (start
`kevald serve` on a free port with a temporary database; --gpus chooses the
GPUs, `none` for compile-only hosts).

Shape sets (--shapes): submissions cannot choose shape sets, so
`small` (default) sends each library task inline (`task_spec`, fetched from
GET /v1/tasks/NAME) without its first, KernelBench-sized shape set: the
kernels run on the task's "small" and "tiny" sets. `library` sends the task
by name: all shape sets, the KernelBench default size included (GBs per
buffer for several of these tasks: slow).

Outputs: a markdown table on stdout, --json FILE (all figures), --md FILE.
Python 3 standard library only.
"""
import argparse
import concurrent.futures as cf
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime


class Api:
    def __init__(self, base, token=None, timeout=120):
        self.base = base.rstrip("/")
        self.token = token
        self.timeout = timeout

    def call(self, method, path, body=None, timeout=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                return e.code, json.loads(raw)
            except ValueError:
                return e.code, {"detail": raw.decode(errors="replace")}


def pct(values, p):
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def ts(s):
    """RFC 3339 with milliseconds -> seconds since the epoch."""
    if not s:
        return None
    return datetime.strptime(s.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


# ---------------------------------------------------------------- server

class Server:
    def __init__(self, kevald, gpus, tasks, workdir, extra):
        self.dir = workdir
        self.db = os.path.join(workdir, "kevald.db")
        self.port_file = os.path.join(workdir, "port")
        self.log_path = os.path.join(workdir, "server.log")
        cmd = [kevald, "serve", "--listen", "127.0.0.1:0", "--db", self.db,
               "--port-file", self.port_file, "--gpus", gpus, "--log-level", "warn",
               "--shutdown-grace-s", "2"]
        if tasks:
            cmd += ["--tasks", tasks]
        cmd += extra
        self.cmd = cmd
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("kevald serve exited with %s; log %s:\n%s" % (
                    self.proc.returncode, self.log_path, open(self.log_path).read()[-3000:]))
            if os.path.exists(self.port_file) and open(self.port_file).read().strip():
                break
            time.sleep(0.05)
        else:
            raise RuntimeError("kevald serve wrote no port file in 60 s")
        self.url = "http://127.0.0.1:%s" % open(self.port_file).read().strip()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def wait_ready(api, need_gpu, timeout_s=120, all_workers=True):
    """Until /readyz is 200 and, with @need_gpu, every GPU has a ready worker; with @all_workers
    every GPU worker (the standbys too): the measurement then starts on a started server,
    not during the standbys' CUDA context creations, which the driver serializes across the host
    and which take seconds at 4 GPUs (BENCHMARKS.md)."""
    deadline = time.time() + timeout_s
    last = None
    while time.time() < deadline:
        try:
            code, body = api.call("GET", "/readyz", timeout=10)
            last = body
            gpus = [g for g in (body or {}).get("gpus") or [] if isinstance(g, dict)]
            n_avail = (body or {}).get("gpus_available", 0) or 0
            started = all(g.get("workers_ready") == g.get("workers") for g in gpus)
            if code == 200 and (not need_gpu or (n_avail > 0 and n_avail >= len(gpus)
                                                 and (started or not all_workers))):
                return body
        except OSError as e:
            last = str(e)
        time.sleep(0.2)
    raise RuntimeError("server not ready in %d s: %s" % (timeout_s, json.dumps(last)[:2000]))


# ---------------------------------------------------------------- corpus

def inline_tasks(api, names):
    """name -> task_spec without the first (KernelBench default) shape set."""
    out = {}
    for n in sorted(names):
        code, doc = api.call("GET", "/v1/tasks/" + n)
        if code != 200:
            raise RuntimeError("GET /v1/tasks/%s: %s %s" % (n, code, doc))
        if len(doc.get("shapes", [])) > 1:
            doc["shapes"] = doc["shapes"][1:]
        out[n] = doc
    return out


def prepare(items, args, specs):
    subs = []
    for it in items:
        s = json.loads(json.dumps(it["submission"]))
        if args.mode == "compile":
            s["mode"] = "compile"
        if args.timing == "default":
            s.pop("timing", None)  # the server's default timing budget
        elif args.timing:
            s["timing"] = args.timing
        if specs is not None and "task" in s:
            s["task_spec"] = specs[s.pop("task")]
        subs.append(s)
    return subs


# ---------------------------------------------------------------- the corpus run

def wait_done(api, sid, timeout_s, poll_s):
    """Long-poll one submission until done; (submission, time seen done)."""
    deadline = time.time() + timeout_s
    while True:
        left = deadline - time.time()
        if left <= 0:
            return None, time.time()
        try:
            code, sub = api.call("GET", "/v1/submissions/%d?wait=%d" % (sid, max(1, min(poll_s, int(left) + 1))),
                                 timeout=poll_s + 30)
        except OSError:
            time.sleep(0.5)
            continue
        if code == 200 and sub.get("state") == "done":
            return sub, time.time()
        if code not in (200, 202):
            time.sleep(0.5)


def run_corpus(api, subs, items, args):
    n = len(subs)
    results = [None] * n
    submit_t = [None] * n
    done_t = [None] * n
    futures = {}
    pool = cf.ThreadPoolExecutor(max_workers=min(max(n, 1), args.wait_threads))
    t0 = time.time()
    for start in range(0, n, args.batch):
        chunk = subs[start:start + args.batch]
        while True:
            t_sub = time.time()
            code, body = api.call("POST", "/v1/submissions", {"submissions": chunk})
            if code == 202:
                break
            if code in (429, 503):
                time.sleep(1)
                continue
            raise RuntimeError("batch POST at item %d: %s %s" % (start, code, json.dumps(body)[:2000]))
        for k, sid in enumerate(body["ids"]):
            i = start + k
            submit_t[i] = t_sub
            futures[pool.submit(wait_done, api, sid, args.timeout, args.poll)] = i
        if args.pace > 0:
            time.sleep(args.pace)
    t_submitted = time.time()
    hit_deadline = False
    try:
        left = None if not args.deadline else max(1.0, args.deadline - (time.time() - t0))
        for f in cf.as_completed(futures, timeout=left):
            i = futures[f]
            results[i], done_t[i] = f.result()
    except cf.TimeoutError:
        hit_deadline = True
    if hit_deadline:
        t1 = time.time()
        print("deadline of %d s reached: %d of %d finished" % (
            args.deadline, sum(1 for r in results if r is not None), n), file=sys.stderr)
        pool.shutdown(wait=False, cancel_futures=True)
    else:
        t1 = max(t for t in done_t if t is not None) if any(done_t) else time.time()
        pool.shutdown()
    return results, submit_t, done_t, t0, t_submitted, t1


class Nvml:
    """GPU utilization as NVML reports it (`nvidia-smi -lms 100`: the percent of each sample period
    in which a kernel of any process ran), sampled during the corpus run; None without nvidia-smi."""

    def __init__(self):
        self.p = None
        self.rows = []
        if shutil.which("nvidia-smi"):
            self.p = subprocess.Popen(["nvidia-smi", "--query-gpu=index,utilization.gpu",
                                       "--format=csv,noheader,nounits", "-lms", "100"],
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            try:
                i, u = (int(x) for x in line.split(","))
            except ValueError:
                continue
            self.rows.append((time.time(), i, u))

    def mean(self, t0, t1):
        if self.p is None:
            return None
        self.p.terminate()
        inside = [u for t, _, u in self.rows if t0 <= t <= t1]
        return round(statistics.mean(inside), 1) if inside else None


class CpuSampler:
    """Where the host's CPU went during the corpus run (Linux /proc): the host's busy share, the
    server's threads by name (`dispatch` is the dispatcher's loop, `MHD-worker` the HTTP
    threads) and the server's child processes by name (kevald-compile, kevald-gpu; a worker that
    exited during the run is missing from the second snapshot and not counted)."""

    def __init__(self, pid):
        self.pid = pid
        self.tick = os.sysconf("SC_CLK_TCK")
        self.a = self._snap()

    @staticmethod
    def _stat_fields(path):
        with open(path) as fh:
            s = fh.read()
        comm = s[s.index("(") + 1:s.rindex(")")]
        return comm, s[s.rindex(")") + 2:].split()

    def _snap(self):
        snap = {"threads": {}, "children": {}}
        with open("/proc/stat") as fh:
            cpu = [int(x) for x in fh.readline().split()[1:]]
        snap["host"] = (sum(cpu), cpu[3] + cpu[4])  # total, idle + iowait
        try:
            for tid in os.listdir("/proc/%d/task" % self.pid):
                comm, f = self._stat_fields("/proc/%d/task/%s/stat" % (self.pid, tid))
                snap["threads"][tid] = (comm, int(f[11]) + int(f[12]))
        except OSError:
            pass
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                comm, f = self._stat_fields("/proc/%s/stat" % p)
            except (OSError, ValueError):
                continue
            if int(f[1]) == self.pid:
                snap["children"][p] = (comm, int(f[11]) + int(f[12]))
        return snap

    def report(self):
        b = self._snap()
        dt, di = b["host"][0] - self.a["host"][0], b["host"][1] - self.a["host"][1]
        out = {"host_busy_pct": round(100.0 * (dt - di) / dt, 1) if dt > 0 else None, "cores": os.cpu_count(),
               "server_threads_s": {}, "children_s": {}}
        for key, dst in (("threads", "server_threads_s"), ("children", "children_s")):
            for k, (comm, t) in b[key].items():
                t0 = self.a[key].get(k, (comm, 0))[1]
                out[dst][comm] = round(out[dst].get(comm, 0) + (t - t0) / self.tick, 2)
        return out


def summarize_corpus(items, results, submit_t, done_t, t0, t_submitted, t1, mode):
    wall = t1 - t0
    verdicts = {}
    expect_key = "expect_compile" if mode == "compile" else "expect"
    matched = 0
    mism = []
    gpu_busy = 0.0
    gpu_active = 0.0
    gpu_wall = 0.0
    lat = []
    lat_server = []
    precisions = []
    compile_ms = []
    unfinished = 0
    per_gpu = {}
    by_verdict = {}
    for it, r, ts_, td in zip(items, results, submit_t, done_t):
        if r is None:
            unfinished += 1
            continue
        v = r.get("verdict")
        verdicts[v] = verdicts.get(v, 0) + 1
        if v == it[expect_key]:
            matched += 1
        else:
            mism.append({"id": it["id"], "task": it["task"], "category": it["category"],
                         "variant": it["variant"], "expected": it[expect_key], "got": v,
                         "error": ((r.get("result") or {}).get("error") or {}).get("message", "")[:300]})
        res = r.get("result") or {}
        gb = res.get("gpu_busy_ms")
        ga = res.get("gpu_active_ms")
        gw = res.get("wall_ms")
        if isinstance(gb, (int, float)):
            gpu_busy += gb
        if isinstance(ga, (int, float)):
            gpu_active += ga
        if isinstance(gw, (int, float)):
            gpu_wall += gw
        bv = by_verdict.setdefault(v, {"n": 0, "with_wall_ms": 0, "wall_ms": 0.0, "gpu_busy_ms": 0.0,
                                       "gpu_active_ms": 0.0, "phases_ms": {}})
        for ph, ms in (res.get("phases_ms") or {}).items():  # the worker's own breakdown (newer builds)
            if isinstance(ms, (int, float)):
                bv["phases_ms"][ph] = bv["phases_ms"].get(ph, 0.0) + ms
        if isinstance(ga, (int, float)):
            bv["gpu_active_ms"] += ga
        bv["n"] += 1
        if isinstance(gw, (int, float)):
            bv["with_wall_ms"] += 1
            bv["wall_ms"] += gw
        if isinstance(gb, (int, float)):
            bv["gpu_busy_ms"] += gb
        g = (res.get("gpu") or {}).get("index")
        if g is not None:
            per_gpu[g] = per_gpu.get(g, 0) + 1
        lat.append(td - ts_)
        a, b = ts(r.get("created_at")), ts(r.get("finished_at"))
        if a and b:
            lat_server.append(b - a)
        cm = (res.get("compile") or {}).get("compile_ms")
        if isinstance(cm, (int, float)) and not (res.get("compile") or {}).get("cache_hit"):
            compile_ms.append(cm)
        for sh in ((res.get("timing") or {}).get("shapes") or []):
            p = (sh.get("candidate") or {}).get("precision")
            if isinstance(p, (int, float)):
                precisions.append(p)
    done = len(items) - unfinished
    # steady state: the rate between the 10th and the 90th percentile of completions
    # (no ramp-up, no tail of a last slow job)
    dts = sorted(t for t in done_t if t is not None)
    steady = None
    if len(dts) >= 20:
        a_, b_ = int(len(dts) * 0.1), int(len(dts) * 0.9)
        if dts[b_] > dts[a_]:
            steady = round((b_ - a_) / (dts[b_] - dts[a_]) * 60.0, 1)
    out = {
        "submissions": len(items),
        "finished": done,
        "unfinished": unfinished,
        "wall_s": round(wall, 3),
        "submit_s": round(t_submitted - t0, 3),
        "evals_per_min": round(done / wall * 60.0, 1) if wall > 0 else None,
        "evals_per_min_steady": steady,
        "verdicts": dict(sorted(verdicts.items(), key=lambda kv: -kv[1])),
        "verdict_as_expected": matched,
        "verdict_unexpected": mism,
        "gpu_busy_ms_sum": round(gpu_busy, 1),
        "gpu_active_ms_sum": round(gpu_active, 1),
        "gpu_wall_ms_sum": round(gpu_wall, 1),
        "jobs_per_gpu": {str(k): v for k, v in sorted(per_gpu.items())},
        "gpu_worker_time_by_verdict": {k: {"n": v["n"], "with_wall_ms": v["with_wall_ms"],
                                           "wall_ms": round(v["wall_ms"], 1), "gpu_busy_ms": round(v["gpu_busy_ms"], 1),
                                           "gpu_active_ms": round(v["gpu_active_ms"], 1),
                                           "phases_ms": {p_: round(x, 1) for p_, x in v["phases_ms"].items()}}
                                       for k, v in by_verdict.items()},
        "latency_s": {"p50": pct(lat, 50), "p90": pct(lat, 90), "p99": pct(lat, 99), "max": max(lat) if lat else None},
        "latency_server_s": {"p50": pct(lat_server, 50), "p99": pct(lat_server, 99)},
        "compile_ms_uncached": {"n": len(compile_ms), "p50": pct(compile_ms, 50), "p99": pct(compile_ms, 99)},
        "timing_precision": {"n": len(precisions), "p50": pct(precisions, 50), "max": max(precisions) if precisions else None},
    }
    return out


# ---------------------------------------------------------------- single-submission latency

RELU_SRC = '''// latency probe %s
extern "C" __global__ void relu(const float* x, float* y, unsigned long long n)
{
        unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
                y[i] = x[i] > %s ? x[i] : 0.0f;
}
'''


def latency_probe(api, args, specs, distinct, count):
    task = "l1_19_relu"
    tag = "%x" % int(time.time() * 1000)
    lat = []
    server_lat = []
    verdicts = {}
    hits = 0
    for k in range(count):
        # distinct: a new comment each time, so the compile cache misses
        src = RELU_SRC % (("distinct %s-%d" % (tag, k)) if distinct else "same", "0.0f")
        sub = {"source": src,
               "plan": [{"kernel": "relu", "grid": ["ceil_div(B * D, 256)"], "block": [256],
                         "args": ["x", "y", {"type": "u64", "value": "B * D"}]}],
               "timing": args.latency_timing, "priority": "interactive",
               "tags": {"run_id": "throughput-latency"}}
        if args.mode == "compile":
            sub["mode"] = "compile"
        if specs is not None:
            sub["task_spec"] = specs[task]
        else:
            sub["task"] = task
        t = time.time()
        code, body = api.call("POST", "/v1/submissions?wait=120", sub, timeout=180)
        if code == 202:
            body, _ = wait_done(api, body["id"], 300, 60)
        el = time.time() - t
        if body is None:
            continue
        lat.append(el)
        v = body.get("verdict")
        verdicts[v] = verdicts.get(v, 0) + 1
        a, b = ts(body.get("created_at")), ts(body.get("finished_at"))
        if a and b:
            server_lat.append(b - a)
        if ((body.get("result") or {}).get("compile") or {}).get("cache_hit"):
            hits += 1
    return {"n": len(lat), "distinct_sources": distinct, "cache_hits": hits, "verdicts": verdicts,
            "p50_ms": round(pct(lat, 50) * 1000, 1) if lat else None,
            "p99_ms": round(pct(lat, 99) * 1000, 1) if lat else None,
            "min_ms": round(min(lat) * 1000, 1) if lat else None,
            "server_p50_ms": round(pct(server_lat, 50) * 1000, 1) if server_lat else None}


# ---------------------------------------------------------------- report

def fmt(v, nd=1):
    if v is None:
        return "-"
    if isinstance(v, float):
        return "%.*f" % (nd, v)
    return str(v)


def markdown(rep):
    c = rep["corpus"]
    lines = []
    lines.append("| metric | value |")
    lines.append("|---|---|")
    lines.append("| device | %s |" % rep["device"])
    lines.append("| mode / shapes / timing | %s / %s / %s |" % (rep["mode"], rep["shapes"], json.dumps(rep["timing"])))
    lines.append("| submissions (tasks) | %d (%d) |" % (c["submissions"], rep["tasks"]))
    lines.append("| finished / unfinished | %d / %d |" % (c["finished"], c["unfinished"]))
    lines.append("| wall clock, first submit to last result | %.1f s |" % c["wall_s"])
    lines.append("| **evaluations per minute** | **%s** (%s per GPU) |" % (fmt(c["evals_per_min"]), fmt(rep.get("evals_per_min_per_gpu"))))
    lines.append("| evaluations per minute, steady state (10th to 90th percentile of completions) | %s |" % fmt(c.get("evals_per_min_steady")))
    lines.append("| verdicts | %s |" % ", ".join("%s %d" % kv for kv in c["verdicts"].items()))
    lines.append("| verdict as generated | %d / %d |" % (c["verdict_as_expected"], c["finished"]))
    if rep["mode"] != "compile":
        lines.append("| **GPU busy** = sum(gpu_active_ms) / (wall × GPUs): all of the worker's GPU work in flight "
                     "(plans, L2 flushes, input generation, comparisons; concurrent checks count once each, so it "
                     "can pass 100%%) | **%s%%** |" % fmt(rep.get("gpu_active_pct")))
        lines.append("| NVML utilization (nvidia-smi, 100 ms samples: a kernel of any process ran), mean over the run "
                     "| %s%% |" % fmt(rep.get("nvml_util_pct")))
        lines.append("| plan time = sum(gpu_busy_ms) / (wall × GPUs): candidate and reference plan executions only "
                     "| %s%% |" % fmt(rep.get("gpu_busy_pct")))
        lines.append("| worker occupied = sum(wall_ms) / (wall × GPUs) | %s%% |" % fmt(rep.get("gpu_occupied_pct")))
    cpu = rep.get("cpu")
    if cpu:
        lines.append("| CPU over the run: host busy (cores); server threads, s; child processes, s | %s%% (%s); %s; %s |" % (
            fmt(cpu["host_busy_pct"]), cpu["cores"],
            ", ".join("%s %.2f" % kv for kv in sorted(cpu["server_threads_s"].items(), key=lambda kv: -kv[1])),
            ", ".join("%s %.2f" % kv for kv in sorted(cpu["children_s"].items(), key=lambda kv: -kv[1]))))
        lines.append("| dispatcher's GPU busy (workers[].busy_s) / (wall × GPUs); GPU worker restarts | %s%%; %s |" % (
            fmt(rep.get("dispatcher_busy_pct")), fmt(rep.get("gpu_worker_restarts"))))
        gt = rep.get("gpu_time_pct") or {}
        lines.append("| the dispatcher's GPU clock (/readyz gpus[].time_s): a job running / no worker ready / "
                     "nothing to run | %s%% / %s%% / %s%% |" % (fmt(gt.get("running")), fmt(gt.get("no_worker")),
                                                              fmt(gt.get("no_work"))))
        lines.append("| GPU busy while it had work = sum(gpu_active_ms) / (running + no_worker) | %s%% |" % fmt(
            rep.get("gpu_active_while_working_pct")))
        lines.append("| jobs per GPU | %s |" % json.dumps(c["jobs_per_gpu"]))
        lines.append("| GPU worker time by verdict: Σ wall_ms (jobs reporting it / all) | %s |" % "; ".join(
            "%s %.1f s, GPU active %.1f s (%d/%d)" % (k, v["wall_ms"] / 1000.0, v.get("gpu_active_ms", 0) / 1000.0,
                                                      v["with_wall_ms"], v["n"])
            for k, v in sorted(c["gpu_worker_time_by_verdict"].items(), key=lambda kv: -kv[1]["wall_ms"])
            if v["with_wall_ms"]))
        lines.append("| timing precision achieved, p50 / max | %s / %s |" % (
            fmt(c["timing_precision"]["p50"], 4), fmt(c["timing_precision"]["max"], 4)))
    lines.append("| end-to-end latency per submission p50 / p90 / p99 | %s / %s / %s s |" % (
        fmt(c["latency_s"]["p50"], 2), fmt(c["latency_s"]["p90"], 2), fmt(c["latency_s"]["p99"], 2)))
    lines.append("| uncached compile_ms p50 / p99 | %s / %s |" % (
        fmt(c["compile_ms_uncached"]["p50"]), fmt(c["compile_ms_uncached"]["p99"])))
    for key, label in (("latency_distinct", "single small submission, distinct sources (cache miss)"),
                       ("latency_same", "single small submission, same source (cache hit)")):
        L = rep.get(key)
        if L:
            lines.append("| %s: p50 / p99 (n, hits) | **%s / %s ms** (n=%d, %d hits; server p50 %s ms) |" % (
                label, fmt(L["p50_ms"]), fmt(L["p99_ms"]), L["n"], L["cache_hits"], fmt(L["server_p50_ms"])))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--server", help="base URL of a running server, e.g. http://127.0.0.1:8080")
    g.add_argument("--kevald", help="path of the kevald binary: start a server with a temporary database")
    ap.add_argument("--gpus", default="auto", help="with --kevald: --gpus for kevald serve (auto, none, 0,1,...)")
    default_tasks = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tasks")
    ap.add_argument("--tasks", default=os.path.normpath(default_tasks) if os.path.isdir(default_tasks) else None,
                    help="with --kevald: the task library folder (default: this checkout's tasks/)")
    ap.add_argument("--serve-arg", action="append", default=[], help="with --kevald: extra kevald serve argument (repeatable)")
    ap.add_argument("--token", default=os.environ.get("KEVALD_TOKEN"), help="bearer token (default $KEVALD_TOKEN)")
    ap.add_argument("--corpus", default="corpus.json", help="corpus file from make_corpus.py")
    ap.add_argument("--limit", type=int, default=0, help="use only the first N corpus items (0: all)")
    ap.add_argument("--only-expect", help="use only the items generated to get these verdicts (comma list, e.g. correct)")
    ap.add_argument("--mode", choices=["full", "compile"], default="full", help="full (default) or compile-only")
    ap.add_argument("--shapes", choices=["small", "library"], default="small",
                    help="small: inline tasks without the KernelBench default shape set (default); library: task by name")
    ap.add_argument("--timing", help='override every submission\'s timing: fast, precise, default (no timing field: '
                    'the server\'s default), or JSON')
    ap.add_argument("--batch", type=int, default=128, help="submissions per POST (default 128)")
    ap.add_argument("--pace", type=float, default=0.0, help="seconds between batch POSTs (default 0: all at once)")
    ap.add_argument("--wait-threads", type=int, default=512, help="concurrent long-polls (default 512)")
    ap.add_argument("--poll", type=int, default=60, help="long-poll seconds per request (default 60)")
    ap.add_argument("--timeout", type=int, default=1800, help="give up on a submission after S seconds (default 1800)")
    ap.add_argument("--deadline", type=int, default=0,
                    help="stop waiting S seconds after the first submit and report what finished (default 0: wait for all)")
    ap.add_argument("--latency", type=int, default=30, help="single-submission probes of each kind (default 30; 0: skip)")
    ap.add_argument("--latency-timing", default='{"budget_ms": 20, "target_precision": 0.2, "min_trials": 3, "max_trials": 20, "warmup": 1}',
                    help="timing of the latency probes (JSON; default a tiny budget)")
    ap.add_argument("--json", dest="json_out", help="write the full report as JSON here")
    ap.add_argument("--results", help="write every submission's verdict, timing and phases_ms here (JSON lines)")
    ap.add_argument("--md", help="write the markdown table here")
    ap.add_argument("--keep-log", help="with --kevald: copy the server's log here when done")
    ap.add_argument("--label", default="", help="free text stored in the report")
    ap.add_argument("--no-wait-standbys", action="store_true",
                    help="start as soon as every GPU has one ready worker (before session 12: the standby "
                         "workers' start-up then overlaps the first seconds of the run)")
    args = ap.parse_args()
    if not 1 <= args.batch <= 16384:
        ap.error("--batch must be in 1..16384")
    if not 1 <= args.wait_threads <= 4096:
        ap.error("--wait-threads must be in 1..4096")
    if not 1 <= args.poll <= 600:
        ap.error("--poll must be in 1..600")
    if args.limit < 0 or args.latency < 0 or args.deadline < 0:
        ap.error("--limit, --latency and --deadline must be >= 0")
    if args.timing and args.timing not in ("fast", "precise", "default"):
        try:
            args.timing = json.loads(args.timing)
        except ValueError as e:
            ap.error("--timing: %s" % e)
    try:
        args.latency_timing = json.loads(args.latency_timing) if args.latency_timing not in ("fast", "precise") else args.latency_timing
    except ValueError as e:
        ap.error("--latency-timing: %s" % e)
    try:
        corpus = json.load(open(args.corpus))
    except (OSError, ValueError) as e:
        ap.error("--corpus %s: %s" % (args.corpus, e))
    items = corpus["items"]
    if args.only_expect:
        items = [it for it in items if it["expect"] in args.only_expect.split(",")]
    items = items[:args.limit] if args.limit else items

    server = None
    tmp = None
    try:
        if args.kevald:
            tmp = tempfile.mkdtemp(prefix="kevald-throughput-")
            server = Server(args.kevald, args.gpus, args.tasks, tmp, args.serve_arg)
            base = server.url
        else:
            base = args.server
        api = Api(base, args.token)
        ready = wait_ready(api, need_gpu=(args.mode == "full"), all_workers=not args.no_wait_standbys)
        gpus = ready.get("gpus") or []
        ngpu = max(len(gpus), ready.get("gpus_available", 0) or 0)
        device = ", ".join(sorted({(g.get("name") or "?") if isinstance(g, dict) else str(g) for g in gpus})) or "no GPU (compile-only)"
        device = "%d × %s" % (ngpu, device) if ngpu else device
        print("server %s ready: %s, %d compile workers, mode %s" % (
            base, device, (ready.get("compile_workers") or {}).get("configured", 0), ready.get("mode")), file=sys.stderr)

        specs = None
        if args.shapes == "small":
            specs = inline_tasks(api, {it["task"] for it in items} | ({"l1_19_relu"} if args.latency else set()))
        subs = prepare(items, args, specs)
        gpu_before = {g.get("index"): g for g in gpus if isinstance(g, dict)}
        print("submitting %d kernels in batches of %d ..." % (len(subs), args.batch), file=sys.stderr)
        nvml = Nvml()
        cpu = CpuSampler(server.proc.pid) if server and os.path.isdir("/proc/%d" % server.proc.pid) else None
        results, submit_t, done_t, t0, t_sub, t1 = run_corpus(api, subs, items, args)
        nvml_util = nvml.mean(t0, t1)
        cpu_use = cpu.report() if cpu else None
        if args.results:
            with open(args.results, "w") as fh:
                for it, r in zip(items, results):
                    res = (r or {}).get("result") or {}
                    err = res.get("error") or {}
                    fh.write(json.dumps({"id": it["id"], "category": it["category"], "verdict": (r or {}).get("verdict"),
                                         "error": {k: err[k] for k in ("kind", "name", "surfaced_ms", "after_limit",
                                                                       "fenced", "access", "buffer", "index")
                                                   if k in err} or None,
                                         "fenced": (res.get("correctness") or {}).get("fenced"),
                                         "wall_ms": res.get("wall_ms"), "phases_ms": res.get("phases_ms"),
                                         "gpu_active_ms": res.get("gpu_active_ms"),
                                         "timing": [{k: sh.get(k) for k in ("shape", "stop", "launches_per_trial",
                                                                            "launched_as", "runs_checked", "speedup", "phases_ms")}
                                                    | {"trials": (sh.get("candidate") or {}).get("trials"),
                                                       "cand_ms": (sh.get("candidate") or {}).get("median_ms"),
                                                       "precision": (sh.get("candidate") or {}).get("precision")}
                                                    for sh in ((res.get("timing") or {}).get("shapes") or [])]})
                             + "\n")
        c = summarize_corpus(items, results, submit_t, done_t, t0, t_sub, t1, args.mode)
        rep = {"label": args.label, "device": device, "gpus": ngpu, "mode": args.mode, "shapes": args.shapes,
               "timing": args.timing or items[0]["submission"].get("timing") if items else None,
               "batch": args.batch, "tasks": len({it["task"] for it in items}), "corpus": c,
               "compile_workers": (ready.get("compile_workers") or {}).get("configured"),
               "waited_for_standbys": not args.no_wait_standbys}
        rep["nvml_util_pct"] = nvml_util
        rep["cpu"] = cpu_use
        if ngpu and c["wall_s"] > 0:
            rep["evals_per_min_per_gpu"] = round(c["evals_per_min"] / ngpu, 1)
            rep["gpu_busy_pct"] = round(100.0 * c["gpu_busy_ms_sum"] / (c["wall_s"] * 1000.0 * ngpu), 1)
            rep["gpu_active_pct"] = round(100.0 * c["gpu_active_ms_sum"] / (c["wall_s"] * 1000.0 * ngpu), 1)
            rep["gpu_occupied_pct"] = round(100.0 * c["gpu_wall_ms_sum"] / (c["wall_s"] * 1000.0 * ngpu), 1)
        # the dispatcher's own view: busy seconds and restarts per GPU worker over the corpus run
        code, after = api.call("GET", "/readyz", timeout=10)
        if isinstance(after, dict) and after.get("gpus"):
            busy = 0.0
            restarts = 0
            times = {}  # the dispatcher's clock per GPU state (running, no_worker, no_work), summed over GPUs
            for g in after["gpus"]:
                b = gpu_before.get(g.get("index"), {})
                busy += (g.get("busy_s") or 0.0) - (b.get("busy_s") or 0.0)
                restarts += (g.get("restarts") or 0) - (b.get("restarts") or 0)
                for k, v in (g.get("time_s") or {}).items():
                    times[k] = times.get(k, 0.0) + v - ((b.get("time_s") or {}).get(k) or 0.0)
            rep["dispatcher_gpu_busy_s"] = round(busy, 2)
            rep["gpu_worker_restarts"] = restarts
            if ngpu and c["wall_s"] > 0:
                rep["dispatcher_busy_pct"] = round(100.0 * busy / (c["wall_s"] * ngpu), 1)
            if sum(times.values()) > 0:
                tot = sum(times.values())
                rep["gpu_time_s"] = {k: round(v, 3) for k, v in times.items()}
                rep["gpu_time_pct"] = {k: round(100.0 * v / tot, 1) for k, v in times.items()}
                # the GPU's own busy share of the time it had a job or waited for a worker to run one
                had_work = times.get("running", 0.0) + times.get("no_worker", 0.0)
                if had_work > 0:
                    rep["gpu_active_while_working_pct"] = round(100.0 * c["gpu_active_ms_sum"] / 1000.0 / had_work, 1)
        if args.latency and c["unfinished"]:
            print("latency probes skipped: the corpus did not finish, the server is not idle", file=sys.stderr)
        elif args.latency:
            rep["latency_distinct"] = latency_probe(api, args, specs, True, args.latency)
            rep["latency_same"] = latency_probe(api, args, specs, False, args.latency)
        code, stats = api.call("GET", "/v1/stats")
        if code == 200:
            rep["server_stats"] = {k: stats.get(k) for k in ("submissions", "cache", "workers")}
        md = markdown(rep)
        print(md)
        if c["verdict_unexpected"]:
            print("\n%d verdicts differ from the generator's intent (first 10):" % len(c["verdict_unexpected"]))
            for m in c["verdict_unexpected"][:10]:
                print("  #%d %s %s/%s: expected %s, got %s %s" % (m["id"], m["task"], m["category"], m["variant"],
                                                                m["expected"], m["got"], m["error"][:160]))
        if args.json_out:
            with open(args.json_out, "w") as fh:
                json.dump(rep, fh, indent=1)
        if args.md:
            with open(args.md, "w") as fh:
                fh.write(md + "\n")
        return 0 if c["unfinished"] == 0 else 1
    finally:
        if server:
            server.stop()
            if args.keep_log and tmp:
                shutil.copy(os.path.join(tmp, "server.log"), args.keep_log)
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)  # long-polls left behind by --deadline must not hold the exit
