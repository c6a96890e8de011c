"""tests/gpu/profile_summary.py, which a GPU lease runs on PyTorch's profiler traces of held-out steps (issue 40):
against a trace made by hand, whose busy and idle times are counted here from its spans; and against a trace
PyTorch 2.11 wrote on an H200, so that the fields it reads are the ones Kineto writes."""
import gzip
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "gpu"))
import profile_summary  # noqa: E402


def span(cat, name, ts, dur, correlation=None, tid=1):
    e = {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid}
    if correlation is not None:
        e["args"] = {"correlation": correlation}
    return e


def one_step(at, first_correlation):
    """A step marked from `at` to `at` + 100 µs on the host. Host: addmm launches a GEMM at +15, relu launches a
    kernel at +27 and a copy at +28, _foreach_add_ launches the optimizer at +70. GPU: the GEMM runs 30-50, relu
    50-55, the copy 52-58 (overlapping relu), the optimizer 75-85."""
    c = first_correlation
    return [
        span("user_annotation", "shardscope_step", at, 100),
        span("cpu_op", "aten::addmm", at + 10, 10),
        span("cuda_runtime", "cudaLaunchKernel", at + 15, 1, c),
        span("kernel", "gemm", at + 30, 20, c),
        span("cpu_op", "aten::relu", at + 25, 5),
        span("cuda_runtime", "cudaLaunchKernel", at + 27, 1, c + 1),
        span("kernel", "relu", at + 50, 5, c + 1),
        span("cuda_runtime", "cudaMemcpyAsync", at + 28, 1, c + 2),
        span("gpu_memcpy", "Memcpy DtoD", at + 52, 6, c + 2),
        span("cpu_op", "Optimizer.step", at + 55, 40),
        span("cpu_op", "aten::_foreach_add_", at + 60, 20),
        span("cuda_runtime", "cudaLaunchKernel", at + 70, 1, c + 3),
        span("kernel", "adam", at + 75, 10, c + 3),
    ]


