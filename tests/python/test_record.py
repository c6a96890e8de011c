"""The recorder on real PyTorch training scripts (CPU, exact tensor bytes): the bytes per category at every phase must
equal what a reader derives by hand from how PyTorch works — which tensors exist, which autograd saves, what the
optimizer keeps — never numbers read off the recorder. Then the C++ reader must accept the files.

Why each figure (an MLP Linear(d0, d1) -> ReLU -> Linear(d1, d2), MSE loss, batch B, float32):
  parameters   the two Linears' weights and biases: (d0*d1 + d1 + d1*d2 + d2) * 4, from their construction on.
  activations  what autograd saves: Linear saves its input (x, then the ReLU's output), ReLU saves its own output
               (threshold_backward(grad, result)), so Linear0's output is freed as soon as the ReLU has run;
               mse_loss saves its input (Linear1's output) and the target y. At `forward` that is
               x + relu(h) + out + y; once backward has freed the graph only what the script still holds is left
               (x and y, its variables), still activations.
  temporaries  the loss: mse_loss's result, whose storage PyTorch leaves input-sized (helpers.mse_result_bytes asks
               PyTorch). Backward's intermediates are freed by the phases.
  gradients    one .grad per parameter, the parameters' size, from the first backward; zero_grad(set_to_none=True)
               frees them before the next forward.
  optimizer state  Adam: exp_avg and exp_avg_sq per parameter (2 x parameters) plus its 'step' tensor per
               parameter (helpers.adam_step_state_bytes), created at the first step. SGD with momentum: one
               momentum buffer per parameter (1 x parameters).
  ddp_buckets  DDP keeps one flat bucket of all gradients (parameters' size; under the 1 MiB first-bucket cap, one
               bucket), allocated in its constructor and rebuilt, same size, at the second iteration.
"""
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import time
import types
import unittest

import helpers
from shardscope import trace_reader as tr
from shardscope import trace_writer as tw

PHASE_ORDER = ["model_created", "wrapped", "forward", "before_step", "after_step", "forward", "before_step",
               "after_step"]


def mlp_expectation(batch, d0, d1, d2, *, ddp=False):
    """Per phase, the bytes per category of the MLP script (2 steps, Adam), derived as the module doc says."""
    params = helpers.linear_bytes(d0, d1) + helpers.linear_bytes(d1, d2)
    x, h, out, y = (batch * d0 * 4, batch * d1 * 4, batch * d2 * 4, batch * d2 * 4)
    loss = helpers.mse_result_bytes(batch, d2)
    adam = 2 * params + 4 * helpers.adam_step_state_bytes()  # 4 parameter tensors
    base = {"parameters": params}
    if ddp:
        base["ddp_buckets"] = params
    expected = [("model_created", 0, {"parameters": params}), ("wrapped", 0, dict(base))]
    for step in (1, 2):
        state = {"optimizer_state": adam} if step > 1 else {}
        expected.append(("forward", step, {**base, **state, "activations": x + h + out + y, "temporaries": loss}))
        expected.append(("before_step", step, {**base, **state, "gradients": params, "activations": x + y,
                                               "temporaries": loss}))
        expected.append(("after_step", step, {**base, "optimizer_state": adam, "gradients": params,
                                              "activations": x + y, "temporaries": loss}))
    return expected


