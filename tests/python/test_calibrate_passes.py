"""python -m shardscope.calibrate --passes (issue 40): each point's time is its median over the passes, matched by
what names the point (not its position), and its rate is the work it measured over that median; a quick run on the
CPU in 2 passes writes a profile that says so."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import helpers
from shardscope import calibrate


def gemm_point(m, seconds):
    return {"layout": "forward", "m": m, "n": 64, "k": 64, "batch": 1, "seconds": seconds,
            "flop_per_s": 2 * m * 64 * 64 / seconds}


class MedianOfPasses(unittest.TestCase):
    def test_each_point_is_its_median_and_its_rate_follows(self):
        passes = [{"gemm": {"float32": [gemm_point(32, 3.0), gemm_point(128, 10.0)]}, "overheads": {"launch_s": 5.0, "note": "n"}},
                  # the second pass lists its points in another order: they are matched by their shape
                  {"gemm": {"float32": [gemm_point(128, 30.0), gemm_point(32, 1.0)]}, "overheads": {"launch_s": 7.0, "note": "n"}},
                  {"gemm": {"float32": [gemm_point(32, 2.0), gemm_point(128, 20.0)]}, "overheads": {"launch_s": 6.0, "note": "n"}}]
        merged = calibrate.median_of_passes(passes)
        small, large = merged["gemm"]["float32"]
        self.assertEqual((small["m"], small["seconds"]), (32, 2.0))   # median of 3, 1, 2
        self.assertEqual((large["m"], large["seconds"]), (128, 20.0))  # median of 10, 30, 20
        self.assertAlmostEqual(small["flop_per_s"], 2 * 32 * 64 * 64 / 2.0, delta=1e-9 * small["flop_per_s"])
        self.assertAlmostEqual(large["flop_per_s"], 2 * 128 * 64 * 64 / 20.0, delta=1e-9 * large["flop_per_s"])
        self.assertEqual(merged["overheads"], {"launch_s": 6.0, "note": "n"})

    def test_one_pass_is_itself(self):
        one = {"elementwise": {"add": {"float32": [{"elements": 4, "bytes": 48, "seconds": 2.0, "bytes_per_s": 24.0}]}}}
        self.assertEqual(calibrate.median_of_passes([one]), one)


class QuickRunInPasses(unittest.TestCase):
    def test_two_passes_on_the_cpu(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "p.json")
            run = subprocess.run([sys.executable, "-m", "shardscope.calibrate", "--device", "cpu", "--quick",
                                  "--passes", "2", "--no-collectives", "--out", out],
                                 env=helpers.env(), capture_output=True, text=True, timeout=300)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertIn("pass 2 of 2", run.stderr)
            profile = json.load(open(out))
        self.assertEqual(profile["settings"]["passes"], 2)
        for point in profile["gemm"]["float32"]:
            work = 2 * point["m"] * point["n"] * point["k"] * point["batch"]
            self.assertAlmostEqual(point["flop_per_s"], work / point["seconds"], delta=1e-9 * point["flop_per_s"])

    def test_passes_out_of_range_is_refused(self):
        run = subprocess.run([sys.executable, "-m", "shardscope.calibrate", "--passes", "0", "--out", "/tmp/unused.json"],
                             env=helpers.env(), capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 2)
        self.assertIn("--passes: 0 is not between 1 and 50", run.stderr)


if __name__ == "__main__":
    unittest.main()
