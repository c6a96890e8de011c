"""A plain PyTorch training script, as a user would write it: an MLP (Linear, ReLU, Linear), MSE loss, Adam.
Recorded unmodified by the recorder's tests. argv: batch d0 d1 d2 steps [raise]."""
import sys

import torch

batch, d0, d1, d2, steps = (int(a) for a in sys.argv[1:6])
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(d0, d1), torch.nn.ReLU(), torch.nn.Linear(d1, d2))
optimizer = torch.optim.Adam(model.parameters())
for step in range(steps):
    x = torch.randn(batch, d0)
    y = torch.randn(batch, d2)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
if sys.argv[6:] == ["raise"]:
    raise RuntimeError("the script failed after its steps")
if sys.argv[6:] == ["sleep"]:
    import time
    print("steps done", flush=True)
    time.sleep(60)
print(f"loss {loss.item():.4f}")