def pipeline_expectation(rank, batch, d0, d1, d2, micro):
    """The 2-stage pipeline script (GPipe order, SGD with momentum), per rank. Each micro-batch's tensors are held
    from its forward to its backward and dropped there (the script's docstring says why)."""
    rows = batch // micro
    if rank == 0:
        params = helpers.linear_bytes(d0, d1)
        x = batch * d0 * 4  # its chunks are views of it, saved by Linear; the script holds x until the next batch
        # every micro-batch's ReLU output (saved by the ReLU, kept as the stage output for its backward); Linear's
        # own output is freed once the ReLU has run. `forward` is where the first backward starts: the first
        # micro-batch's gradient has been received into the buffer the script allocated for it.
        forward_activations, forward_temp = x + micro * rows * d1 * 4, rows * d1 * 4
        after_activations = x
    else:
        params = helpers.linear_bytes(d1, d2)
        stage_inputs = micro * rows * d1 * 4   # received into torch.empty buffers, saved by Linear
        outputs = micro * rows * d2 * 4        # Linear's outputs, saved by mse_loss
        y = batch * d2 * 4                     # the targets' chunks are views of y, saved by mse_loss
        forward_activations = stage_inputs + outputs + y
        forward_temp = micro * helpers.mse_result_bytes(rows, d2)  # the losses
        after_activations = y  # inputs, losses and the inputs' .grad went with each micro-batch's backward
    expected = [("model_created", 0, {"parameters": params}), ("wrapped", 0, {"parameters": params})]
    for step in (1, 2):
        state = {"optimizer_state": params} if step > 1 else {}  # SGD's momentum buffers, from the first step
        expected.append(("forward", step, {"parameters": params, **state, "activations": forward_activations,
                                           "temporaries": forward_temp}))
        expected.append(("before_step", step, {"parameters": params, **state, "gradients": params,
                                               "activations": after_activations}))
        expected.append(("after_step", step, {"parameters": params, "optimizer_state": params, "gradients": params,
                                              "activations": after_activations}))
    return expected


class RecorderTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def assertPhases(self, trace, rank, expected, late_gloo_bytes=0):
        """late_gloo_bytes: gloo's worker thread drops the tensors of a collective when it gets to it, sometimes
        after the next phase: the flat copy DDP's constructor broadcasts the parameters from (parameters' size,
        alive at `wrapped` now and then) and the int32 bucket indices and sizes its second iteration broadcasts
        after rebuilding the buckets. They are communication_buffers, really alive then; up to this many bytes of
        them are allowed at a phase."""
        got = helpers.phases(trace, rank)
        self.assertEqual([(n, s) for n, s, _, _ in got], [(n, s) for n, s, _ in expected])
        for (name, step, cats, allocated), (_, _, want) in zip(got, expected):
            late = cats.get("communication_buffers", 0)
            if 0 < late <= late_gloo_bytes and "communication_buffers" not in want:
                cats = {k: v for k, v in cats.items() if k != "communication_buffers"}
                allocated -= late
            self.assertEqual(cats, want, f"rank {rank} {name} step {step}")
            self.assertEqual(allocated, sum(want.values()), f"rank {rank} {name} step {step}: allocated_after")

    def assertSound(self, trace, ranks, world):
        """Every Free matches a live Alloc of the same tensor id and category; the header describes the run."""
        self.assertTrue(trace.complete, trace.problem)
        h = trace.header
        self.assertTrue(h["source"].startswith("pytorch "), h["source"])
        self.assertTrue(h["source"].endswith(" cpu"), h["source"])
        self.assertEqual(h["accounting_rules"], "exact tensor bytes")
        self.assertIsNone(h["plan"])
        self.assertEqual([d["rank"] for d in h["devices"]], list(range(world)))
        live = {}
        for e in trace.events:
            if e.kind == tw.ALLOC:
                live[(e.rank, e.tensor)] = live.get((e.rank, e.tensor), 0) + e.bytes
            elif e.kind == tw.FREE:
                held = live.get((e.rank, e.tensor), 0)
                self.assertGreaterEqual(held, e.bytes, f"free of tensor {e.tensor} that does not hold it")
                live[(e.rank, e.tensor)] = held - e.bytes
        self.assertEqual({e.rank for e in trace.events if e.kind not in (tw.RUN_END,)}, set(ranks))
        self.assertEqual(trace.events[-1].kind, tw.RUN_END)


