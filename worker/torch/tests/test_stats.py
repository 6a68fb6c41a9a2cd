"""torchworker-stats: the timing statistics and stopping rule (kevald_torch/stats.py)
give what worker/gpu/timing.c gives (the same cases as worker/gpu/test-timing.c)."""
import math
import unittest

import helpers
from kevald_torch import stats


assert helpers.SRC  # sys.path set up by helpers


class P:
    budget_ms, target_precision, min_trials, max_trials = 1000.0, 0.01, 6, 100


class Stats(unittest.TestCase):
    def test_ci_ranks_as_timing_c(self):
        self.assertEqual(stats.ci_ranks(100), (39, 60))
        self.assertEqual(stats.ci_ranks(10), (0, 9))
        self.assertEqual(stats.ci_ranks(1), (0, 0))

    def test_summarize(self):
        v = [1.0 + i * 0.001 for i in range(100)]
        s = stats.summarize(list(reversed(v)))
        self.assertAlmostEqual(s["ci_low"], v[39])
        self.assertAlmostEqual(s["ci_high"], v[60])
        self.assertAlmostEqual(s["median"], (v[49] + v[50]) / 2)
        self.assertAlmostEqual(s["precision"], (v[60] - v[39]) / 2 / s["median"])
        self.assertEqual((s["min"], s["max"], s["n"]), (v[0], v[-1], 100))
        self.assertAlmostEqual(s["stdev"], math.sqrt(sum((x - s["mean"]) ** 2 for x in v) / 99))
        self.assertEqual(stats.summarize([2.0, 1.0])["precision"], math.inf)
        self.assertEqual(stats.summarize([3.0])["median"], 3.0)
        with self.assertRaises(ValueError):
            stats.summarize([])

    def test_should_stop(self):
        self.assertEqual(stats.should_stop(P, 100, 0, 1, 1, 1, 1), "max_trials")
        self.assertEqual(stats.should_stop(P, 3, 0, 1, 1, 1.0, 0.05), "too_slow")
        self.assertIsNone(stats.should_stop(P, 2, 0, 1, 1, 1.0, 0.05))   # 3 pairs needed
        self.assertEqual(stats.should_stop(P, 6, 0, 0.005, 0.009, 1, 1), "precision")
        self.assertIsNone(stats.should_stop(P, 5, 0, 0.005, 0.009, 1, 1))  # min_trials first
        self.assertIsNone(stats.should_stop(P, 6, 0, 0.005, 0.02, 1, 1))   # both sides must be precise
        self.assertEqual(stats.should_stop(P, 3, 1000, 1, 1, 1, 1), "budget")
        self.assertIsNone(stats.should_stop(P, 2, 5000, 1, 1, 1, 1))
        self.assertIsNone(stats.should_stop(P, 10, 999, 0.5, 0.5, 1, 1))

    def test_adaptive_trials_stop_on_precision(self):
        # a steady candidate: the loop as judge_timing runs it stops at min_trials on precision
        cs, rs, stop, n = [], [], None, 0
        while stop is None:
            cs.append(1.0 + (n % 3) * 1e-4)
            rs.append(2.0 + (n % 5) * 1e-4)
            n += 1
            c, r = stats.summarize(cs), stats.summarize(rs)
            stop = stats.should_stop(P, n, 0, c["precision"], r["precision"], c["median"], r["median"])
        self.assertEqual((stop, n), ("precision", 6))
        # a noisy one runs to the budget instead
        cs, rs, stop, n = [], [], None, 0
        while stop is None:
            cs.append(1.0 + (n % 2))
            rs.append(1.0)
            n += 1
            c, r = stats.summarize(cs), stats.summarize(rs)
            stop = stats.should_stop(P, n, n * 50.0, c["precision"], r["precision"], c["median"], r["median"])
        self.assertEqual((stop, n), ("budget", 20))

    def test_geomean(self):
        self.assertAlmostEqual(stats.geomean([2.0, 8.0]), 4.0)
        self.assertEqual(stats.geomean([2.0, 0.0]), 0.0)
        self.assertEqual(stats.geomean([]), 0.0)

    def test_pick_clock(self):
        ref_s, ref_d = [1.0] * 9, [1.01] * 9
        # the candidate's device time exceeds its stream time like the reference's: stream clock
        self.assertEqual(stats.pick_clock([0.5] * 9, [0.51] * 9, ref_s, ref_d), "stream")
        # its forward returned at once but the device was busy far longer: other streams
        self.assertEqual(stats.pick_clock([0.01] * 9, [0.9] * 9, ref_s, ref_d), "device")
        # a gap under the floor is noise
        self.assertEqual(stats.pick_clock([0.5] * 9, [0.525] * 9, ref_s, ref_d), "stream")


if __name__ == "__main__":
    unittest.main()
