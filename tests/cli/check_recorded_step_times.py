#!/usr/bin/env python3
"""A recorded run's step times (run/planless_step_timing.h) held against the times the recorded script measured itself.

The trace: a Hugging Face GPT-2 (2 layers) trained 12 steps on an H200 under `python3 -m shardscope.record`
(tests/data/h200-torch-2.11/recorded/gpt2-2l-recorded.sstrace); the script printed its own step times, measured with
time.perf_counter between a torch.cuda.synchronize() before the forward and one after optimizer.step()
(gpt2-2l-recorded.log, the line `step_times_ms ...`).

What must hold, from the two definitions: our step window runs from the step's first span (the first leaf module's
forward) to its last (the optimizer step, its end taken after a CUDA event synchronised), all inside the script's
timed interval, so each step of ours is at most the script's, and short of it only by the script's own code before
its first leaf module and after the optimizer step: well under a tenth of a step here (the script does nothing else).
A step counted in the wrong window (step 0 folded in, two steps merged, the batch's set-up counted) breaks one or the
other. The kinds add up to the step; the recorder's spans of this trace name no module class (it was recorded
before they did), so no time is gemm, and this is a single device: no communication.
Usage: check_recorded_step_times.py CLI DATA_DIR"""
import json
import subprocess
import sys

cli, data = sys.argv[1], sys.argv[2]
trace = f"{data}/gpt2-2l-recorded.sstrace"
done = subprocess.run([cli, "trace", "info", "--json", trace], capture_output=True, text=True)
assert done.returncode == 0, done.stderr
info = json.loads(done.stdout)
ours_ms = [t / 1e6 for t in info["step_times_ns"]]

theirs_ms = None
for line in open(f"{data}/gpt2-2l-recorded.log"):
    if line.startswith("step_times_ms "):
        theirs_ms = [float(x) for x in line.split()[1:]]
assert theirs_ms is not None, "the log has no step_times_ms line"
assert len(ours_ms) == len(theirs_ms) == 12, (ours_ms, theirs_ms)

for step, (ours, theirs) in enumerate(zip(ours_ms, theirs_ms), start=1):
    # The log prints two decimals: allow its rounding.
    assert ours <= theirs + 0.005, f"step {step}: ours {ours:.3f} ms exceeds the script's own {theirs} ms"
    assert theirs - ours < 0.1 * theirs, f"step {step}: ours {ours:.3f} ms is short of the script's {theirs} ms"

kinds = info["median_step_by_kind_ns"]
assert sum(kinds.values()) == info["median_step_ns"], info
assert kinds["gemm"] == 0 and kinds["communication"] == 0, kinds
assert kinds["optimizer"] > 0 and kinds["elementwise"] > 0, kinds
print("recorded step times within the script's own:", " ".join(f"{o:.2f}/{t:.2f}" for o, t in zip(ours_ms, theirs_ms)))
