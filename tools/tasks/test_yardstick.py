#!/usr/bin/env python3
"""test_yardstick - the pure parts of the yardstick table (tools/tasks/yardstick.py,
gen_table.py's timing merge) and check_tasks.py's reference_slower_note rule,
without a GPU.

Usage: python3 tools/tasks/test_yardstick.py   (also `meson test task-yardstick`)
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_tasks  # noqa: E402
import gen_table  # noqa: E402
import yardstick as y  # noqa: E402

FAILS = []


def expect(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL " + what)


def close(a, b, rel=1e-9):
    return a is not None and b is not None and abs(a - b) <= rel * max(abs(a), abs(b))


def task(name="l1_23_softmax", flops="5 * B * D", bytes_="8 * B * D", dtypes=("f32", "f32"),
         note=None):
    t = {"name": name, "category": "softmax", "provenance": {},
         "shapes": [{"name": "default", "B": 4096, "D": 393216}, {"name": "tiny", "B": 5, "D": 33}],
         "buffers": [{"name": "b%d" % i, "dtype": d} for i, d in enumerate(dtypes)]}
    if flops:
        t["flops"] = flops
    if bytes_:
        t["bytes"] = bytes_
    if note:
        t["provenance"]["reference_slower_note"] = note
    return t


def test_peaks():
    peaks = y.load_peaks()
    h100 = y.device_peaks(peaks, "NVIDIA H100 80GB HBM3")
    expect(h100 is not None and h100["bw"] == 3.35e12 and h100["f32"] == 494.7e12,
           "H100 SXM peaks read from worker/gpu/judge_timing.c: %r" % (h100,))
    pcie = y.device_peaks(peaks, "NVIDIA H100 PCIe")
    expect(pcie is not None and pcie["bw"] == 2.0e12, "H100 PCIe matched before H100: %r" % (pcie,))
    h200 = y.device_peaks(peaks, "NVIDIA H200")
    expect(h200 is not None and h200["bw"] == 4.8e12, "H200 peaks: %r" % (h200,))
    expect(y.device_peaks(peaks, "NVIDIA GeForce RTX 4090") is None, "unknown device: no peaks")
    try:
        y.parse_peaks("int main(void) { return 0; }")
        expect(False, "parse_peaks without the function raises")
    except ValueError:
        pass


def test_roofline():
    peaks = y.load_peaks()
    h100 = y.device_peaks(peaks, "NVIDIA H100 80GB HBM3")
    # memory-bound: 8 * 4096 * 393216 bytes at 3.35e12 B/s
    want = 8 * 4096 * 393216 / 3.35e12 * 1e3
    expect(close(y.roofline_min_ms(task(), h100), want), "memory-bound roofline %.4f ms" % want)
    # compute-bound: flops / the f32 (TF32 tensor) peak
    t = task(flops="2 * B * D * 100000", bytes_="4")
    expect(close(y.roofline_min_ms(t, h100), 2 * 4096 * 393216 * 100000 / 494.7e12 * 1e3),
           "compute-bound roofline uses the f32 peak")
    # an integer buffer raises the peak to the int8 one, as the worker does
    t = task(flops="2 * B * D * 100000", bytes_="4", dtypes=("f32", "i64"))
    expect(close(y.roofline_min_ms(t, h100), 2 * 4096 * 393216 * 100000 / 1978.9e12 * 1e3),
           "an i64 buffer gives the int8 peak")
    expect(y.roofline_min_ms(task(flops=None, bytes_=None), h100) is None, "no flops/bytes: none")
    expect(y.roofline_min_ms(task(), None) is None, "no peaks: none")


def test_baselines():
    t = task()
    good = {"tasks": {"l1_23_softmax": {"default": {"params": {"B": 4096, "D": 393216},
                                                    "eager_ms": 6.0, "compile_ms": 4.0}}}}
    expect(y.baseline_entry(good, t) == (6.0, 4.0), "baseline entry at the default params")
    stale = {"tasks": {"l1_23_softmax": {"default": {"params": {"B": 4096, "D": 1000},
                                                     "eager_ms": 6.0, "compile_ms": 4.0}}}}
    expect(y.baseline_entry(stale, t) == (None, None), "stale params: no baseline")
    expect(y.baseline_entry(None, t) == (None, None), "no file: no baseline")
    failed = {"tasks": {"l1_23_softmax": {"default": {"params": {"B": 4096, "D": 393216},
                                                      "eager_ms": 6.0, "compile_ms": None}}}}
    expect(close(y.ratio(7.5, *y.baseline_entry(failed, t)), 1.25), "compile failed: eager alone")


def test_ratio_verdict():
    expect(close(y.ratio(5.0, 6.0, 4.0), 1.25), "ratio uses the faster baseline")
    expect(y.ratio(None, 6.0, 4.0) is None and y.ratio(5.0, None, None) is None, "ratio needs both sides")
    t = task()
    expect(y.verdict(1.25, t) == "yes", "exactly 1.25 meets the bar")
    expect(y.verdict(1.26, t) == "no", "1.26 without a note fails")
    expect(y.verdict(1.26, task(note="direct convolution; cuDNN's implicit GEMM is faster")) ==
           "explained", "1.26 with a note is explained")
    expect(y.verdict(None, t) == "no figure", "no ratio: no figure")


def test_rows_and_count():
    peaks = y.load_peaks()
    ts = [task("a_1"), task("b_2"), task("c_3", note="a reason that is long enough"), task("d_4")]
    base = {"tasks": {n: {"default": {"params": {"B": 4096, "D": 393216}, "eager_ms": 4.0,
                                      "compile_ms": 5.0}} for n in ("a_1", "b_2", "c_3")}}
    rows = y.rows(ts, {"a_1": 4.8, "b_2": 6.0, "c_3": 9.0, "d_4": 1.0}, base, peaks)
    expect([r[7].split(":")[0] for r in rows] == ["yes", "no", "explained", "no figure"],
           "verdicts per row: %r" % [r[7] for r in rows])
    expect(rows[0][6] == "1.20" and rows[0][5] != "-", "ratio and roofline cells: %r" % rows[0])
    line = y.count_line(rows)
    expect(line.startswith("1 of 4 meet 1.25x (25.0 %); 1 slower with a reason") and "(b_2)" in line
           and "1 without a figure" in line, "count line: %s" % line)


def test_timing_merge():
    order = {"l1_23_softmax": (1, 23), "l1_24_logsoftmax": (1, 24), "l1_89_cumsum": (1, 89),
             "l2_62_x": (2, 62)}
    old = ("| task | verdict | candidate | kevald reference ms (default) | self speedup | x | y |\n"
           "|---|---|---|---|---|---|---|\n"
           "| l1_89_cumsum | correct | reference | 10.81 | 1.001 | 4.68 | 2.31 |\n"
           "| l2_62_x | skipped | - | - | - | - | - |  <!-- reference is a cuBLAS step -->\n"
           "| l1_23_softmax | correct | reference | 15.91 | 1.000 | 8.52 | 1.87 |\n"
           "| l1_gone | correct | reference | 1 | 1 | 1 | 1 |\n\n"
           "87 tasks evaluated in 187.6 s\n")
    new = ("| task | verdict | candidate | kevald reference ms (default) | self speedup | x | y |\n"
           "|---|---|---|---|---|---|---|\n"
           "| l1_23_softmax | correct | reference | 6.2 | 1.000 | 8.52 | 0.73 |\n\n"
           "1 tasks evaluated in 3.0 s (1 correct, 0 skipped)\n")
    with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
        f.write(new)
    try:
        text = gen_table.merge_timing(old, [f.name], order)
        fresh = gen_table.merge_timing(old, [f.name], order, replace_old=True)
    finally:
        os.unlink(f.name)
    rows = gen_table.parse_rows(text, 7)
    expect([r[0] for r in rows] == ["l1_23_softmax", "l1_89_cumsum", "l2_62_x"],
           "merged rows, unknown task dropped, skipped last: %r" % rows)
    expect(rows[0][3] == "6.2" and rows[1][3] == "10.81", "the new row replaces, the old stays")
    expect("<!-- reference is a cuBLAS step -->" in text, "a skipped row keeps its reason")
    expect("1 tasks evaluated" in text and "87 tasks evaluated" not in text and
           "Rows: 3 (2 correct, 1 skipped)." in text, "summary lines: %s" % text)
    expect([r[0] for r in gen_table.parse_rows(fresh, 7)] == ["l1_23_softmax"], "--replace: new rows only")


def test_slower_note_rule():
    expect(check_tasks.check_slower_note({}) == [], "no note: fine")
    expect(check_tasks.check_slower_note({"reference_slower_note": "direct convolution, no cuDNN"})
           == [], "a reason: fine")
    expect(check_tasks.check_slower_note({"reference_slower_note": "slow"}) != [], "too short")
    expect(check_tasks.check_slower_note({"reference_slower_note": 3}) != [], "not a string")


def main():
    for fn in (test_peaks, test_roofline, test_baselines, test_ratio_verdict, test_rows_and_count,
               test_timing_merge, test_slower_note_rule):
        fn()
    print("%d failures" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
