"""A plain PyTorch training script, as a user would write it: an MLP (Linear, ReLU, Linear), MSE loss, Adam.
Recorded unmodified by the recorder's tests. argv: batch d0 d1 d2 steps [raise | sleep]; the device is
$TRAIN_DEVICE (default cpu); on CUDA it prints torch.cuda.memory_allocated() at ShardScope's phase points
("memory forward 1 N"), as a user checking the recorder would."""
import os
import sys

import torch

batch, d0, d1, d2, steps = (int(a) for a in sys.argv[1:6])
device = torch.device(os.environ.get("TRAIN_DEVICE", "cpu"))


def report(phase, step):
    if device.type == "cuda":
        print(f"memory {phase} {step} {torch.cuda.memory_allocated(device)}", flush=True)


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(d0, d1), torch.nn.ReLU(), torch.nn.Linear(d1, d2)).to(device)
optimizer = torch.optim.Adam(model.parameters())
for step in range(1, steps + 1):
    x = torch.randn(batch, d0, device=device)
    y = torch.randn(batch, d2, device=device)
    loss = torch.nn.functional.mse_loss(model(x), y)
    report("forward", step)
    loss.backward()
    report("before_step", step)
    optimizer.step()
    report("after_step", step)
    optimizer.zero_grad(set_to_none=True)
if sys.argv[6:] == ["raise"]:
    raise RuntimeError("the script failed after its steps")
if sys.argv[6:] == ["sleep"]:
    import time
    print("steps done", flush=True)
    time.sleep(60)
print(f"loss {loss.item():.4f}")