class SingleProcess(RecorderTest):
    B, D0, D1, D2 = 6, 32, 48, 24

    def test_mlp_phases_by_category(self):
        out = self.path("mlp.sstrace")
        result = helpers.record(out, "mlp_train.py", self.B, self.D0, self.D1, self.D2, 2)
        self.assertEqual(result.returncode, 0, result.stderr)
        trace = tr.read_trace(out)
        self.assertSound(trace, [0], 1)
        self.assertPhases(trace, 0, mlp_expectation(self.B, self.D0, self.D1, self.D2))
        # The peak is at least every phase's total, and the header says what recorded it.
        peak, _ = tr.peak(trace, 0)
        self.assertGreaterEqual(peak, max(a for _, _, _, a in helpers.phases(trace, 0)))
        self.assertIn("mlp_train.py", trace.header["command_line"])
        self.assertEqual(trace.header["recording"]["world_size"], 1)
        spans = [e.text for e in trace.events if e.kind == tw.OP_BEGIN]
        self.assertIn("forward 0 (Linear)", spans)
        self.assertIn("backward 2 (Linear)", spans)
        self.assertIn("optimizer step (Adam)", spans)
        self.assertEqual(sum(e.kind == tw.OP_BEGIN for e in trace.events),
                         sum(e.kind == tw.OP_END for e in trace.events))

    def test_script_that_raises_leaves_a_complete_trace_saying_why(self):
        out = self.path("raise.sstrace")
        result = helpers.record(out, "mlp_train.py", self.B, self.D0, self.D1, self.D2, 1, "raise")
        self.assertEqual(result.returncode, 1)
        self.assertIn("the script failed after its steps", result.stderr)
        trace = tr.read_trace(out)
        self.assertTrue(trace.complete)
        errors = [e for e in trace.events if e.kind == tw.ERROR]
        self.assertEqual(len(errors), 1)
        self.assertIn("RuntimeError: the script failed after its steps", errors[0].text)
        self.assertIn("mlp_train.py:", errors[0].text)
        self.assertEqual(trace.events[-1].kind, tw.RUN_END)
        self.assertEqual(trace.events[-1].text, errors[0].text)
        self.assertEqual([p[0] for p in helpers.phases(trace, 0)], PHASE_ORDER[:5])

    def test_killed_process_leaves_a_readable_trace(self):
        out = self.path("killed.sstrace")
        command = [sys.executable, "-m", "shardscope.record", "--out", out, "--device", "cpu", "--",
                   os.path.join(helpers.SCRIPTS, "mlp_train.py"), "4", "8", "8", "8", "1", "sleep"]
        proc = subprocess.Popen(command, env=helpers.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            self.assertEqual(proc.stdout.readline().strip(), "steps done")
            time.sleep(0.3)  # the writer flushes at phases and every 100 ms
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
        trace = tr.read_trace(out)
        self.assertFalse(trace.complete)
        self.assertEqual([p[0] for p in helpers.phases(trace, 0)], PHASE_ORDER[:5])
        if helpers.cli():
            self.assertEqual(helpers.run_cli("trace", "check", out).returncode, 1)  # cut short
            info = helpers.cli_json("trace", "info", out, "--json")
            self.assertFalse(info["complete"])
            self.assertEqual(info["events"], len(trace.events))

    def test_context_manager_in_process(self):
        import torch
        import shardscope
        original_backward = torch.autograd.backward
        original_register = torch.nn.Module.register_parameter
        out = self.path("notebook.sstrace")
        b, d0, d1, d2 = 5, 12, 20, 8
        with shardscope.record(out, device="cpu", python_lines=False):
            torch.manual_seed(0)
            model = torch.nn.Sequential(torch.nn.Linear(d0, d1), torch.nn.ReLU(), torch.nn.Linear(d1, d2))
            optimizer = torch.optim.Adam(model.parameters())
            for _ in range(2):
                x, y = torch.randn(b, d0), torch.randn(b, d2)
                loss = torch.nn.functional.mse_loss(model(x), y)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
            # Optimizer state saved mid-recording pickles as plain dicts: a checkpoint must not need shardscope.
            blob = pickle.dumps(optimizer.state_dict())
            self.assertNotIn(b"shardscope", blob)
        self.assertIs(torch.autograd.backward, original_backward)
        self.assertIs(torch.nn.Module.register_parameter, original_register)
        self.assertNotIn("step", optimizer.__dict__)
        trace = tr.read_trace(out)
        self.assertSound(trace, [0], 1)
        self.assertPhases(trace, 0, mlp_expectation(b, d0, d1, d2))

    def test_python_numbers_saved_by_autograd(self):
        """x * 2 saves the 2 as a wrapped-number tensor, which the dispatcher hands Python code as a number: with
        the recorder's saved-tensor hooks set, autograd detaches it at the save and at the unpack. Training must be
        unchanged: same gradient values and dtypes."""
        import torch
        import shardscope
        w = torch.ones(5, requires_grad=True)
        h = torch.ones(3, dtype=torch.float16, requires_grad=True)
        with shardscope.record(self.path("numbers.sstrace"), device="cpu"):
            ((w * 2).sum() * 0.5 + (w / 4).sum()).backward()
            (h * 3.0).sum().backward()
        self.assertTrue(torch.equal(w.grad, torch.full((5,), 1.25)))
        self.assertEqual(w.grad.dtype, torch.float32)
        self.assertTrue(torch.equal(h.grad, torch.full((3,), 3.0, dtype=torch.float16)))
        self.assertEqual(h.grad.dtype, torch.float16)
        self.assertTrue(tr.read_trace(self.path("numbers.sstrace")).complete)

    def test_with_block_that_raises(self):
        import torch
        import shardscope
        out = self.path("raises.sstrace")
        with self.assertRaises(ZeroDivisionError):
            with shardscope.record(out, device="cpu"):
                torch.zeros(3) + 1
                1 / 0
        trace = tr.read_trace(out)
        self.assertTrue(trace.complete)
        self.assertIn("ZeroDivisionError", trace.events[-1].text)
        self.assertIsNone(shardscope.record.active())


class MultiProcess(RecorderTest):
    def test_ddp_over_gloo_two_ranks(self):
        b, d0, d1, d2 = 6, 16, 40, 12
        out = self.path("ddp.sstrace")
        result = helpers.record(out, "ddp_train.py", helpers.free_port(), b, d0, d1, d2, 2)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertFalse(os.path.exists(out), "the launching process records nothing")
        expected = mlp_expectation(b, d0, d1, d2, ddp=True)
        late = helpers.linear_bytes(d0, d1) + helpers.linear_bytes(d1, d2)  # the broadcast flat copy
        for rank in (0, 1):
            trace = tr.read_trace(self.path(f"ddp.rank{rank}.sstrace"))
            self.assertSound(trace, [rank], 2)
            self.assertEqual(trace.header["recording"]["rank"], rank)
            self.assertPhases(trace, rank, expected, late_gloo_bytes=late)
            spans = [e.text for e in trace.events if e.kind == tw.OP_BEGIN and e.stream == tw.COMMUNICATION]
            self.assertEqual(sum(s.startswith("all_reduce DDP bucket 0") for s in spans), 2, spans)
            self.assertTrue(any(s.startswith("broadcast_coalesced") for s in spans), spans)

    def test_ranks_from_the_torchrun_environment(self):
        """What torchrun gives each worker (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR / PORT), set by hand: each
        process records its own OUT.rankR.sstrace."""
        b, d0, d1, d2 = 4, 12, 20, 8
        out = self.path("run.sstrace")
        port = helpers.free_port()
        procs = []
        for rank in (0, 1):
            e = helpers.env()
            e.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                     MASTER_PORT=str(port))
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "shardscope.record", "--out", out, "--device", "cpu", "--",
                 os.path.join(helpers.SCRIPTS, "ddp_torchrun.py"), str(b), str(d0), str(d1), str(d2), "2"],
                env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        for p in procs:
            _, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, err)
        for rank in (0, 1):
            trace = tr.read_trace(self.path(f"run.rank{rank}.sstrace"))
            self.assertSound(trace, [rank], 2)
            late = helpers.linear_bytes(d0, d1) + helpers.linear_bytes(d1, d2)  # the broadcast flat copy
            self.assertPhases(trace, rank, mlp_expectation(b, d0, d1, d2, ddp=True), late_gloo_bytes=late)

    def test_hand_written_pipeline_two_stages(self):
        b, d0, d1, d2, micro = 8, 20, 36, 12, 2
        out = self.path("pipe.sstrace")
        result = helpers.record(out, "pipeline_train.py", helpers.free_port(), b, d0, d1, d2, micro, 2)
        self.assertEqual(result.returncode, 0, result.stderr)
        for rank in (0, 1):
            trace = tr.read_trace(self.path(f"pipe.rank{rank}.sstrace"))
            self.assertSound(trace, [rank], 2)
            self.assertPhases(trace, rank, pipeline_expectation(rank, b, d0, d1, d2, micro))
            spans = [e.text for e in trace.events if e.kind == tw.OP_BEGIN and e.stream == tw.COMMUNICATION]
            self.assertEqual(sum(s.startswith("send") for s in spans), 2 * micro)
            self.assertEqual(sum(s.startswith("recv") for s in spans), 2 * micro)