class ProfileSummary(unittest.TestCase):
    def test_busy_idle_and_who_launched_after_each_gap(self):
        # two identical steps, and between them a batch made outside any step (launched at 140, run at 150)
        events = one_step(0, 1) + one_step(200, 10) + [span("cuda_runtime", "cudaLaunchKernel", 140, 1, 99),
                                                       span("kernel", "randn", 150, 30, 99)]
        s = profile_summary.summarise(events)
        self.assertEqual(s["steps"], 2)
        self.assertEqual(s["gpu_operations_per_step"], 4)
        # by hand: busy = GEMM 20 + relu and the copy as one 50-58 stretch 8 + optimizer 10 = 38 µs; the window
        # closes at the optimizer's end, 85; idle = 30 before the GEMM (the step's start to its start) + 75 - 58
        # before the optimizer = 47, and busy + idle = 85
        self.assertAlmostEqual(s["busy_s_per_step"], 38e-6, delta=1e-12)
        self.assertAlmostEqual(s["span_s_per_step"], 85e-6, delta=1e-12)
        self.assertAlmostEqual(s["idle_s_per_step"], 47e-6, delta=1e-12)
        idle = {x["cpu_op"]: x["s_per_step"] for x in s["idle_before"]}
        # the innermost op holding each launch: addmm for the GEMM, _foreach_add_ (inside Optimizer.step) for Adam
        self.assertEqual(set(idle), {"aten::addmm", "aten::_foreach_add_"})
        self.assertAlmostEqual(idle["aten::addmm"], 30e-6, delta=1e-12)
        self.assertAlmostEqual(idle["aten::_foreach_add_"], 17e-6, delta=1e-12)
        kernels = {x["name"]: x for x in s["by_kernel"]}
        self.assertNotIn("randn", kernels)  # launched between the steps
        self.assertEqual(kernels["gemm"]["count_per_step"], 1)
        self.assertAlmostEqual(kernels["gemm"]["s_per_step"], 20e-6, delta=1e-12)
        self.assertEqual(s["by_kernel"][0]["name"], "gemm")  # largest first

    def test_a_trace_without_step_marks_has_no_steps(self):
        s = profile_summary.summarise([span("kernel", "gemm", 0, 10, 1)])
        self.assertEqual((s["steps"], s["busy_s_per_step"], s["by_kernel"]), (0, 0.0, []))

    def test_a_real_trace_of_pytorch_2_11_on_an_h200(self):
        # transformers' GPT-2 (2 layers) trained by AdamW (foreach), profiled on the H200; the windows are its two
        # optimizer steps. PyTorch 2.11's _multi_tensor_adam (torch/optim/adam.py, AdamW = decoupled weight decay,
        # capturable off, the step counters on the host) runs 8 foreach ops on the device: _foreach_mul_ (weight
        # decay), _foreach_lerp_, _foreach_mul_, _foreach_addcmul_, _foreach_sqrt, _foreach_div_, _foreach_add_
        # (eps), _foreach_addcdiv_, each one multi_tensor_apply launch for this model's few tensors.
        path = os.path.join(HERE, "..", "data", "h200-torch-2.11", "import", "gpt2-small2l-profiler.json.gz")
        with gzip.open(path) as f:
            events = json.load(f)["traceEvents"]
        s = profile_summary.summarise(events, annotation="Optimizer.step#AdamW.step")
        self.assertEqual(s["steps"], 2)
        self.assertEqual(s["gpu_operations_per_step"], 8)
        self.assertTrue(all("multi_tensor_apply_kernel" in k["name"] for k in s["by_kernel"]))
        adamw = {"aten::_foreach_mul_", "aten::_foreach_lerp_", "aten::_foreach_addcmul_", "aten::_foreach_sqrt",
                 "aten::_foreach_div_", "aten::_foreach_add_", "aten::_foreach_addcdiv_"}
        self.assertLessEqual({x["cpu_op"] for x in s["idle_before"]}, adamw)
        self.assertAlmostEqual(s["busy_s_per_step"] + s["idle_s_per_step"], s["span_s_per_step"], delta=1e-12)

    def test_the_lease_profiles_steps_and_keeps_an_autocast_jobs_trace(self):
        # pytorch_truth.profiled_steps, which a lease runs on CUDA after timing each held-out job, dry-run here on
        # the CPU (no GPU operations: Debian's PyTorch profiles the host alone) so that its first run is not a lease's
        import tempfile
        import torch
        import pytorch_truth
        model = torch.nn.Linear(8, 8)

        def step(batch, mark):
            with mark("forward"):
                loss = model(batch).sum()
            with mark("backward"):
                loss.backward()

        for precision, kept in (("autocast-bf16", True), ("fp32", False)):
            with tempfile.TemporaryDirectory() as d:
                summary = pytorch_truth.profiled_steps(torch, {"name": "job", "precision": precision},
                                                       lambda: torch.randn(4, 8), step, d)
                self.assertEqual(summary["gpu_operations_per_step"], 0)
                self.assertEqual(set(summary["phases"]), {"forward", "backward", "optimizer"})
                self.assertEqual(os.listdir(d), ["job.profiler.json.gz"] if kept else [])


    def test_a_held_out_job_is_timed_and_profiled(self):
        # pytorch_truth.time_one_job, the lease's PyTorch step timing, dry-run on the CPU on the first toy MLP job
        # (autocast-bf16, the kind the lease keeps a trace of): its step times, and the profile beside them
        import tempfile
        import torch
        import pytorch_truth
        spec = dict(next(j for j in pytorch_truth.steptime_jobs(toy=True) if j["kind"] == "mlp"
                         and j["precision"] == "autocast-bf16"), warmup=1, timed=3)
        with tempfile.TemporaryDirectory() as d:
            result = pytorch_truth.time_one_job(torch, spec, trace_dir=d)
            self.assertEqual(os.listdir(d), [spec["name"] + ".profiler.json.gz"])
        self.assertNotIn("profiled_error", result)
        self.assertEqual(len(result["step_times_s"]), 3)
        self.assertEqual(result["median_s"], sorted(result["step_times_s"])[1])
        self.assertEqual(set(result["profiled"]["phases"]), {"forward", "backward", "optimizer"})

if __name__ == "__main__":
    unittest.main()
