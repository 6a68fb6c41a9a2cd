#!/usr/bin/python3
"""test_refs_cpu - the CPU check catches a broken reference (issue 25's rewrites).

Usage: /usr/bin/python3 tools/tasks/test_refs_cpu.py   (needs g++ and python3-numpy; ~1 minute)

For a few of the references rewritten for speed (online softmax, float4
activations, warp-scan scans, sliced reductions, block-row pooling), runs
tools/tasks/cpu_check.py's comparison with numpy on the real source (it must
pass) and on mutated copies that each break one part of the new code (the
online rescaling, the unaligned head, the cross-warp merge, the float4 tail,
the warp scan, the chunk carry, the reversed float4 store, the slice merge,
the row-tiled pooling's staging, slices, taps and edge loads); every mutant must be reported as a mismatch. The norms
are also run at shapes whose segments span several chunks (the default sets
do, the small ones do not), with chunks that are and are not 16-byte aligned. A mutation
whose text is not found once in the source is a failure too, so the test
follows the generator. Exit status 1 on any failure.
"""
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import cpu_check  # noqa: E402

L1 = os.path.join(ROOT, "tasks", "level1")
# (task file, shape set, what the mutation breaks, text, replacement)
MUTANTS = [
    ("softmax/l1_23_softmax", "tiny", "online rescaling of the sum",
     "                s = s * (double)expf(m - v);\n", ""),
    ("softmax/l1_23_softmax", "tiny", "the unaligned head of a row",
     "        if (threadIdx.x < head)\n                online_add(row[threadIdx.x], m, s);\n", ""),
    ("softmax/l1_23_softmax", "small", "the merge across warps",
     "for (int w = 1; w < WARPS; w++)", "for (int w = 2; w < WARPS; w++)"),
    ("softmax/l1_24_logsoftmax", "tiny", "the log of the sum",
     "float ls = (float)log(s);", "float ls = (float)s;"),
    ("activation/l1_19_relu", "tiny", "the scalar tail after the float4s",
     "                if (k < n)\n", "                if (k < n - 1)\n"),
    ("scan/l1_89_cumsum", "tiny", "the warp scan",
     "                                if (lane >= o)", "                                if (lane > o)"),
    ("scan/l1_89_cumsum", "small", "the carry from chunk to chunk",
     "                        carry = total;", "                        carry = {ident};"),
    ("scan/l1_91_cumsum_reverse", "small", "the reversed float4 store",
     "make_float4(r[3], r[2], r[1], r[0])", "make_float4(r[0], r[1], r[2], r[3])"),
    ("argreduce/l1_51_argmax_over_a_dimension", "small", "the merge of the slices",
     "for (int w = 1; w < TY; w++)", "for (int w = 1; w < TY - 1; w++)"),
    ("pooling/l1_42_max_pooling_2d", "tiny", "the staged row's 16-byte alignment",
     "return (la + (ih & 3) * lw) & 3;", "return la & 3;"),
    ("pooling/l1_42_max_pooling_2d", "small", "the slices of output rows",
     "r0 += slice) {", "r0 += slice + 1) {"),
    ("pooling/l1_41_max_pooling_1d", "tiny", "the window's first tap",
     "for (int kw = 0; kw < KT; kw++) {", "for (int kw = 1; kw < KT; kw++) {"),
    ("pooling/l1_44_average_pooling_1d", "tiny", "the float4 edge load",
     "v[u].w = src[iw + 3];", ""),
]

# (task file, params): segments longer than one 32768-element chunk
WIDE = [
    ("norm/l1_33_batchnorm", {"N": 2, "C": 3, "H": 301, "W": 251}),      # L 75551: 3 chunks, unaligned
    ("norm/l1_40_layernorm", {"N": 2, "C": 3, "H": 150, "W": 251}),      # L 112950: 4 chunks
    ("norm/l1_34_instancenorm", {"N": 1, "C": 2, "H": 256, "W": 256}),   # L 65536: 2 aligned chunks
]


def run(task_rel, shape, source_text=None, params=None):
    """cpu_check's result line for @task_rel at @shape (or at @params), on
    @source_text if given."""
    src_json = os.path.join(L1, task_rel + ".json")
    with open(src_json) as f:
        task = json.load(f)
    sh = next(s for s in task["shapes"] if s["name"] == shape)
    if params:
        sh = dict(params, name="wide")
    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, "task")
        os.makedirs(d)
        shutil.copy(src_json, d)
        cu = os.path.join(d, task["reference"]["source_file"])
        shutil.copy(os.path.join(os.path.dirname(src_json), task["reference"]["source_file"]), cu)
        if source_text is not None:
            with open(cu, "w") as f:
                f.write(source_text)
        return cpu_check.run_one(os.path.join(d, os.path.basename(src_json)), task, sh, tmp)


def bad(res):
    return "MISMATCH" in res or "failed" in res or "ERROR" in res


def main():
    fails = 0
    seen = set()
    for task_rel, shape, what, old, new in MUTANTS:
        with open(os.path.join(L1, task_rel + ".cu")) as f:
            text = f.read()
        old_t = old.replace("{ident}", "")
        if (task_rel, shape) not in seen:
            seen.add((task_rel, shape))
            res = run(task_rel, shape)
            ok = not bad(res)
            fails += not ok
            print("%s %-45s %-6s the reference itself: %s" % ("ok  " if ok else "FAIL", task_rel, shape, res))
        if text.count(old_t) != 1:
            fails += 1
            print("FAIL %-45s %-6s mutation text for %s found %d times" % (task_rel, shape, what,
                                                                             text.count(old_t)))
            continue
        ident = "1.0" if "cumprod" in task_rel else "0.0"
        res = run(task_rel, shape, text.replace(old_t, new.replace("{ident}", ident)))
        caught = bad(res)
        fails += not caught
        print("%s %-45s %-6s broken %s: %s" % ("ok  " if caught else "FAIL", task_rel, shape, what,
                                               "caught" if caught else "NOT CAUGHT " + res))
    for task_rel, params in WIDE:
        res = run(task_rel, "small", params=params)
        ok = not bad(res)
        fails += not ok
        print("%s %-45s %-6s %s: %s" % ("ok  " if ok else "FAIL", task_rel, "wide",
                                        " ".join("%s=%d" % kv for kv in params.items()), res))
    print("%d failures" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