class GpuOfASpawnedRank(unittest.TestCase):
    """On CUDA a spawned rank i (or LOCAL_RANK i) records GPU i, or i mod the GPU count when the ranks outnumber the
    GPUs (two gloo ranks sharing one GPU, as the CUDA DDP test runs them): GPU i would not exist."""

    def test_ranks_wrap_onto_fewer_gpus(self):
        from shardscope import record

        def machine(gpus):
            return types.SimpleNamespace(cuda=types.SimpleNamespace(device_count=lambda: gpus))
        self.assertEqual([record.gpu_of(i, machine(1)) for i in range(3)], [0, 0, 0])
        self.assertEqual([record.gpu_of(i, machine(2)) for i in range(4)], [0, 1, 0, 1])
        self.assertEqual([record.gpu_of(i, machine(8)) for i in range(3)], [0, 1, 2])
        self.assertEqual([record.gpu_of(i, machine(0)) for i in range(2)], [0, 1])  # no GPU: unchanged


class CppReaderAcceptsRecordings(RecorderTest):
    def test_trace_check_info_and_compare(self):
        helpers.require_cli(self)
        out = self.path("mlp.sstrace")
        result = helpers.record(out, "mlp_train.py", 4, 16, 24, 8, 2)
        self.assertEqual(result.returncode, 0, result.stderr)
        check = helpers.run_cli("trace", "check", out)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        trace = tr.read_trace(out)
        info = helpers.cli_json("trace", "info", out, "--json")
        self.assertTrue(info["complete"])
        self.assertEqual(info["events"], len(trace.events))
        self.assertEqual(info["ranks"], 1)
        self.assertTrue(info["header"]["source"].startswith("pytorch "))
        self.assertIsNone(info["header"]["plan"])
        # compare reads the peak the recorder's events give (allocated_after and categories at it).
        peak, by_category = tr.peak(trace, 0)
        compared = helpers.cli_json("compare", out, out, "--json")
        rank = compared["ranks"][0]
        self.assertEqual(rank["peak_bytes"]["a"], peak)
        self.assertEqual(rank["a"], by_category)
        self.assertEqual(rank["peak_bytes"]["difference"], 0)
        # Step times from the recorded spans (run/planless_step_timing.h), counted here from the events: a step's
        # window from its first span's begin to its last span's end; gemm the Linear modules' spans, optimizer the
        # optimizer step's, elementwise the other leaf modules' (each compute span from where the earlier ones end).
        begins, windows, kinds = {}, {}, {}
        for e in trace.events:
            if e.kind == tw.OP_BEGIN:
                begins[e.op] = (e.t_ns, e.step, e.text)
            elif e.kind == tw.OP_END and e.op in begins:
                t0, step, text = begins.pop(e.op)
                lo, hi = windows.get(step, (t0, e.t_ns))
                windows[step] = (min(lo, t0), max(hi, e.t_ns))
                kind = "optimizer" if text.startswith("optimizer step") else "gemm" if text.endswith("(Linear)") else "elementwise"
                kinds.setdefault(step, []).append((t0, e.t_ns, kind))
        self.assertEqual(info["step_times_ns"], [windows[s][1] - windows[s][0] for s in (1, 2)])
        expected = {"gemm": 0, "elementwise": 0, "optimizer": 0, "communication": 0}
        until = None
        for t0, t1, kind in sorted(kinds[2]):
            start = t0 if until is None else max(t0, until)
            if t1 > start:
                expected[kind] += t1 - start
                until = t1
        expected["idle"] = info["median_step_ns"] - sum(expected.values())
        self.assertGreater(expected["gemm"], 0)
        self.assertEqual(info["median_step_by_kind_ns"], expected)


if __name__ == "__main__":
    unittest.main()
