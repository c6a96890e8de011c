"""The recorder on CUDA (skipped without a GPU): the MLP script on the GPU prints torch.cuda.memory_allocated() at
ShardScope's phase points; the recorded phases must carry exactly those figures, their categories must add up to
them, and the categories whose tensors are known must hold what the caching allocator gives each tensor: its bytes
rounded up to the allocator's 512-byte blocks (the small pool splits blocks down to that size)."""
import os
import tempfile
import unittest

import helpers
from shardscope import trace_reader as tr


def block(n):
    return max(512, (n + 511) // 512 * 512)


def cuda_available():
    try:
        import torch
        return torch.cuda.is_available()
    except Exception:
        return False


@unittest.skipUnless(cuda_available(), "no CUDA device: the CUDA recording is checked on a GPU machine")
class CudaRecording(unittest.TestCase):
    def test_mlp_phases_equal_memory_allocated(self):
        b, d0, d1, d2 = 16, 64, 96, 48
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "cuda.sstrace")
            result = helpers.record(out, "mlp_train.py", b, d0, d1, d2, 2, device="cuda")
            self.assertEqual(result.returncode, 0, result.stderr)
            printed = {}
            for line in result.stdout.splitlines():
                if line.startswith("memory "):
                    _, phase, step, value = line.split()
                    printed[(phase, int(step))] = int(value)
            trace = tr.read_trace(out)
        self.assertTrue(trace.complete)
        self.assertTrue(trace.header["source"].endswith(" cuda"))
        self.assertGreater(trace.header["devices"][0]["capacity"], 0)
        recorded = helpers.phases(trace, 0)
        params = sum(block(n) for n in (d0 * d1 * 4, d1 * 4, d1 * d2 * 4, d2 * 4))
        activations = sum(block(n) for n in (b * d0 * 4, b * d1 * 4, b * d2 * 4, b * d2 * 4))
        for name, step, cats, allocated in recorded:
            self.assertEqual(sum(cats.values()), allocated, f"{name} {step}: categories add up to the total")
            if (name, step) in printed:
                self.assertEqual(allocated, printed[(name, step)], f"{name} {step}: memory_allocated")
            self.assertEqual(cats.get("parameters"), params, f"{name} {step}")
            if name in ("before_step", "after_step"):
                self.assertEqual(cats.get("gradients"), params, f"{name} {step}")
            if name == "forward":
                self.assertEqual(cats.get("activations"), activations, f"{name} {step}")
            if name == "after_step" or (name != "model_created" and step == 2):
                self.assertEqual(cats.get("optimizer_state"), 2 * params, f"{name} {step}")
        self.assertEqual(sorted(printed), sorted((n, s) for n, s, _, _ in recorded if s > 0))


if __name__ == "__main__":
    unittest.main()
